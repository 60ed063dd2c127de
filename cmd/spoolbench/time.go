package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// timeMain runs a command repeatedly and prints its whole-process wall time
// (median, min, p90), its CPU time (median) and peak RSS:
//
//	spoolbench time [-n N] [-warmup N] -- command [args...]
func timeMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench time", flag.ExitOnError)
	n := fs.Int("n", 20, "number of timed runs")
	warmup := fs.Int("warmup", 2, "untimed runs first")
	fs.Parse(args)
	argv := fs.Args()
	if len(argv) == 0 || *n < 1 {
		return fmt.Errorf("%w: spoolbench time [-n N] [-warmup N] -- command [args...]", errUsage)
	}
	t, err := repeat(*warmup, *n, func() *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		return cmd
	})
	if err != nil {
		return err
	}
	// CPU time (user+system) is the work itself when other processes share
	// the machine; it leaves out what a process has a daemon do.
	fmt.Printf("%-50s median %7.2f ms  min %7.2f ms  p90 %7.2f ms  cpu median %7.2f ms  peak RSS %5.1f MiB  (n=%d)\n",
		strings.Join(argv, " "), ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)*9/10]), ms(t.cpu[len(t.cpu)/2]),
		float64(t.maxRSS)/1024, len(t.wall))
	return nil
}
