// Command benchtime runs a command repeatedly and prints its whole-process
// wall time (median, min, p90), for the figures in README.md:
//
//	go run ./internal/benchtime -n 30 -- spool -C /tmp/big status
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 20, "number of timed runs")
	warmup := flag.Int("warmup", 2, "untimed runs first")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchtime [-n N] [-warmup N] -- command [args...]")
		os.Exit(2)
	}
	var times []time.Duration
	for i := 0; i < *warmup+*n; i++ {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "benchtime: %s: %v\n", strings.Join(args, " "), err)
			os.Exit(1)
		}
		if i >= *warmup {
			times = append(times, time.Since(start))
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("%-50s median %6.2f ms  min %6.2f ms  p90 %6.2f ms  (n=%d)\n",
		strings.Join(args, " "), ms(times[len(times)/2]), ms(times[0]), ms(times[len(times)*9/10]), len(times))
}
