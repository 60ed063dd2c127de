package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// timeMain runs a command repeatedly and prints its whole-process wall time
// (median, min, p90; p99 and the slowest from 100 runs on), its CPU time
// (median) and peak RSS:
//
//	spoolbench time [-n N] [-warmup N] [-each FILE] [-vs BIN] -- command [args...]
//
// With -each, every run replaces {} in the arguments with the next line of
// FILE, round again at its end: each run a different task, say. With -vs,
// BIN runs the same arguments in place of the command's own binary, the
// two alternating run by run, each first in turn, and each gets its line:
// an A/B that a machine's drift from one batch to the next leaves fair.
func timeMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench time", flag.ExitOnError)
	n := fs.Int("n", 20, "number of timed runs")
	warmup := fs.Int("warmup", 2, "untimed runs first")
	each := fs.String("each", "", "a file whose lines replace {} in the arguments, a line a run")
	vs := fs.String("vs", "", "another binary to run the same arguments, alternating with the command's")
	fs.Parse(args)
	argv := fs.Args()
	if len(argv) == 0 || *n < 1 {
		return fmt.Errorf("%w: spoolbench time [-n N] [-warmup N] [-each FILE] [-vs BIN] -- command [args...]", errUsage)
	}
	var lines []string
	if *each != "" {
		b, err := os.ReadFile(*each)
		if err != nil {
			return err
		}
		if lines = strings.Fields(string(b)); len(lines) == 0 {
			return fmt.Errorf("%w: %s has no lines", errUsage, *each)
		}
	}
	bins := []string{argv[0]}
	if *vs != "" {
		bins = append(bins, *vs)
	}
	all := make([]timings, len(bins))
	for i := range *warmup + *n {
		for j := range bins {
			b := (i + j) % len(bins)
			t, err := repeat(0, 1, func() *exec.Cmd {
				run := slices.Clone(argv)
				run[0] = bins[b]
				if lines != nil {
					for k := range run {
						run[k] = strings.ReplaceAll(run[k], "{}", lines[i%len(lines)])
					}
				}
				cmd := exec.Command(run[0], run[1:]...)
				cmd.Stderr = os.Stderr
				return cmd
			})
			if err != nil {
				return err
			}
			if i >= *warmup {
				all[b].wall = append(all[b].wall, t.wall...)
				all[b].cpu = append(all[b].cpu, t.cpu...)
				all[b].maxRSS = max(all[b].maxRSS, t.maxRSS)
			}
		}
	}
	for b, t := range all {
		slices.Sort(t.wall)
		slices.Sort(t.cpu)
		tail := ""
		if len(t.wall) >= 100 {
			tail = fmt.Sprintf("  p99 %7.2f ms  slowest %7.2f ms", ms(t.wall[len(t.wall)*99/100]), ms(t.wall[len(t.wall)-1]))
		}
		// CPU time (user+system) is the work itself when other processes share
		// the machine; it leaves out what a process has a daemon do.
		fmt.Printf("%-50s median %7.2f ms  min %7.2f ms  p90 %7.2f ms  cpu median %7.2f ms  peak RSS %5.1f MiB  (n=%d)%s\n",
			strings.Join(append([]string{bins[b]}, argv[1:]...), " "), ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)*9/10]), ms(t.cpu[len(t.cpu)/2]),
			float64(t.maxRSS)/1024, len(t.wall), tail)
	}
	return nil
}
