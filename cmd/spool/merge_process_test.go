package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/proc/proctest"
)

// These tests run the real binary, built into a temp dir, as separate processes.

type procRepo struct {
	t       *testing.T
	bin     string
	root    string
	remote  string
	env     []string
	scratch string
}

func newProcRepo(t *testing.T, bin string) *procRepo {
	dir := t.TempDir()
	t.Cleanup(func() { proctest.WaitDirFree(t, dir) }) // runs before TempDir's removal
	r := &procRepo{t: t, bin: bin, root: filepath.Join(dir, "repo"), remote: filepath.Join(dir, "remote.git"), scratch: dir}
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	r.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "SPOOL_ACTOR=ada@example.com"}
	r.git(dir, "init", "-q", "--bare", "-b", "main", r.remote)
	r.git(dir, "init", "-q", "-b", "main", r.root)
	os.WriteFile(filepath.Join(r.root, "README"), []byte("hello\n"), 0o644)
	r.spool(r.root, nil, "init")
	r.spool(r.root, nil, "config", "set", "merge.untested", "true") // a test that tests says so (testWith)
	r.git(r.root, "add", "-A")
	r.git(r.root, "commit", "-q", "-m", "init")
	r.git(r.root, "remote", "add", "origin", r.remote)
	r.git(r.root, "push", "-q", "origin", "main")
	return r
}

func (r *procRepo) cmd(dir string, extraEnv []string, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(append([]string(nil), r.env...), extraEnv...)
	return c
}

