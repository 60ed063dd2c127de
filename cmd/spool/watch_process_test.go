package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

// These tests run spool watch as it runs for real, a process of its own,
// with other processes appending to the log meanwhile. Every wait has a
// deadline; every watcher started is stopped.

// startWatch starts spool watch and waits (at most 10 s) until it holds
// the clone's watch lock, which it records with its pid.
func startWatch(t *testing.T, bin, dir string, env []string, args ...string) *jobWorker {
	t.Helper()
	w := startSpool(t, bin, dir, env, "watch", append([]string{"watch"}, args...)...)
	pidFile := filepath.Join(dir, ".git", "spool", "watch.pid")
	waitFor(t, 10*time.Second, "spool watch did not take its lock", func() bool {
		select {
		case <-w.done:
			b, _ := os.ReadFile(w.log)
			t.Fatalf("spool watch exited: %v\n%s", w.err, b)
		default:
		}
		b, _ := os.ReadFile(pidFile)
		return strings.TrimSpace(string(b)) == strconv.Itoa(w.cmd.Process.Pid)
	})
	return w
}

func (w *jobWorker) output() string {
	b, _ := os.ReadFile(w.log)
	return string(b)
}

// One watcher a clone: a second one exits 4 already_running naming the
// first; SIGTERM stops the first cleanly (exit 0); after kill -9 the kernel
// has released the lock and a new watcher starts.
func TestWatchOneAClone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	first := startWatch(t, bin, dir, env)

	out, err := jobSpoolErr(bin, dir, env, "--json", "watch")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 4 {
		t.Fatalf("a second spool watch: %v, want exit 4\n%s", err, out)
	}
	var got struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			PID     int    `json:"pid"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &got); err != nil {
		t.Fatalf("a second spool watch printed %q: %v", out, err)
	}
	pid := first.cmd.Process.Pid
	if got.Error.Code != "already_running" || got.Error.PID != pid || !strings.Contains(got.Error.Message, "pid "+strconv.Itoa(pid)) {
		t.Errorf("a second spool watch said %+v, want already_running naming pid %d", got.Error, pid)
	}

	first.kill(t)
	second := startWatch(t, bin, dir, env)
	stopped := time.Now()
	if err := second.stop(t); err != nil {
		t.Errorf("spool watch after SIGTERM: %v, want exit 0\n%s", err, second.output())
	}
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("spool watch took %s to stop after SIGTERM", took)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "spool", "watch.pid")); !os.IsNotExist(err) {
		t.Errorf("the pid file outlived a clean stop: %v", err)
	}
}

// A watcher acts on what another process appends: a job submitted to start
// a second later is released when its time comes, and a task claim is
// released when its lease runs out, without anything else happening.
func TestWatchActsOnOtherProcessesEvents(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	jobSpool(t, bin, dir, env, "config", "set", "workqueue.lease", "2s")
	w := startWatch(t, bin, dir, env)

	id := submitJob(t, bin, dir, env, "--start-after", "1s", "--", "true")
	waitStatus(t, bin, dir, env, id, jobs.Queued, 10*time.Second)

	jobSpool(t, bin, dir, env, "task", "add", "Write the parser")
	jobSpool(t, bin, dir, env, "next")
	waitFor(t, 10*time.Second, "the expired claim was not released", func() bool {
		return len(jobEvents(t, bin, dir, env, "task.lease_expired")) == 1
	})
	// The watcher says what it did after the append that records it.
	for _, want := range []string{"job " + id + " released: its start time came", "released 1 expired task claim(s)"} {
		waitFor(t, 5*time.Second, fmt.Sprintf("spool watch's output to say %q", want), func() bool {
			return strings.Contains(w.output(), want)
		})
	}
}

// With a watcher running, a commit's post-commit hook only pings it, and
// the watcher does the pass: committing an approval promotes the PRD.
func TestWatchHookPing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	env = append(env, "SPOOL_BIN="+bin, "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	prd := filepath.Join(dir, "docs", "prd", "prd-a.md")
	os.MkdirAll(filepath.Dir(prd), 0o755)
	os.WriteFile(prd, []byte("---\nprd_approval: pending\nbeads_approval: pending\n---\n# A\n"), 0o644)
	jobSpool(t, bin, dir, env, "hooks", "install")
	jobSpool(t, bin, dir, env, "prd", "start", "feat")
	jobSpool(t, bin, dir, env, "prd", "add", "feat", "prd-a")
	jobSpool(t, bin, dir, env, "prd", "submit", "prd-a")
	git("add", "-A")
	git("commit", "-q", "-m", "PRD for review")
	w := startWatch(t, bin, dir, env)

	os.WriteFile(prd, []byte("---\nprd_approval: approved\nbeads_approval: approved\n---\n# A\n"), 0o644)
	if out := git("commit", "-q", "-am", "approve prd-a"); strings.Contains(out, "queued as") {
		t.Errorf("the hook promoted the PRD itself with a watcher running:\n%s", out)
	}
	waitFor(t, 10*time.Second, "spool watch did not promote the approved PRD", func() bool {
		return strings.Contains(jobSpool(t, bin, dir, env, "--json", "prd", "show", "prd-a"), `"state": "queued"`)
	})
	// It says so after the append that records it, which prd show saw.
	waitFor(t, 5*time.Second, "spool watch's output to tell the promotion", func() bool {
		return strings.Contains(w.output(), "spool watch: PRD prd-a queued as ")
	})
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch after SIGTERM: %v\n%s", err, w.output())
	}
}
