package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	"github.com/spoolhq/spool/internal/store"
)

// jobsMain measures the job scheduler with n queued jobs, submitted one
// command (one fsynced append) at a time through the service the CLI uses,
// after a history of finished jobs; then whole processes of submit, list,
// claim (a worker's dispatch decision) and show; then, with a real worker,
// how late a start_after job is dispatched and whether a reorder is
// honoured at the next decision:
//
//	spoolbench jobs -spool BIN [-n 10000] [-runs 21] [-dir DIR]
func jobsMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench jobs", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	n := fs.Int("n", 10000, "queued jobs")
	runs := fs.Int("runs", 21, "timed runs per command")
	keep := fs.String("dir", "", "build the repository here (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	start := time.Now()
	b, dir, env, cleanup, err := benchRepo(*bin, *keep, "spool-bench-jobs-", "user0@spool.invalid")
	defer cleanup()
	if err != nil {
		return err
	}
	if err := jobsConfig(b, dir, env); err != nil {
		return err
	}
	// In a child process, so that this one stays small: a command it
	// starts counts its RSS at the start as its own (see scaleTimes).
	self, err := os.Executable()
	if err != nil {
		return err
	}
	out, err := run("", nil, self, "jobs-build", "-dir", dir, "-n", strconv.Itoa(*n))
	if err != nil {
		return err
	}
	first := strings.TrimSpace(out)
	fmt.Printf("dataset: %d queued jobs of 5 users in 3 tiers, after 300 finished ones, in %s (built in %s)\n", *n, dir, time.Since(start).Round(time.Millisecond))
	printLoad()
	if err := timeCommands(b, dir, env, *runs, [][]string{
		{"version"},
		{"job", "submit", "--name", "bench", "--", "true"},
		{"--json", "job", "list"},
		{"--json", "job", "claim", "--slots", "4", "--name", "bench-engine"},
		{"job", "show", first},
		{"job", "explain", first},
	}); err != nil {
		return err
	}
	return jobLatencies(b, env)
}

// jobsBuildMain is jobsMain's child: it fills the scheduler of the spool
// repository dir (buildJobs) and prints the first queued job's id.
//
//	spoolbench jobs-build -dir DIR -n N
func jobsBuildMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench jobs-build", flag.ExitOnError)
	dir := fs.String("dir", "", "a spool repository set up by jobsConfig")
	n := fs.Int("n", 0, "queued jobs")
	fs.Parse(args)
	if *dir == "" || *n < 1 {
		return fmt.Errorf("%w: -dir and -n are required", errUsage)
	}
	first, err := buildJobs(*dir, *n)
	if err != nil {
		return err
	}
	fmt.Println(first)
	return nil
}

// jobsConfig configures the scheduler buildJobs fills: four slots, and
// user0 an admin (only admins submit urgent jobs).
func jobsConfig(bin, dir string, env []string) error {
	for _, args := range [][]string{{"config", "set", "scheduler.slots", "4"}, {"config", "set", "scheduler.admins", `["user0@spool.invalid"]`}} {
		if _, err := run(dir, env, bin, args...); err != nil {
			return err
		}
	}
	return nil
}

// buildJobs submits n jobs through the service, one append each, after 300
// jobs run to the end (so estimates have segment times); it returns the
// first queued job's id.
func buildJobs(dir string, n int) (string, error) {
	ctx := context.Background()
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		return "", err
	}
	user := "user0@spool.invalid"
	s := jobservice.Open(store.Env{Store: st, Actor: func(context.Context) (string, error) { return user, nil }})
	at := time.Now().Add(-48 * time.Hour).UTC()
	s.Clock = func() time.Time { return at }
	tiers := []jobs.Tier{jobs.Normal, jobs.Normal, jobs.Background, jobs.Urgent}
	for i := range 300 {
		user = fmt.Sprintf("user%d@spool.invalid", i%5)
		if _, err := s.Submit(ctx, jobs.Submit{Name: fmt.Sprintf("train-%d", i%7), Argv: []string{"train.sh"}, Segments: 2}); err != nil {
			return "", err
		}
		c, err := s.Claim(ctx, "bench-worker", 4)
		if err != nil || c == nil {
			return "", fmt.Errorf("claim: %v", err)
		}
		for seg := 0; seg >= 0; {
			at = at.Add(time.Duration(5+i%10) * time.Minute)
			if seg, _, err = s.SegmentDone(ctx, c.Job.ID, "bench-worker", jobs.SegmentEnd{Segment: seg}); err != nil {
				return "", err
			}
		}
	}
	at = time.Now().Add(-time.Hour).UTC()
	first := ""
	for i := range n {
		user = fmt.Sprintf("user%d@spool.invalid", i%5)
		tier := tiers[i%len(tiers)]
		if tier == jobs.Urgent {
			user = "user0@spool.invalid" // an admin
		}
		out, err := s.Submit(ctx, jobs.Submit{Name: fmt.Sprintf("train-%d", i%7), Argv: []string{"train.sh", "--epochs", "30"},
			Tier: tier, Slots: 1 + i%2, Segments: 1 + i%4, Project: fmt.Sprintf("project-%d", i%3)})
		if err != nil {
			return "", err
		}
		if first == "" {
			first = out.ID
		}
		at = at.Add(10 * time.Millisecond)
	}
	return first, st.Flush(ctx)
}