func (r *procRepo) git(dir string, args ...string) string {
	r.t.Helper()
	out, err := r.cmd(dir, nil, "git", args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *procRepo) spool(dir string, env []string, args ...string) string {
	r.t.Helper()
	c := r.cmd(dir, env, r.bin, args...)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		r.t.Fatalf("spool %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// testWith has the train test with argv (JSON) rather than merge untested.
func (r *procRepo) testWith(argv string) {
	r.t.Helper()
	r.spool(r.root, nil, "config", "unset", "merge.untested")
	r.spool(r.root, nil, "config", "set", "merge.test_command", argv)
}

func (r *procRepo) worktree(name string) string {
	path := filepath.Join(filepath.Dir(r.root), name)
	r.git(r.root, "worktree", "add", "-q", path, "-b", name)
	os.WriteFile(filepath.Join(path, name+".txt"), []byte(name+"\n"), 0o644)
	r.git(path, "add", "-A")
	r.git(path, "commit", "-q", "-m", name+": change")
	return path
}

type shownEntry struct {
	mergequeue.Entry
	History []mergequeue.AuditStep `json:"history"`
}

func (r *procRepo) entry(id int64, env []string) shownEntry {
	var e shownEntry
	if err := json.Unmarshal([]byte(r.spool(r.root, env, "merge", "show", fmt.Sprint(id), "--json")), &e); err != nil {
		r.t.Fatal(err)
	}
	return e
}

func TestMergeProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := spoolBinary(t)
	t.Run("concurrent submissions of one dedupe key", func(t *testing.T) { testConcurrentSubmit(t, bin) })
	t.Run("two clones queue a worktree named wt", func(t *testing.T) { testClonesSameWorktreeName(t, bin) })
	for _, at := range []string{"claimed", "rebasing", "testing", "ready_to_merge", "merging", "ref_updated"} {
		t.Run("kill -9 in "+at, func(t *testing.T) { testKillRunner(t, bin, at) })
	}
	t.Run("kill -9 ends the test command", func(t *testing.T) { testKillEndsTestCommand(t, bin) })
	t.Run("merge cancel ends the test command", func(t *testing.T) { testCancelEndsTestCommand(t, bin) })
	t.Run("recovery ends a test command that survived", func(t *testing.T) { testRecoveryEndsSurvivor(t, bin) })
	t.Run("kill -9 ends the push of the target", func(t *testing.T) { testKillEndsPush(t, bin) })
	t.Run("another clone pushed to the target", func(t *testing.T) { testAnotherClonePushed(t, bin) })
	t.Run("another clone pushes while the entry is tested", func(t *testing.T) { testAnotherClonePushesDuringTest(t, bin) })
}

// cloneB clones the remote: another developer's clone, which pushes to
// the remote's main behind the train's back.
func (r *procRepo) cloneB() string {
	b := filepath.Join(r.scratch, "clone-b")
	r.git(r.scratch, "clone", "-q", r.remote, b)
	return b
}

// Clone B pushes to origin/main after clone A's entry was submitted: A's
// train fetches origin's main, rebases the entry onto it and pushes it on
// top, merged in its first attempt, where it used to be refused ("fetch
// first") attempt after attempt.
func testAnotherClonePushed(t *testing.T, bin string) {
	r := newProcRepo(t, bin)
	feat := r.worktree("feat")
	r.spool(feat, nil, "merge", "submit")
	b := r.cloneB()
	os.WriteFile(filepath.Join(b, "b.txt"), []byte("b\n"), 0o644)
	r.git(b, "add", "b.txt")
	r.git(b, "commit", "-q", "-m", "b: change")
	r.git(b, "push", "-q", "origin", "main")
	theirs := r.git(b, "rev-parse", "HEAD")

	r.spool(r.root, nil, "merge", "run", "--once")
	e := r.entry(1, nil)
	if e.Status != mergequeue.Merged || e.Attempts != 1 {
		t.Fatalf("entry %s after %d attempts: %s", e.Status, e.Attempts, e.LastError)
	}
	remote := r.git(r.remote, "rev-parse", "main")
	if remote != e.TestedSHA || r.git(r.root, "rev-parse", "main") != remote {
		t.Fatalf("origin/main %s, local main %s, tested %s", remote, r.git(r.root, "rev-parse", "main"), e.TestedSHA)
	}
	log := r.git(r.remote, "log", "--format=%s", "main")
	if !strings.HasPrefix(log, "feat: change\nb: change\n") {
		t.Fatalf("origin/main's history:\n%s", log)
	}
	if r.git(r.remote, "merge-base", "--is-ancestor", theirs, "main") != "" {
		t.Fatal("origin/main lost clone B's commit")
	}
	for _, file := range []string{"feat.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(r.root, file)); err != nil {
			t.Errorf("clone A's checkout of main lacks %s", file)
		}
	}
	r.spool(r.root, nil, "verify")
}

// Clone B pushes to origin/main while A's train runs the entry's test (the
// test command itself pushes, the first time): before moving anything the
// train fetches again, sees origin's main moved, rebases onto it and tests
// again, and merges in the same attempt rather than failing it.
func testAnotherClonePushesDuringTest(t *testing.T, bin string) {
	r := newProcRepo(t, bin)
	feat := r.worktree("feat")
	b := r.cloneB()
	mark := filepath.Join(r.scratch, "pushed")
	r.testWith(fmt.Sprintf(
		`["sh","-c","[ -f %[1]s ] && exit 0; touch %[1]s; cd %[2]s && echo b > b.txt && git add b.txt && git commit -qm 'b: change' && git push -q origin main"]`, mark, b))
	r.spool(feat, nil, "merge", "submit")
	r.spool(r.root, nil, "merge", "run", "--once")
	e := r.entry(1, nil)
	theirs := r.git(b, "rev-parse", "HEAD")
	if e.Status != mergequeue.Merged || e.Attempts != 1 || e.TestedAgainstSHA != theirs {
		t.Fatalf("entry %s after %d attempts, tested against %s (clone B's %s): %s", e.Status, e.Attempts, e.TestedAgainstSHA, theirs, e.LastError)
	}
	var path []string
	for _, h := range e.History {
		path = append(path, string(h.To))
	}
	if !strings.Contains(strings.Join(path, " "), "testing ready_to_merge rebasing testing ready_to_merge merging merged") {
		t.Errorf("history %v: want tested twice", path)
	}
	if remote := r.git(r.remote, "rev-parse", "main"); remote != e.TestedSHA || r.git(r.remote, "rev-parse", "main~1") != theirs {
		t.Fatalf("origin/main %s, tested %s", remote, e.TestedSHA)
	}
}

// childrenOf lists the processes whose parent is pid and whose argv starts
// with argv.
func childrenOf(pid int, argv ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range entries {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && runs(string(cmdline), argv) {
			out = append(out, child)
		}
	}
	return out
}

// runs says whether cmdline (/proc's, NUL-separated) runs argv[0] with the
// rest of argv among its arguments, in order (git's -c options come first).
func runs(cmdline string, argv []string) bool {
	args := strings.Split(cmdline, "\x00")
	if args[0] != argv[0] {
		return false
	}
	want := argv[1:]
	for _, a := range args[1:] {
		if len(want) > 0 && a == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

// The train killed with kill -9 while it pushes the target (the remote's
// pre-receive hook holds the push): its git push dies with it rather than
// landing behind recovery's back. Once the hook lets go, the next run
// recovers the entry at once, merged exactly once, and local and remote
// agree.
func testKillEndsPush(t *testing.T, bin string) {
	r := newProcRepo(t, bin)
	feat := r.worktree("feat")
	pushing, release := filepath.Join(r.scratch, "pushing"), filepath.Join(r.scratch, "release")
	// The first push of main waits (at most 60 s) for the test; other pushes pass.
	hook := fmt.Sprintf(`#!/bin/sh
grep -q ' refs/heads/main$' || exit 0
if [ ! -f %[1]s ]; then
	touch %[1]s
	i=0; while [ ! -f %[2]s ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
fi
`, pushing, release)
	if err := os.WriteFile(filepath.Join(r.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	r.spool(r.root, nil, "config", "set", "merge.lease", "1h")
	r.spool(feat, nil, "merge", "submit")
	before := r.git(r.remote, "rev-parse", "main")
	runner := r.cmd(r.root, nil, bin, "merge", "run", "--once")
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Process.Kill(); runner.Wait() })
	var push []int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(pushing); err == nil {
			if push = childrenOf(runner.Process.Pid, "git", "push"); len(push) == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the train never pushed (git push children: %v)", push)
		}
	}
	if e := r.entry(1, nil); e.Status != mergequeue.Merging {
		t.Fatalf("pushing, the entry is %s", e.Status)
	}
	runner.Process.Kill() // SIGKILL
	runner.Wait()
	proctest.WaitExited(t, push[0])
	if got := r.git(r.remote, "rev-parse", "main"); got != before {
		t.Fatal("the remote moved while its hook held the push")
	}

	os.WriteFile(release, nil, 0o644)
	r.spool(r.root, nil, "merge", "run", "--once")
	e := r.entry(1, nil)
	if e.Status != mergequeue.Merged || e.Attempts != 1 {
		t.Fatalf("after recovery: %s, %d attempts (%s)", e.Status, e.Attempts, e.LastError)
	}
	local := r.git(r.root, "rev-parse", "main")
	if local != e.TestedSHA || r.git(r.remote, "rev-parse", "main") != local {
		t.Fatalf("local main %s, remote %s, tested %s", local, r.git(r.remote, "rev-parse", "main"), e.TestedSHA)
	}
	if n := strings.Count(r.git(r.root, "log", "--format=%s", "main"), "feat: change"); n != 1 {
		t.Fatalf("main has the change %d times", n)
	}
}

// startTesting submits a worktree and starts merge run --once with a test
// command that starts a grandchild and waits; it returns the runner and the
// pids of the test command (a shell) and its grandchild.
func startTesting(t *testing.T, bin string) (r *procRepo, runner *exec.Cmd, shell, grandchild int) {
	r = newProcRepo(t, bin)
	feat := r.worktree("feat")
	shellFile, childFile := filepath.Join(r.scratch, "shell"), filepath.Join(r.scratch, "grandchild")
	r.testWith(
		fmt.Sprintf(`["sh","-c","sleep 300 & echo $! > %s.tmp; mv %s.tmp %s; echo $$ > %s.tmp; mv %s.tmp %s; wait"]`,
			childFile, childFile, childFile, shellFile, shellFile, shellFile))
	r.spool(feat, nil, "merge", "submit")
	runner = r.cmd(r.root, nil, bin, "merge", "run", "--once")
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Process.Kill(); runner.Wait() })
	shell, grandchild = proctest.ReadPID(t, shellFile), proctest.ReadPID(t, childFile)
	t.Cleanup(func() { syscall.Kill(shell, syscall.SIGKILL); syscall.Kill(grandchild, syscall.SIGKILL) })
	return r, runner, shell, grandchild
}

