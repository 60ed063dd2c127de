package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run spool next --wait as a script would: a real process that
// blocks until work is ready. Every wait has a deadline; a --wait that did
// not wake would end at its own --timeout with nothing claimed.

// waiting starts spool next --wait with args and returns it once it says it
// waits (its first look found nothing).
func waiting(t *testing.T, bin, dir string, env []string, args ...string) *jobWorker {
	t.Helper()
	w := startSpool(t, bin, dir, env, "next", append([]string{"next", "--wait"}, args...)...)
	waitFor(t, 30*time.Second, "next --wait never said it waits", func() bool {
		b, _ := os.ReadFile(w.log)
		return strings.Contains(string(b), "waiting for a task")
	})
	return w
}

// exited waits for w to end, at most 60 s, and returns its output.
func exited(t *testing.T, w *jobWorker) string {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(60 * time.Second):
		t.Fatal("next --wait did not end")
	}
	b, _ := os.ReadFile(w.log)
	return string(b)
}

// A task added while next --wait waits is claimed by it: the log changed.
func TestNextWaitWakesOnANewTask(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 0)
	env := []string{"SPOOL_NOW=", "SPOOL_ACTOR=worker"}
	w := waiting(t, bin, dir, env, "--timeout", "50s")
	jobSpool(t, bin, dir, env, "task", "add", "arrives later")
	if out := exited(t, w); w.err != nil || !strings.Contains(out, "claimed sp-") || !strings.Contains(out, "arrives later") {
		t.Fatalf("next --wait: %v\n%s", w.err, out)
	}
}

// The only task is in backoff, which no event ends: next --wait wakes when
// the queue says it ends and claims it, well before its timeout.
func TestNextWaitWakesWhenABackoffEnds(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 1)
	env := []string{"SPOOL_NOW=", "SPOOL_ACTOR=worker"}
	jobSpool(t, bin, dir, env, "config", "set", "backoff.initial", "1s")
	for range 2 { // the second failure waits backoff.initial
		jobSpool(t, bin, dir, env, "next")
		jobSpool(t, bin, dir, env, "fail", "sp-0000", "--error", "flaky")
	}
	out := jobSpool(t, bin, dir, env, "--json", "next", "--timeout", "50s")
	var got struct {
		ID      string
		Attempt int
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.ID != "sp-0000" || got.Attempt != 3 {
		t.Fatalf("next --timeout 50s: %v\n%s", err, out)
	}
}

// With a bd source, whose ready work the log knows nothing of, next --wait
// asks bd every workqueue.poll_interval.
func TestNextWaitPollsTheSource(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 0)
	fake, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fakebd", "bd"))
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(t.TempDir(), "ready.json")
	if err := os.WriteFile(ready, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SPOOL_NOW=", "SPOOL_ACTOR=worker", "SPOOL_FAKEBD_READY=" + ready}
	for _, kv := range [][2]string{{"workqueue.source", "bd"}, {"workqueue.source_bin", fake}, {"workqueue.poll_interval", "100ms"}} {
		jobSpool(t, bin, dir, env, "config", "set", kv[0], kv[1])
	}
	w := waiting(t, bin, dir, env, "--timeout", "50s")
	if err := os.WriteFile(ready, []byte(`[{"id":"bd-7","title":"from bd","priority":1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := exited(t, w); w.err != nil || !strings.Contains(out, "claimed bd-7") {
		t.Fatalf("next --wait: %v\n%s", w.err, out)
	}
}

// Ctrl-C ends a waiting next cleanly: exit 1 interrupted, nothing claimed.
func TestNextWaitInterrupted(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 0)
	env := []string{"SPOOL_NOW=", "SPOOL_ACTOR=worker"}
	w := waiting(t, bin, dir, env)
	w.cmd.Process.Signal(os.Interrupt)
	out := exited(t, w)
	var exit *exec.ExitError
	if !errors.As(w.err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "spool: interrupted") {
		t.Fatalf("after SIGINT: %v\n%s", w.err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("killed by the signal rather than ending: %v", ws)
	}
	if log := jobSpool(t, bin, dir, env, "log", "-t", "task.claimed"); log != "" {
		t.Fatalf("something was claimed:\n%s", log)
	}
}

// With a bd source, spool watch's orchestrator asks bd for ready work every
// workqueue.poll_interval, not only at its watchdog (an hour here): a bead
// bd makes ready while watch runs gets its agent.
func TestWatchPollsTheSourceForTheOrchestrator(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, _, runs := orchRepo(t, bin, "succeed", 2)
	fake, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fakebd", "bd"))
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	ready, argv := filepath.Join(scratch, "ready.json"), filepath.Join(scratch, "argv.log")
	if err := os.WriteFile(ready, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(env, "SPOOL_FAKEBD_READY="+ready, "SPOOL_FAKEBD_LOG="+argv)
	for _, kv := range [][2]string{{"workqueue.source", "bd"}, {"workqueue.source_bin", fake}, {"workqueue.poll_interval", "100ms"},
		{"orchestrator.watchdog_interval", "1h"}} {
		jobSpool(t, bin, dir, env, "config", "set", kv[0], kv[1])
	}
	startSpool(t, bin, dir, env, "watch", "watch")
	// Nothing but the interval makes watch look this often: what wakes it
	// otherwise (its own appends at start) is over after a few passes.
	polls := func() int { return strings.Count(strings.Join(lines(argv), "\n"), "bd ready") }
	waitFor(t, 30*time.Second, "watch did not poll bd ten times", func() bool { return polls() >= 10 })
	if err := os.WriteFile(ready, []byte(`[{"id":"bd-9","title":"made ready in bd","priority":1}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the bead made ready in bd got no agent", func() bool {
		return slices.ContainsFunc(lines(runs), func(l string) bool { return strings.HasPrefix(l, "start bd-9 ") })
	})
}

// A task in backoff gets its next agent when the backoff ends, which no
// event says: spool watch wakes then, not at its watchdog (an hour here).
func TestWatchStartsTheAgentWhenABackoffEnds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "fail", 2)
	for _, kv := range [][2]string{{"workqueue.policy", "exponential"}, {"backoff.initial", "1s"}, {"backoff.max_failures", "0"},
		{"orchestrator.watchdog_interval", "1h"}, {"sync.interval", "24h"}} {
		jobSpool(t, bin, dir, env, "config", "set", kv[0], kv[1])
	}
	startSpool(t, bin, dir, env, "watch", "watch")
	// Attempt 1 fails and is retried at once; attempt 2 fails and waits
	// backoff.initial; attempt 3 starts when it ends.
	waitFor(t, 30*time.Second, "no third attempt after the backoff", func() bool {
		return slices.ContainsFunc(lines(runs), func(l string) bool { return strings.HasPrefix(l, "start "+id+" 3 ") })
	})
}