// jobLatencies runs a real worker (poll 1 s) on a small repository: a job
// with a start_after 3 s ahead, and a reorder while the worker's one slot is
// busy. It prints how late the first was dispatched and which job the
// decision after the move took.
func jobLatencies(bin string, env []string) error {
	dir, err := os.MkdirTemp("", "spool-bench-jobs-latency-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spool := func(args ...string) (string, error) { return run(dir, env, bin, args...) }
	if _, err := run(dir, env, "git", "init", "-q"); err != nil {
		return err
	}
	for _, args := range [][]string{{"init"}, {"config", "set", "scheduler.admins", `["user0@spool.invalid"]`}} {
		if _, err := spool(args...); err != nil {
			return err
		}
	}
	worker := exec.Command(bin, "job", "worker", "--slots", "1", "--name", "latency", "--poll", "1s")
	worker.Dir, worker.Env = dir, env
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := worker.Start(); err != nil {
		return err
	}
	defer func() { worker.Process.Signal(syscall.SIGTERM); worker.Wait() }()
	id := func(out string) string {
		return strings.TrimSpace(out[strings.LastIndexByte(strings.TrimSpace(out), ' ')+1:])
	}

	// start_after: 3 s ahead.
	out, err := spool("job", "submit", "--start-after", "3s", "--", "true")
	if err != nil {
		return err
	}
	later := id(out)
	var late time.Duration
	if late, err = waitDispatched(spool, later, 30*time.Second); err != nil {
		return err
	}
	fmt.Printf("start_after: dispatched %s after its time (worker --poll 1s)\n", late.Round(time.Millisecond))

	// A reorder: the slot busy for 3 s, A then B queued, B moved to the top.
	if _, err := spool("job", "submit", "--name", "busy", "--", "sleep", "3"); err != nil {
		return err
	}
	time.Sleep(1500 * time.Millisecond)
	outA, err := spool("job", "submit", "--name", "a", "--", "true")
	if err != nil {
		return err
	}
	outB, err := spool("job", "submit", "--name", "b", "--", "true")
	if err != nil {
		return err
	}
	moved := time.Now()
	if _, err := spool("job", "move", id(outB), "--top"); err != nil {
		return err
	}
	if _, err := waitDispatched(spool, id(outA), 30*time.Second); err != nil {
		return err
	}
	showB, err := spool("--json", "job", "show", id(outB))
	if err != nil {
		return err
	}
	showA, _ := spool("--json", "job", "show", id(outA))
	var a, bj jobs.Job
	json.Unmarshal([]byte(showA), &a)
	json.Unmarshal([]byte(showB), &bj)
	fmt.Printf("reorder: b (submitted after a) moved to the top while the slot was busy; dispatched b %s and a %s after the move (b first: %v)\n",
		bj.FirstStart.Sub(moved).Round(time.Millisecond), a.FirstStart.Sub(moved).Round(time.Millisecond), bj.FirstStart.Before(a.FirstStart))
	return nil
}

// waitDispatched polls until the job was dispatched and returns how long
// after its start_after (or its submission) that was.
func waitDispatched(spool func(...string) (string, error), id string, limit time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		out, err := spool("--json", "job", "show", id)
		if err != nil {
			return 0, err
		}
		var j jobs.Job
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			return 0, err
		}
		if !j.FirstStart.IsZero() {
			ref := j.StartAfter
			if ref.IsZero() {
				ref = j.Submitted
			}
			return j.FirstStart.Sub(ref), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, fmt.Errorf("job %s not dispatched within %s", id, limit)
}
