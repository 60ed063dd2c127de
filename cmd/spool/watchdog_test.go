package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// watchdog ends a hung test binary 20 s before go test's own timeout
// would, printing its goroutines and then, last so a CI log's tail shows
// them, the processes still running under it with their directories: a
// testscript's directory names the script.
func watchdog(start time.Time) {
	for range time.Tick(5 * time.Second) {
		f := flag.Lookup("test.timeout")
		if f == nil {
			return
		}
		limit, err := time.ParseDuration(f.Value.String())
		if err != nil || limit <= 0 {
			return
		}
		if time.Since(start) < limit-20*time.Second {
			continue
		}
		buf := make([]byte, 16<<20)
		os.Stderr.Write(buf[:runtime.Stack(buf, true)])
		fmt.Fprintf(os.Stderr, "\nwatchdog: the tests ran %s; processes still running under this one:\n", time.Since(start).Round(time.Second))
		for _, p := range descendants(os.Getpid()) {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		os.Exit(1)
	}
}

// descendants describes every process below pid: pid, directory, command line.
func descendants(root int) []string {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 {
				parent[pid], _ = strconv.Atoi(f[1])
			}
		}
	}
	var out []string
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == root {
				dir, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				out = append(out, fmt.Sprintf("%d in %s: %s", pid, dir, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
				break
			}
		}
	}
	return out
}
