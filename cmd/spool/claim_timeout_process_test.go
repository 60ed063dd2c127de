package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/proc/proctest"
	"github.com/spoolhq/spool/internal/workqueue"
)

// A remote that hangs never holds the log's lock longer than a claim's
// deadline (half of lock.timeout): a claim whose fetch or push the remote
// never answers fails then, as remote_unreachable naming the remote and the
// deadline, with nothing appended and whatever git started killed, and
// commands in the same clone that wait for the lock meanwhile get it.

// hangingRemote makes the clone's remote hang on what (uploadpack: every
// fetch and ls-remote; receivepack: every push): a script that records its
// pid in pids and sleeps for five minutes before doing its job.
func hangingRemote(t *testing.T, dir, what string) (pids string) {
	t.Helper()
	tmp := t.TempDir()
	pids = filepath.Join(tmp, "pids")
	script := filepath.Join(tmp, "hang-"+what)
	prog := map[string]string{"uploadpack": "git-upload-pack", "receivepack": "git-receive-pack"}[what]
	body := fmt.Sprintf("#!/bin/sh\necho $$ >> %q\nsleep 300\nexec %s \"$@\"\n", pids, prog)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, "config", "remote.origin."+what, script)
	return pids
}

// claimAsync starts spool --json next in dir.
func claimAsync(bin, dir string, env []string) <-chan claimResult {
	ch := make(chan claimResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "-C", dir, "--json", "next")
		cmd.Env = append(os.Environ(), env...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		ch <- claimResult{stdout.String(), stderr.String(), err}
	}()
	return ch
}

type claimResult struct {
	out, stderr string
	err         error
}

// waitClaim waits for a claim started by claimAsync: far longer than its
// deadline, so that only a claim the deadline did not end misses it.
func waitClaim(t *testing.T, ch <-chan claimResult) claimResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the claim on a hanging remote did not end in 30s (its deadline is 2s)")
	}
	return claimResult{}
}

// claimTimedOut checks a claim's answer: exit 4, remote_unreachable,
// naming the remote, the step and the deadline.
func claimTimedOut(t *testing.T, r claimResult, step string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) || ee.ExitCode() != 4 || r.out != "" {
		t.Fatalf("claim on a remote hanging on %s: %v\n%s%s", step, r.err, r.out, r.stderr)
	}
	var e struct {
		Error struct {
			Code, Message, Remote, Timeout string
		}
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil {
		t.Fatalf("%v\n%s", err, r.stderr)
	}
	want := "origin did not answer the claim's " + step + " within 2s"
	if e.Error.Code != "remote_unreachable" || e.Error.Remote != "origin" || e.Error.Timeout != "2s" || !strings.Contains(e.Error.Message, want) {
		t.Fatalf("got %+v, want remote_unreachable %q (remote origin, timeout 2s)", e.Error, want)
	}
}

// claimsIn counts task.claimed events in dir's log.
func claimsIn(t *testing.T, bin, dir string, env []string) int {
	t.Helper()
	return strings.Count(jobSpool(t, bin, dir, env, "log", "-t", workqueue.TypeClaimed), workqueue.TypeClaimed)
}

func TestClaimOnAHangingRemote(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("claims that wait out their deadline")
	}
	bin := spoolBinary(t)
	_, clones, envs := syncClones(t, bin, 1)
	dir, env := clones[0], envs[0]
	jobSpool(t, bin, dir, env, "config", "set", "lock.timeout", "4s") // a claim's deadline: 2s
	for k := range 4 {
		jobSpool(t, bin, dir, env, "task", "add", fmt.Sprint("task ", k))
	}
	jobSpool(t, bin, dir, env, "sync")

	t.Run("fetch", func(t *testing.T) {
		pids := hangingRemote(t, dir, "uploadpack")
		defer gitOut(t, dir, "config", "--unset", "remote.origin.uploadpack")
		before := claimsIn(t, bin, dir, env)
		claim := claimAsync(bin, dir, env)
		hung := proctest.ReadPID(t, pids) // the claim is in its fetch, holding the log's lock
		// Meanwhile the clone's other commands wait for the lock no longer
		// than the claim's deadline, less than lock.timeout.
		jobSpool(t, bin, dir, env, "task", "add", "added while a claim hangs")
		if out := jobSpool(t, bin, dir, env, "next", "--offline"); !strings.Contains(out, "claimed") {
			t.Fatalf("--offline next while a claim hangs: %s", out)
		}
		claimTimedOut(t, waitClaim(t, claim), "fetch")
		proctest.WaitExited(t, hung) // killed with the git that started it
		if got := claimsIn(t, bin, dir, env); got != before+1 {
			t.Fatalf("%d claims in the log, want %d: the --offline one only", got, before+1)
		}
	})

	t.Run("fetch, offline claims allowed", func(t *testing.T) {
		pids := hangingRemote(t, dir, "uploadpack")
		defer gitOut(t, dir, "config", "--unset", "remote.origin.uploadpack")
		jobSpool(t, bin, dir, env, "config", "set", "sync.offline_claims", "local")
		defer jobSpool(t, bin, dir, env, "config", "unset", "sync.offline_claims")
		before := claimsIn(t, bin, dir, env)
		r := waitClaim(t, claimAsync(bin, dir, env))
		var c struct{ ID string }
		if r.err != nil || json.Unmarshal([]byte(r.out), &c) != nil || c.ID == "" {
			t.Fatalf("next with sync.offline_claims = local: %v\n%s%s", r.err, r.out, r.stderr)
		}
		if !strings.Contains(r.stderr, "did not answer the claim's fetch within 2s") || !strings.Contains(r.stderr, "the claim is local") {
			t.Fatalf("no warning that the claim is local:\n%s", r.stderr)
		}
		proctest.WaitExited(t, proctest.ReadPID(t, pids))
		if got := claimsIn(t, bin, dir, env); got != before+1 {
			t.Fatalf("%d claims in the log, want %d", got, before+1)
		}
	})

	t.Run("push", func(t *testing.T) {
		pids := hangingRemote(t, dir, "receivepack")
		defer gitOut(t, dir, "config", "--unset", "remote.origin.receivepack")
		before := claimsIn(t, bin, dir, env)
		claim := claimAsync(bin, dir, env)
		hung := proctest.ReadPID(t, pids) // the claim is in its push
		jobSpool(t, bin, dir, env, "task", "add", "added while a push hangs")
		claimTimedOut(t, waitClaim(t, claim), "push")
		proctest.WaitExited(t, hung)
		if got := claimsIn(t, bin, dir, env); got != before {
			t.Fatalf("%d claims in the log, want %d: a claim whose push timed out was written", got, before)
		}
	})
}