// After kill -9 of merge run, its test command and what that started die
// too: nothing it started outlives it.
func testKillEndsTestCommand(t *testing.T, bin string) {
	_, runner, shell, grandchild := startTesting(t, bin)
	runner.Process.Kill() // SIGKILL
	runner.Wait()
	proctest.WaitExited(t, shell, grandchild)
}

// merge cancel of an entry in testing stops its test command (and what
// that started) within seconds, not at merge.test_timeout (30 minutes): the
// runner watches the entry while the test runs. The train goes on, and the
// entry stays cancelled.
func testCancelEndsTestCommand(t *testing.T, bin string) {
	r, runner, shell, grandchild := startTesting(t, bin)
	start := time.Now()
	r.spool(r.root, nil, "merge", "cancel", "1", "--reason", "not needed")
	proctest.WaitExited(t, shell, grandchild) // 10 s at most
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the test command ended %s after the cancel", took)
	}
	done := make(chan error, 1)
	go func() { done <- runner.Wait() }()
	select {
	case err := <-done:
		if code := runner.ProcessState.ExitCode(); code != 3 {
			t.Errorf("merge run --once exited %d (%v), want 3 (not merged)", code, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("merge run --once still running after the cancel")
	}
	if e := r.entry(1, nil); e.Status != mergequeue.Cancelled {
		t.Fatalf("entry %s, want cancelled", e.Status)
	}
	r.spool(r.root, nil, "verify")
}

// A test command whose group survived its runner is killed by the recovery
// of the entry, found by the process group recorded in the log. Here the
// guard is killed on its own while its runner is stopped: the test command
// dies with the guard, its grandchild lives on in the group.
func testRecoveryEndsSurvivor(t *testing.T, bin string) {
	r, runner, shell, grandchild := startTesting(t, bin)
	var rec proc.Record
	deadline := time.Now().Add(30 * time.Second)
	for {
		if e := r.entry(1, nil); e.Proc != nil {
			rec = proc.Record(*e.Proc)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the test command's process group was never recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pgid, _ := syscall.Getpgid(grandchild); pgid != rec.PGID || !proc.Alive(rec) {
		t.Fatalf("recorded %+v; the test command's grandchild is in group %d", rec, pgid)
	}
	t.Cleanup(func() { syscall.Kill(-rec.PGID, syscall.SIGKILL) })
	proctest.Stop(t, runner.Process.Pid) // it must not see its guard die
	syscall.Kill(rec.PID, syscall.SIGKILL)
	proctest.WaitExited(t, shell)
	runner.Process.Kill()
	runner.Wait()
	if !proctest.Running(grandchild) {
		t.Fatal("set-up: the grandchild did not survive")
	}
	// Any merge command recovers an expired lease.
	later := []string{"SPOOL_NOW=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	r.spool(r.root, later, "merge", "list")
	proctest.WaitExited(t, grandchild)
	if e := r.entry(1, later); e.Status != mergequeue.Pending || e.Proc != nil {
		t.Fatalf("after recovery: %s, proc %+v", e.Status, e.Proc)
	}
}

// Concurrent submissions of one dedupe key serialize: two processes
// submitting the same workspace (same dedupe key) at once leave one active
// entry; one is new, the other an update.
func testConcurrentSubmit(t *testing.T, bin string) {
	r := newProcRepo(t, bin)
	for round := 0; round < 3; round++ {
		ws := r.worktree(fmt.Sprintf("ws%d", round))
		var wg sync.WaitGroup
		types := make([]string, 2)
		for i := range types {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := r.cmd(ws, nil, bin, "merge", "submit", "--no-push", "--json").Output()
				if err != nil {
					t.Errorf("submit: %v", err)
					return
				}
				var resp struct {
					SubmissionType string `json:"submission_type"`
				}
				json.Unmarshal(out, &resp)
				types[i] = resp.SubmissionType
			}()
		}
		wg.Wait()
		if !(types[0] == "new" && types[1] == "updated" || types[0] == "updated" && types[1] == "new") {
			t.Fatalf("round %d: submission types %v", round, types)
		}
	}
	var list struct {
		Entries []struct {
			Workspace string `json:"workspace"`
		} `json:"entries"`
	}
	json.Unmarshal([]byte(r.spool(r.root, nil, "merge", "list", "--all", "--json")), &list)
	if len(list.Entries) != 3 {
		t.Fatalf("%d entries, want 3: %+v", len(list.Entries), list.Entries)
	}
	r.spool(r.root, nil, "verify")
}

// The runner is killed with SIGKILL right after each step; while it lived
// nobody took its entry, and once it is dead the next run recovers the
// entry at once (its lease still runs: the runner's recorded process is
// gone from this machine) and merges it exactly once, losing nothing.
func testKillRunner(t *testing.T, bin, at string) {
	r := newProcRepo(t, bin)
	feat := r.worktree("feat")
	started := filepath.Join(r.scratch, "started")
	release := filepath.Join(r.scratch, "release")
	r.testWith(
		fmt.Sprintf(`["sh","-c","touch %s; while [ ! -f %s ]; do sleep 0.05; done"]`, started, release))
	r.spool(r.root, nil, "config", "set", "merge.lease", "1h") // recovery must not owe anything to the lease
	r.spool(feat, nil, "merge", "submit")
	var env []string
	pauseFile := started
	if at != "testing" {
		pauseFile = filepath.Join(r.scratch, "paused")
		env = []string{"SPOOL_TEST_MERGE_PAUSE=" + at, "SPOOL_TEST_MERGE_PAUSE_FILE=" + pauseFile}
		os.WriteFile(release, nil, 0o644) // tests pass straight away
	}
	runner := r.cmd(r.root, env, bin, "merge", "run", "--once")
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(pauseFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			runner.Process.Kill()
			t.Fatalf("runner never reached %s", at)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := mergequeue.Status(at)
	if at == "ref_updated" {
		want = mergequeue.Merging
	}
	// The runner lives (paused, or waiting for its test): another runner,
	// and any merge command, must leave its entry alone.
	if out := r.spool(r.root, nil, "merge", "run", "--once", "--json"); !strings.Contains(out, `"processed": []`) {
		t.Fatalf("a live runner's entry was taken over: %s", out)
	}
	if e := r.entry(1, nil); e.Status != want {
		t.Fatalf("with its runner alive: %s, want %s", e.Status, want)
	}
	runner.Process.Kill() // SIGKILL
	runner.Wait()
	os.WriteFile(release, nil, 0o644)

	// Its lease runs for minutes yet, but its process is gone from this
	// machine: the next run recovers the entry at once and finishes the job.
	r.spool(r.root, nil, "merge", "run", "--once")
	e := r.entry(1, nil)
	if e.Status != mergequeue.Merged {
		t.Fatalf("after recovery: %s (%s)", e.Status, e.LastError)
	}
	merged, recovered := 0, 0
	for _, h := range e.History {
		if h.To == mergequeue.Merged {
			merged++
		}
		if h.Type == mergequeue.EvRecovered {
			recovered++
			if !strings.Contains(h.Reason, "died in "+string(want)) {
				t.Errorf("recovered because %q, want its runner's death", h.Reason)
			}
		}
	}
	wantAttempts := 2
	if at == "ref_updated" {
		wantAttempts = 1 // the target already had the tested commit: merged without a second attempt
	}
	if merged != 1 || recovered != 1 || e.Attempts != wantAttempts {
		t.Fatalf("merged %d times, recovered %d times, %d attempts", merged, recovered, e.Attempts)
	}
	mainLog := r.git(r.root, "log", "--format=%s", "main")
	if strings.Count(mainLog, "feat: change") != 1 {
		t.Fatalf("main has the change %d times:\n%s", strings.Count(mainLog, "feat: change"), mainLog)
	}
	if r.git(r.remote, "rev-parse", "main") != r.git(r.root, "rev-parse", "main") {
		t.Error("remote main differs from local main")
	}
	if wt := r.git(r.root, "worktree", "list"); strings.Contains(wt, "/scratch/merge-") {
		t.Errorf("scratch worktree left:\n%s", wt)
	}
	if _, err := os.Stat(filepath.Join(r.root, "feat.txt")); err != nil {
		t.Error("primary worktree not updated")
	}
	r.spool(r.root, nil, "verify")
}

// Two clones each queue a worktree named wt, then sync: two workspaces
// (each clone's own), two active entries, and spool verify passes on
// both, which fold to the same queue.
func testClonesSameWorktreeName(t *testing.T, bin string) {
	r := newProcRepo(t, bin)
	a := r.root
	b := filepath.Join(r.scratch, "clone-b")
	r.git(r.scratch, "clone", "-q", r.remote, b)
	for i, clone := range []string{a, b} {
		wt := filepath.Join(r.scratch, fmt.Sprintf("wts-%d", i), "wt")
		branch := fmt.Sprintf("wt-%d", i)
		r.git(clone, "worktree", "add", "-q", wt, "-b", branch)
		os.WriteFile(filepath.Join(wt, branch+".txt"), []byte(branch+"\n"), 0o644)
		r.git(wt, "add", "-A")
		r.git(wt, "commit", "-q", "-m", branch+": change")
		r.spool(wt, nil, "merge", "submit")
		r.spool(clone, nil, "sync")
	}
	r.spool(a, nil, "sync")
	lists := map[string]string{}
	for _, clone := range []string{a, b} {
		r.spool(clone, nil, "verify")
		out := r.spool(clone, nil, "merge", "list", "--json")
		var list struct {
			Entries []struct {
				Workspace   string `json:"workspace"`
				WorkspaceID string `json:"workspace_id"`
				Branch      string `json:"branch"`
				Status      string `json:"status"`
			} `json:"entries"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Entries) != 2 || list.Entries[0].Workspace != "wt" || list.Entries[1].Workspace != "wt" ||
			list.Entries[0].WorkspaceID == list.Entries[1].WorkspaceID || list.Entries[0].Branch == list.Entries[1].Branch {
			t.Fatalf("%s: %s", clone, out)
		}
		lists[clone] = out
	}
	if lists[a] != lists[b] {
		t.Fatalf("the clones list different queues:\n%s\n%s", lists[a], lists[b])
	}
}
