package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// watchMain measures spool watch on the work queue's dataset (10,000 tasks,
// 100,000 events): startup recovery (spool watch --once, with expired
// claims to release, then with nothing to do), the latency from an event
// another process appends to the watcher acting on it, and an idle
// watcher's CPU and memory:
//
//	spoolbench watch -spool BIN [-events N] [-runs N] [-idle D] [-dir DIR]
func watchMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench watch", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to measure (required)")
	events := fs.Int("events", 100_000, "events in the log")
	runs := fs.Int("runs", 20, "runs of each measurement")
	idle := fs.Duration("idle", time.Minute, "how long the idle watcher is watched")
	keep := fs.String("dir", "", "build the repository here (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	return benchWatch(*bin, *events, *runs, *idle, *keep)
}

func benchWatch(bin string, nEvents, runs int, idle time.Duration, dir string) error {
	bin, dir, env, cleanup, err := queueDataset(bin, 10_000, nEvents, dir)
	if err != nil {
		return err
	}
	defer cleanup()

	// Claims made two hours ago, whose one-hour leases have run out.
	past := append(slices.Clone(env), "SPOOL_NOW="+time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339))
	for range 10 {
		if _, err := run(dir, past, bin, "next"); err != nil {
			return err
		}
	}
	start := time.Now()
	out, err := run(dir, env, bin, "--json", "watch", "--once")
	if err != nil {
		return err
	}
	fmt.Printf("spool watch --once, releasing 10 expired claims: %6.1f ms (%d line(s) of output)\n", ms(time.Since(start)), strings.Count(out, "\n"))
	t, err := repeat(1, runs, func() *exec.Cmd {
		cmd := exec.Command(bin, "watch", "--once")
		cmd.Dir, cmd.Env = dir, env
		return cmd
	})
	if err != nil {
		return err
	}
	fmt.Printf("spool watch --once, nothing to do: wall median %6.1f ms (min %6.1f, max %6.1f), peak RSS %d KiB (%d runs)\n",
		ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)-1]), t.maxRSS, runs)

	w := exec.Command(bin, "--json", "watch")
	w.Dir, w.Env = dir, env
	stdout, err := w.StdoutPipe()
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { w.Process.Signal(syscall.SIGTERM); w.Wait() }()
	lines := make(chan time.Time, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "expired task claim") {
				lines <- time.Now()
			}
		}
		close(lines)
	}()
	time.Sleep(time.Second) // past its startup

	// Latency: another process appends a claim whose lease has run out; the
	// watcher releases it. Timed from that process's exit (its append is on
	// disk) to the watcher's line.
	var lat []time.Duration
	for range runs {
		if _, err := run(dir, past, bin, "next"); err != nil {
			return err
		}
		appended := time.Now()
		select {
		case at, ok := <-lines:
			if !ok {
				return fmt.Errorf("spool watch exited")
			}
			lat = append(lat, max(at.Sub(appended), 0))
		case <-time.After(10 * time.Second):
			return fmt.Errorf("spool watch did not release an expired claim within 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(lat)
	fmt.Printf("event appended by another process → watcher acted: median %6.1f ms (min %6.1f, max %6.1f, %d runs)\n",
		ms(lat[len(lat)/2]), ms(lat[0]), ms(lat[len(lat)-1]), len(lat))

	// Idle: nothing happens; the watcher's CPU time and memory.
	time.Sleep(2 * time.Second)
	cpu0, err := cpuTime(w.Process.Pid)
	if err != nil {
		return err
	}
	time.Sleep(idle)
	cpu1, err := cpuTime(w.Process.Pid)
	if err != nil {
		return err
	}
	rss, hwm := memory(w.Process.Pid)
	fmt.Printf("idle spool watch over %s: CPU %s (%.3f%% of a core), VmRSS %d KiB, VmHWM %d KiB\n",
		idle, cpu1-cpu0, 100*float64(cpu1-cpu0)/float64(idle), rss, hwm)
	return nil
}

// cpuTime is a process's user+system time, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's name (in parentheses): utime and stime
	// are the 12th and 13th of them, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// memory is a process's VmRSS and VmHWM in KiB, from /proc/PID/status.
func memory(pid int) (rss, hwm int64) {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				rss = n
			} else {
				hwm = n
			}
		}
	}
	return rss, hwm
}
