// Command spoolbench makes the datasets and takes the whole-process timings
// behind the figures in README.md. It is a tool for spool's developers, not
// part of spool:
//
//	go run ./cmd/spoolbench gen -dir /tmp/big -events 1000000 -writers 2
//	go run ./cmd/spoolbench time -n 30 -- spool -C /tmp/big status
//	go run ./cmd/spoolbench queue -spool BIN [-tasks 10000] [-events 100000] [-runs 21]
//	go run ./cmd/spoolbench merge [-n 30] [-entries 1000] [-train 10]
//	go run ./cmd/spoolbench prd -spool BIN [-features 100] [-prds 10] [-runs 21]
//	go run ./cmd/spoolbench jobs -spool BIN [-n 10000] [-runs 21]
//	go run ./cmd/spoolbench watch -spool BIN [-events 100000] [-runs 20] [-idle 60s]
//	go run ./cmd/spoolbench board -spool BIN [-tasks 10000] [-jobs 1000] [-runs 21] [-appends 50] [-idle 60s]
//	go run ./cmd/spoolbench fleet -spool BIN [-tasks 2000] [-runs 21] [-for 10s] [-clones 1,2,4,8]
//	go run ./cmd/spoolbench fleet -spool BIN -from artifacts/scale/100000 [-runs 11]
//	go run ./cmd/spoolbench sign -spool BIN [-events 10000] [-runs 21]
//	go run ./cmd/spoolbench mcp -spool BIN [-tasks 10000] [-events 100000] [-runs 201] [-idle 30s]
//	go run ./cmd/spoolbench scale -spool BIN [-tasks 1000,10000,100000] [-runs 21] [-slow-runs 3] [-dir DIR]
//
// The justfile's bench-* recipes run it.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// subcommands maps a subcommand's name to its function, which gets the
// arguments after the name.
var subcommands = map[string]func(args []string) error{
	"gen":   genMain,
	"time":  timeMain,
	"queue": queueMain,
	"merge": mergeMain,
	"prd":   prdMain,
	"jobs":  jobsMain,
	"watch": watchMain,
	"board": boardMain,
	"fleet": fleetMain,
	"sign":  signMain,
	"scale": scaleMain,
	"mcp":   mcpMain,
	// scale's and jobs' children
	"scale-gen":    scaleGenMain,
	"scale-encode": scaleEncodeMain,
	"jobs-build":   jobsBuildMain,
}

const usage = `usage: spoolbench gen|time|queue|merge|prd|jobs|watch|board|fleet|sign|scale|mcp [flags]

  gen    make a spool repository with a synthetic log
  time   run a command repeatedly and print its wall time and peak RSS
  queue  time spool's work-queue commands on a large task tracker
  merge  time spool's merge-queue commands and the train's overhead
  prd    time spool's PRD-queue commands on 100 features × 10 PRDs
  jobs   time spool's job-scheduler commands on 10,000 queued jobs, and a worker's latencies
  watch  spool watch on 100,000 events: startup recovery, event-to-action latency, idle CPU and memory
  board  spool serve on 10,000 tasks and 1,000 jobs: page and API times, append-to-stream/page latency, idle CPU and memory
  fleet  claims through a local bare remote: one claim's latency, a sync with nothing new, claims/s with 1, 2, 4, 8 clones;
         with -from DIR, two clones of a large repository: syncs sending and receiving one event, a claim
  sign   spool task add without and with a signing key; verify with and without --signatures over 10,000 signed events
  scale  every work-queue command on realistic logs (CLI-shaped appends) of 1k, 10k and 100k tasks, about 10 events each
  mcp    spool mcp over stdio on 10,000 tasks: ready and next round trips, idle CPU and memory

spoolbench SUBCOMMAND -h lists a subcommand's flags.
`

// errUsage marks an error in how spoolbench was called (exit 2).
var errUsage = errors.New("usage")

func main() {
	if len(os.Args) < 2 || subcommands[os.Args[1]] == nil {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	name := os.Args[1]
	if err := subcommands[name](os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "spoolbench %s: %v\n", name, err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// timings is what repeated runs of one command took.
type timings struct {
	wall, cpu []time.Duration // sorted; cpu is user+system, children waited for included
	maxRSS    int64           // KiB, the largest of any run, warm-up runs included
}

// repeat runs the command newCmd returns warmup times untimed, then n times
// timed. A command with no Stderr of its own has its output kept for the
// error it returns when it fails; one with a Stderr has its output discarded.
func repeat(warmup, n int, newCmd func() *exec.Cmd) (timings, error) {
	return repeatPrepared(warmup, n, func() (*exec.Cmd, error) { return newCmd(), nil })
}

// repeatPrepared is repeat whose prepare runs before each run, untimed,
// and returns the command to time: it may first run others (a claim for
// spool done to finish, say).
func repeatPrepared(warmup, n int, prepare func() (*exec.Cmd, error)) (timings, error) {
	var t timings
	for i := range warmup + n {
		cmd, err := prepare()
		if err != nil {
			return t, err
		}
		var out bytes.Buffer
		if cmd.Stderr == nil {
			cmd.Stdout, cmd.Stderr = &out, &out
		}
		start := time.Now()
		if err := cmd.Run(); err != nil {
			err = fmt.Errorf("%s: %v", strings.Join(cmd.Args, " "), err)
			if out.Len() > 0 {
				err = fmt.Errorf("%w\n%.2000s", err, out.Bytes())
			}
			return t, err
		}
		wall := time.Since(start)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			t.maxRSS = max(t.maxRSS, ru.Maxrss)
		}
		if i >= warmup {
			t.wall = append(t.wall, wall)
			t.cpu = append(t.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	slices.Sort(t.wall)
	slices.Sort(t.cpu)
	return t, nil
}

// run runs name with args in dir and returns its standard output; the
// error says what failed, with its standard error.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timeCommands times each command (bin with its arguments, in dir) runs
// times after one warm-up and prints a line per command.
func timeCommands(bin, dir string, env []string, runs int, cmds [][]string) error {
	for _, c := range cmds {
		t, err := repeat(1, runs, func() *exec.Cmd {
			cmd := exec.Command(bin, c...)
			cmd.Dir, cmd.Env = dir, env
			return cmd
		})
		if err != nil {
			return err
		}
		fmt.Printf("spool %-40s wall median %6.1f ms (min %6.1f, max %6.1f)  cpu median %6.1f ms  peak RSS %d MiB  (%d runs)\n",
			strings.Join(c, " "), ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)-1]), ms(t.cpu[len(t.cpu)/2]), t.maxRSS/1024, runs)
	}
	return nil
}

// benchRepo makes the repository a benchmark fills: dir, or a temp dir
// named by pattern that cleanup removes, with git init and spool init run
// in it. It returns bin made absolute and the environment spool runs with
// (actor as SPOOL_ACTOR, the real clock).
func benchRepo(bin, dir, pattern, actor string) (string, string, []string, func(), error) {
	cleanup := func() {}
	var err error
	if bin, err = filepath.Abs(bin); err != nil {
		return "", "", nil, cleanup, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", pattern); err != nil {
			return "", "", nil, cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", nil, cleanup, err
	}
	env := append(os.Environ(), "SPOOL_ACTOR="+actor, "SPOOL_NOW=")
	for _, c := range [][]string{{"git", "init", "-q"}, {bin, "init"}} {
		if _, err := run(dir, env, c[0], c[1:]...); err != nil {
			return "", "", nil, cleanup, err
		}
	}
	return bin, dir, env, cleanup, nil
}

// printLoad prints the load average, which says how far to trust timings.
func printLoad() {
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average: %s", load)
	}
}
