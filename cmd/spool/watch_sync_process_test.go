package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// spool watch syncing on its own: as it starts, right after an append,
// every sync.interval; an unreachable remote is a warning.

// remoteHas says whether the remote's branch holds text in dir's writer
// file (path is the writer files' directory on that branch).
func remoteHas(remote, branch, path, dir, text string) bool {
	w := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, ".git", "spool", "writer")))))
	out, err := exec.Command("git", "-C", remote, "show", branch+":"+path+"/"+w+".jsonl").Output()
	return err == nil && strings.Contains(string(out), text)
}

// A clone with a remote syncs as watch starts and right after an append,
// long before sync.interval (an hour here); nobody configured anything.
func TestWatchSyncs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 1)
	dir, env := clones[0], envs[0]
	jobSpool(t, bin, dir, env, "task", "add", "kept here")
	jobSpool(t, bin, dir, env, "config", "set", "sync.interval", "1h")
	w := startWatch(t, bin, dir, env)
	waitFor(t, 10*time.Second, "watch did not sync as it started", func() bool {
		return remoteHas(r.Remote, "spool-log", "events", dir, "kept here")
	})
	jobSpool(t, bin, dir, env, "task", "add", "shared at once")
	waitFor(t, 10*time.Second, "watch did not sync after the append", func() bool {
		return remoteHas(r.Remote, "spool-log", "events", dir, "shared at once")
	})
	// The local branch follows what was pushed: the log is committed.
	waitFor(t, 10*time.Second, "the local branch spool-log did not follow the remote's", func() bool {
		return r.Git(dir, "rev-parse", "spool-log") == r.Git(r.Remote, "rev-parse", "spool-log")
	})
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch after SIGTERM: %v\n%s", err, w.output())
	}
}

// Two clones running spool watch, each adding tasks: both end with every
// task, and nobody ran spool sync.
func TestWatchSyncConverges(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	_, clones, envs := syncClones(t, bin, 2)
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "config", "set", "sync.interval", "1s")
	}
	var watchers []*jobWorker
	for i, dir := range clones {
		watchers = append(watchers, startWatch(t, bin, dir, envs[i]))
	}
	var want []string
	for k := range 3 {
		for i, dir := range clones {
			title := fmt.Sprintf("clone %d task %d", i, k)
			jobSpool(t, bin, dir, envs[i], "task", "add", title)
			want = append(want, title)
		}
	}
	slices.Sort(want)
	for i, dir := range clones {
		waitFor(t, 30*time.Second, fmt.Sprintf("clone %d did not get every task", i), func() bool {
			return slices.Equal(taskTitles(t, bin, dir, envs[i]), want)
		})
	}
	for i, w := range watchers {
		if err := w.stop(t); err != nil {
			t.Errorf("clone %d's watch after SIGTERM: %v\n%s", i, err, w.output())
		}
		if out := w.output(); strings.Contains(out, "sync:") && !strings.Contains(out, "synced with") {
			t.Errorf("clone %d's watch reported a failed sync:\n%s", i, out)
		}
	}
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "verify")
	}
}

// An unreachable remote does not stop watch: the failure is a warning,
// said once, and watch goes on (and stops cleanly).
func TestWatchSyncUnreachable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 1)
	dir, env := clones[0], envs[0]
	r.Git(dir, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	jobSpool(t, bin, dir, env, "config", "set", "sync.remote", "origin")
	jobSpool(t, bin, dir, env, "config", "set", "sync.interval", "1s")
	w := startWatch(t, bin, dir, env)
	waitFor(t, 10*time.Second, "watch did not warn of the unreachable remote", func() bool {
		return strings.Contains(w.output(), "spool watch: sync: cannot reach origin")
	})
	jobSpool(t, bin, dir, env, "task", "add", "kept locally")
	time.Sleep(3 * time.Second) // several tries at a 1 s interval, backing off
	select {
	case <-w.done:
		t.Fatalf("spool watch stopped: %v\n%s", w.err, w.output())
	default:
	}
	if n := strings.Count(w.output(), "cannot reach"); n != 1 {
		t.Errorf("the warning was said %d times, want once:\n%s", n, w.output())
	}
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch after SIGTERM: %v\n%s", err, w.output())
	}
	if got := taskTitles(t, bin, dir, env); !slices.Equal(got, []string{"kept locally"}) {
		t.Errorf("the local log: %q", got)
	}
}
