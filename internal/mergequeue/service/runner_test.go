package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/projections"
)

func (f *fixture) trail(id int64) []mergequeue.AuditStep {
	f.t.Helper()
	steps, err := trail(context.Background(), f.store(f.Root), f.queue().Entry(id))
	if err != nil {
		f.t.Fatal(err)
	}
	return steps
}

func (f *fixture) statuses(id int64) string {
	var s []string
	for _, h := range f.trail(id) {
		s = append(s, string(h.To))
	}
	return strings.Join(s, " ")
}

// The train merges entries in position order, moves the target with the
// tested commit, pushes it and updates the checked-out primary worktree.
func TestTrainMergesInOrder(t *testing.T) {
	f := newFixture(t)
	a := f.Worktree("a", "a.txt", "a\n")
	b := f.Worktree("b", "b.txt", "b\n")
	f.mustSubmit(a, SubmitOptions{NoPush: true, Priority: mergequeue.P(2)})
	f.mustSubmit(b, SubmitOptions{NoPush: true, Priority: mergequeue.P(1)}) // more urgent: first
	f.config("merge.test_command", `["sh","-c","test -f README"]`)
	res := f.run()
	if len(res) != 2 || res[0].EntryID != 2 || res[1].EntryID != 1 || res[0].Status != mergequeue.Merged || res[1].Status != mergequeue.Merged {
		t.Fatalf("results %+v", res)
	}
	q := f.queue()
	main := f.Git(f.Root, "rev-parse", "main")
	if main != q.Entry(1).TestedSHA || f.Git(f.Remote, "rev-parse", "main") != main {
		t.Fatalf("target %s, tested %s", main, q.Entry(1).TestedSHA)
	}
	for _, file := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(f.Root, file)); err != nil {
			t.Errorf("primary worktree lacks %s", file)
		}
	}
	if got := f.statuses(1); got != "pending claimed rebasing testing ready_to_merge merging merged" {
		t.Errorf("audit trail %q", got)
	}
	for _, h := range f.trail(1)[1:] { // every step of the train, the claim included
		if h.HeadSHA != q.Entry(1).HeadSHA {
			t.Errorf("step %s lacks head_sha", h.To)
		}
		if h.TestedAgainstSHA == "" {
			t.Errorf("step %s lacks tested_against_sha", h.To)
		}
	}
	if _, err := os.Stat(filepath.Join(q.Entry(1).RunDir, mergequeue.TestLog)); err != nil || !strings.Contains(q.Entry(1).RunDir, "/runs/merge/"+q.Entry(1).Ref+"/") {
		t.Error("no test output kept")
	}
	if out := f.Git(f.Root, "worktree", "list"); strings.Contains(out, "/scratch/merge-") {
		t.Errorf("scratch worktree left behind:\n%s", out)
	}
	if f.Git(f.Root, "status", "--porcelain", "--", ".", ":(exclude).spool") != "" {
		t.Error("primary worktree not clean after the merge")
	}
	if res := f.run(); len(res) != 0 {
		t.Fatalf("second run processed %v", res)
	}
}

func TestTrainRebaseConflict(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "README", "feature's hello\n")
	f.Commit(f.Root, "README", "main's hello\n", "main changes README")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	before := f.Git(f.Root, "rev-parse", "main")
	res := f.run()
	e := f.queue().Entry(1)
	if len(res) != 1 || e.Status != mergequeue.FailedTerminal || len(e.ConflictPaths) != 1 || e.ConflictPaths[0] != "README" {
		t.Fatalf("results %+v, entry %s %v %q", res, e.Status, e.ConflictPaths, e.LastError)
	}
	if f.Git(f.Root, "rev-parse", "main") != before {
		t.Fatal("target moved after a conflict")
	}
}

func TestTrainFailingThenPassingTest(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	mark := filepath.Join(t.TempDir(), "passed-once")
	f.config("merge.test_command", `["sh","-c","if [ -f `+mark+` ]; then echo ok; exit 0; fi; touch `+mark+`; echo broken; exit 1"]`)
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.FailedRetryable || e.Attempts != 1 || !strings.Contains(e.LastError, "exited 1") {
		t.Fatalf("first run: %s %d %q", e.Status, e.Attempts, e.LastError)
	}
	log, _ := os.ReadFile(filepath.Join(e.RunDir, mergequeue.TestLog))
	if strings.TrimSpace(string(log)) != "broken" {
		t.Errorf("test.log %q", log)
	}
	_, _, err := f.service(f.Root, "ada@example.com").Retry(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	f.run()
	e = f.queue().Entry(1)
	if e.Status != mergequeue.Merged || e.Attempts != 2 || f.Git(f.Root, "rev-parse", "main") != e.TestedSHA {
		t.Fatalf("second run: %s after %d attempts", e.Status, e.Attempts)
	}
}

func TestTrainTestTimeoutAndAttempts(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.config("merge.test_command", `["sleep","30"]`)
	f.config("merge.test_timeout", `"1s"`)
	f.config("merge.max_attempts", "1")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	start := time.Now()
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.FailedTerminal || !strings.Contains(e.LastError, "timed out") || time.Since(start) > 20*time.Second {
		t.Fatalf("%s %q", e.Status, e.LastError)
	}
}

// The target moves while the entry is being tested: the train rebases and
// tests again before merging, so main gets both changes.
func TestTrainTargetMovesDuringTesting(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	other := f.Worktree("other", "o.txt", "o\n")
	otherSHA := f.Git(other, "rev-parse", "HEAD")
	mark := filepath.Join(t.TempDir(), "moved")
	// first test run: someone else lands "other" on main
	f.config("merge.test_command", `["sh","-c","[ -f `+mark+` ] || { touch `+mark+`; git -C \"$SPOOL_MERGE_REPO\" update-ref refs/heads/main `+otherSHA+`; }"]`)
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.Merged || e.TestedAgainstSHA != otherSHA {
		t.Fatalf("%s, tested against %s (other is %s): %s", e.Status, e.TestedAgainstSHA, otherSHA, f.statuses(1))
	}
	if !strings.Contains(f.statuses(1), "ready_to_merge rebasing testing ready_to_merge merging merged") {
		t.Errorf("audit trail %q", f.statuses(1))
	}
	main := f.Git(f.Root, "rev-parse", "main")
	if main != e.TestedSHA || f.Git(f.Root, "merge-base", "--is-ancestor", otherSHA, main) != "" {
		t.Fatal("main lost a change")
	}
}

// Cancelling an entry the train holds makes the runner's next step lose its
// compare-and-set: the train stops and leaves the target alone.
func TestTrainLosesCancelledEntry(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	before := f.Git(f.Root, "rev-parse", "main")
	r := f.runner()
	r.afterStep = func(s mergequeue.Status) {
		if s != mergequeue.Testing {
			return
		}
		_, _, err := f.service(f.Root, "ada@example.com").Cancel(context.Background(), "1", "changed my mind")
		if err != nil {
			t.Error(err)
		}
	}
	res, err := r.RunOne(context.Background())
	if err != nil || res == nil || !strings.Contains(res.Reason, mergequeue.CodeConcurrentModification.Name) && !strings.Contains(res.Reason, "changed while") {
		t.Fatalf("result %+v, %v", res, err)
	}
	e := f.queue().Entry(1)
	if e.Status != mergequeue.Cancelled || f.Git(f.Root, "rev-parse", "main") != before {
		t.Fatalf("entry %s; main moved: %v", e.Status, f.Git(f.Root, "rev-parse", "main") != before)
	}
}

// deadInMerging has runner "dead" claim the entry for target and take it
// through every step to merging, testing its head against target.SHA, as a
// runner that died while merging leaves it; it returns the head.
func (f *fixture) deadInMerging(id int64, target mergequeue.Target) (head string) {
	f.t.Helper()
	st := f.store(f.Root)
	pol := mergequeue.PolicyFrom(st.Config)
	drive := func(decide func(q *mergequeue.State) ([]eventlog.Draft, error)) {
		f.t.Helper()
		f.now = f.now.Add(time.Second)
		if _, _, err := st.Write(context.Background(), f.now, "train", []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
			return decide(queueOf(v))
		}); err != nil {
			f.t.Fatal(err)
		}
	}
	drive(func(q *mergequeue.State) ([]eventlog.Draft, error) {
		drafts, _ := mergequeue.DecideClaim(q, "dead", target, pol, f.now)
		return drafts, nil
	})
	head = f.queue().Entry(id).HeadSHA
	for _, to := range []mergequeue.Status{mergequeue.Rebasing, mergequeue.Testing, mergequeue.ReadyToMerge, mergequeue.Merging} {
		drive(func(q *mergequeue.State) ([]eventlog.Draft, error) {
			e := q.Entry(id)
			return mergequeue.DecideStep(q, mergequeue.Step{EntryID: e.ID, Runner: "dead", From: e.Status, To: to, HeadSHA: head, TestedSHA: head, TestedAgainstSHA: target.SHA}, pol, f.now)
		})
	}
	return head
}

// A runner that died in merging, with a target git can no longer resolve,
// must not leave its entry stuck: recovery puts it back to pending.
func TestRecoverMergingWhenTargetIsGone(t *testing.T) {
	f := newFixture(t)
	ws := f.Worktree("feat", "f.txt", "f\n")
	resp := f.mustSubmit(ws, SubmitOptions{NoPush: true})
	f.deadInMerging(resp.EntryID, mergequeue.Target{Branch: "gone"})
	if got := f.queue().Entry(resp.EntryID).Status; got != mergequeue.Merging {
		t.Fatalf("set-up: entry is %s", got)
	}
	if _, err := recoverExpired(context.Background(), f.store(f.Root), "ada@example.com", f.now.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if got := f.queue().Entry(resp.EntryID).Status; got != mergequeue.Pending {
		t.Fatalf("after recovery the entry is %s, want pending (target branch gone is not merged)", got)
	}
}

// A runner that died in merging after moving the target, before bringing
// its checkout along: recovery marks the entry merged and tries to bring
// the checkout along. When it cannot (the checkout has an untracked file
// the merge adds), the edit is left alone and the command warns, saying
// what to run, instead of dropping the error.
func TestRecoverWarnsWhenCheckoutStaysBehind(t *testing.T) {
	f := newFixture(t)
	ws := f.Worktree("feat", "f.txt", "f\n")
	resp := f.mustSubmit(ws, SubmitOptions{NoPush: true})
	f.Git(f.Root, "remote", "remove", "origin")
	old := f.Git(f.Root, "rev-parse", "main")
	head := f.deadInMerging(resp.EntryID, mergequeue.Target{Branch: "main", SHA: old})
	f.Git(f.Root, "update-ref", "refs/heads/main", head, old) // what the runner did before it died
	f.Write(f.Root, "f.txt", "mine\n")                        // untracked, in the merge's way
	var warnings []string
	if _, err := recoverExpired(context.Background(), f.store(f.Root), "ada@example.com", f.now.Add(time.Hour), func(m string) { warnings = append(warnings, m) }); err != nil {
		t.Fatal(err)
	}
	if got := f.queue().Entry(resp.EntryID).Status; got != mergequeue.Merged {
		t.Fatalf("entry is %s, want merged", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "merge entry 1") || !strings.Contains(warnings[0], "git read-tree -m -u "+old+" "+head) {
		t.Fatalf("warnings %q", warnings)
	}
	if b, _ := os.ReadFile(filepath.Join(f.Root, "f.txt")); string(b) != "mine\n" {
		t.Fatalf("f.txt: %q", b)
	}
	// once the path is clean, the command the warning gives brings it along
	os.Remove(filepath.Join(f.Root, "f.txt"))
	f.Git(f.Root, "read-tree", "-m", "-u", old, head)
	if out := f.Git(f.Root, "status", "--porcelain", "--untracked-files=no"); out != "" {
		t.Fatalf("after the suggested command: %s", out)
	}
}

// A runner that died in testing recorded its test command's process group:
// recovery kills the group if it is still alive and still ours, and leaves
// alone a process that merely has the recorded pid (another start time).
func TestRecoverKillsRecordedTestGroup(t *testing.T) {
	for _, ours := range []bool{true, false} {
		t.Run(fmt.Sprintf("ours=%v", ours), func(t *testing.T) {
			f := newFixture(t)
			ws := f.Worktree("feat", "f.txt", "f\n")
			resp := f.mustSubmit(ws, SubmitOptions{NoPush: true})
			p, err := proc.Start(context.Background(), proc.Cmd{Argv: []string{"sleep", "300"}})
			if err != nil {
				t.Fatal(err)
			}
			rec := p.Record()
			t.Cleanup(func() { syscall.Kill(-rec.PGID, syscall.SIGKILL) })
			recorded := mergequeue.ProcRecord(rec)
			if !ours {
				recorded.Start++ // the pid now belongs to another process
			}
			st := f.store(f.Root)
			pol := mergequeue.PolicyFrom(st.Config)
			decide := func(decide func(q *mergequeue.State, e *mergequeue.Entry) ([]eventlog.Draft, error)) {
				t.Helper()
				f.now = f.now.Add(time.Second)
				if _, _, err := st.Write(context.Background(), f.now, "train", []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
					return decide(queueOf(v), queueOf(v).Entry(resp.EntryID))
				}); err != nil {
					t.Fatal(err)
				}
			}
			decide(func(q *mergequeue.State, _ *mergequeue.Entry) ([]eventlog.Draft, error) {
				drafts, _ := mergequeue.DecideClaim(q, "dead", mergequeue.Target{Branch: "main"}, pol, f.now)
				return drafts, nil
			})
			for _, to := range []mergequeue.Status{mergequeue.Rebasing, mergequeue.Testing} {
				decide(func(q *mergequeue.State, e *mergequeue.Entry) ([]eventlog.Draft, error) {
					return mergequeue.DecideStep(q, mergequeue.Step{EntryID: e.ID, Runner: "dead", From: e.Status, To: to, HeadSHA: e.HeadSHA}, pol, f.now)
				})
			}
			decide(func(q *mergequeue.State, e *mergequeue.Entry) ([]eventlog.Draft, error) {
				return mergequeue.DecideProcStarted(q, e.ID, "dead", recorded, pol, f.now)
			})
			if e := f.queue().Entry(resp.EntryID); e.Proc == nil || *e.Proc != recorded {
				t.Fatalf("recorded %+v", e.Proc)
			}
			if _, err := recoverExpired(context.Background(), f.store(f.Root), "ada@example.com", f.now.Add(time.Hour), nil); err != nil {
				t.Fatal(err)
			}
			if e := f.queue().Entry(resp.EntryID); e.Status != mergequeue.Pending || e.Proc != nil {
				t.Fatalf("after recovery: %s, proc %+v", e.Status, e.Proc)
			}
			if !ours {
				if !proc.Alive(rec) {
					t.Fatal("recovery killed a process that is not ours")
				}
				return
			}
			waited := make(chan error, 1)
			go func() { waited <- p.Wait() }()
			select {
			case err := <-waited:
				var exitErr *proc.ExitError
				if !errors.As(err, &exitErr) || exitErr.Signal != syscall.SIGKILL {
					t.Fatalf("the test command ended with %v, want killed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("recovery did not kill the recorded group")
			}
		})
	}
}

// The audit trail finds an entry's events by ref and says which ones the
// fold skipped or resolved otherwise (events clones appended concurrently).
func TestTrailMarksConflicts(t *testing.T) {
	f := newFixture(t)
	resp := f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	st := f.store(f.Root)
	pol := mergequeue.PolicyFrom(st.Config)
	write := func(drafts ...eventlog.Draft) {
		t.Helper()
		f.now = f.now.Add(time.Second)
		if _, _, err := st.Write(context.Background(), f.now, "ada@example.com", []string{mergequeue.Name}, func(*projections.View) ([]eventlog.Draft, error) {
			return drafts, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	q := f.queue()
	e := q.Entry(resp.EntryID)
	claim, _ := mergequeue.DecideClaim(q, "ra", mergequeue.Target{Branch: "main"}, pol, f.now)
	// another clone's train claimed it too (it saw it pending), under a number of its own
	other := claim[0]
	d := other.Data.(mergequeue.EntryData)
	d.Runner, d.EntryID = "rb", 7
	other.Data, other.Subject = d, mergequeue.Subject(7)
	// and another clone queued the same key: a duplicate
	dup := mergequeue.EntryData{EntryID: 2, To: mergequeue.Pending, Workspace: e.Workspace, WorkspaceID: e.WorkspaceID, Branch: e.Branch,
		ChangeID: e.ChangeID, ChangeIDSource: e.ChangeIDSource, DedupeKey: e.DedupeKey, HeadSHA: e.HeadSHA, Priority: mergequeue.P(2)}
	write(claim...)
	write(other, eventlog.Draft{Type: mergequeue.EvSubmitted, Subject: mergequeue.Subject(2), Data: dup})
	trail := f.trail(resp.EntryID)
	if len(trail) != 3 || trail[1].Runner != "ra" || trail[1].Skipped != "" || trail[2].Runner != "rb" || !strings.Contains(trail[2].Skipped, "held by runner ra") {
		t.Fatalf("trail %+v", trail)
	}
	q = f.queue()
	loser := q.Entry(2)
	lt := f.trail(2)
	if loser.Status != mergequeue.Cancelled || len(lt) != 1 || lt[0].To != mergequeue.Cancelled || !strings.Contains(lt[0].Reason, "duplicate of entry 1") {
		t.Fatalf("duplicate: %s, trail %+v", loser.Status, lt)
	}
}

// lines is a file of n numbered lines, line k replaced by what when k > 0.
func lines(n, k int, what string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i == k {
			b.WriteString(what + "\n")
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	return b.String()
}

// The primary worktree has main checked out with an uncommitted edit to a
// file the change also touches: the train does not move main (which would
// leave the checkout with the merge staged in reverse), keeps the entry
// waiting with the reason and the paths, and merges once the edit is
// stashed. The user's edit is never lost.
func TestTrainWaitsForDirtyCheckout(t *testing.T) {
	f := newFixture(t)
	f.Commit(f.Root, "README", lines(10, 0, ""), "a longer README")
	f.Git(f.Root, "push", "-q", "origin", "main")
	feat := f.Worktree("feat", "README", lines(10, 10, "feature's line 10"))
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	edit := lines(10, 1, "my uncommitted line 1")
	f.Write(f.Root, "README", edit)
	before := f.Git(f.Root, "rev-parse", "main")

	res := f.run()
	e := f.queue().Entry(1)
	if len(res) != 1 || res[0].Status != mergequeue.Pending || e.Status != mergequeue.Pending {
		t.Fatalf("results %+v, entry %s", res, e.Status)
	}
	if got := f.Git(f.Root, "rev-parse", "main"); got != before {
		t.Fatal("main moved under a checkout with a conflicting edit")
	}
	if b, _ := os.ReadFile(filepath.Join(f.Root, "README")); string(b) != edit {
		t.Fatalf("the user's edit is gone:\n%s", b)
	}
	if out := f.Git(f.Root, "diff", "--cached", "--name-only"); out != "" {
		t.Fatalf("git diff --cached shows %s", out)
	}
	if !strings.HasPrefix(e.Waiting, mergequeue.WaitCheckoutDirty) || strings.Join(e.ConflictPaths, ",") != "README" || e.Attempts != 0 {
		t.Fatalf("waiting %q, paths %v, attempts %d", e.Waiting, e.ConflictPaths, e.Attempts)
	}
	// Still dirty: the train leaves it waiting rather than testing it again.
	steps := len(f.trail(1))
	if res := f.run(); len(res) != 0 || len(f.trail(1)) != steps {
		t.Fatalf("claimed again while the checkout is dirty: %+v", res)
	}
	// Stashed: the next run merges, and the edit comes back on top.
	f.Git(f.Root, "stash", "-q")
	res = f.run()
	e = f.queue().Entry(1)
	if len(res) != 1 || e.Status != mergequeue.Merged || f.Git(f.Root, "rev-parse", "main") != e.TestedSHA || e.Waiting != "" {
		t.Fatalf("after stashing: %+v, entry %s %q", res, e.Status, e.Waiting)
	}
	f.Git(f.Root, "stash", "pop", "-q")
	if b, _ := os.ReadFile(filepath.Join(f.Root, "README")); !strings.Contains(string(b), "my uncommitted line 1") || !strings.Contains(string(b), "feature's line 10") {
		t.Fatalf("README after stash pop:\n%s", b)
	}
	if out := f.Git(f.Root, "diff", "--cached", "--name-only"); out != "" {
		t.Fatalf("git diff --cached shows %s", out)
	}
}

// Uncommitted edits to other files are carried, as git merge --ff-only
// carries them: the merge happens, staged stays staged, unstaged unstaged.
func TestTrainCarriesUnrelatedEdits(t *testing.T) {
	f := newFixture(t)
	f.Commit(f.Root, "other.txt", "other\n", "other")
	f.Commit(f.Root, "staged.txt", "staged\n", "staged")
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	f.Write(f.Root, "other.txt", "my edit\n")
	f.Write(f.Root, "staged.txt", "my staged edit\n")
	f.Git(f.Root, "add", "staged.txt")
	f.Write(f.Root, "untracked.txt", "mine\n")
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.Merged || f.Git(f.Root, "rev-parse", "main") != e.TestedSHA {
		t.Fatalf("entry %s: %s", e.Status, e.LastError)
	}
	if _, err := os.Stat(filepath.Join(f.Root, "f.txt")); err != nil {
		t.Fatal("the checkout lacks the merged file")
	}
	staged, unstaged := f.Git(f.Root, "diff", "--cached", "--name-only"), f.Git(f.Root, "diff", "--name-only")
	untracked := f.Git(f.Root, "ls-files", "--others", "--exclude-standard", "--", ".", ":(exclude).spool")
	if staged != "staged.txt" || unstaged != "other.txt" || untracked != "untracked.txt" {
		t.Fatalf("staged %q, unstaged %q, untracked %q", staged, unstaged, untracked)
	}
	if b, _ := os.ReadFile(filepath.Join(f.Root, "other.txt")); string(b) != "my edit\n" {
		t.Fatalf("other.txt: %q", b)
	}
}

// The checkout becomes dirty between the check and the update (a race):
// the train puts main back and waits, as if it had seen the edit.
func TestTrainPutsTargetBackWhenCheckoutUpdateFails(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "README", "feature's hello\n")
	f.mustSubmit(feat, SubmitOptions{NoPush: true})
	before := f.Git(f.Root, "rev-parse", "main")
	r := f.runner()
	r.afterStep = func(s mergequeue.Status) {
		if s == mergequeue.Merging {
			f.Write(f.Root, "README", "my racing edit\n")
		}
	}
	res, err := r.RunOne(context.Background())
	if err != nil || res == nil {
		t.Fatalf("%+v, %v", res, err)
	}
	e := f.queue().Entry(1)
	if got := f.Git(f.Root, "rev-parse", "main"); got != before || e.Status != mergequeue.Pending {
		t.Fatalf("main %s (was %s), entry %s: %s", got, before, e.Status, f.statuses(1))
	}
	if b, _ := os.ReadFile(filepath.Join(f.Root, "README")); string(b) != "my racing edit\n" {
		t.Fatalf("README: %q", b)
	}
	if out := f.Git(f.Root, "diff", "--cached", "--name-only"); out != "" {
		t.Fatalf("git diff --cached shows %s", out)
	}
	if !strings.HasPrefix(e.Waiting, mergequeue.WaitCheckoutDirty) || e.Attempts != 0 {
		t.Fatalf("waiting %q, attempts %d", e.Waiting, e.Attempts)
	}
	if f.Git(f.Remote, "rev-parse", "main") != before {
		t.Fatal("the remote got main")
	}
}

// Recovery takes an entry before its lease runs out only when its runner's
// recorded process is certainly gone from this machine: never one held by
// this process, by a live process, or by a process of another boot (another
// machine), nor one whose claim recorded no process (an older spool).
func TestRecoverDeadHolder(t *testing.T) {
	self := mergequeue.ProcRecord(proc.Self())
	if self.Start == 0 {
		t.Skip("no start times here: only leases tell")
	}
	started := func(argv ...string) (*proc.Process, *mergequeue.ProcRecord) {
		p, err := proc.Start(context.Background(), proc.Cmd{Argv: argv})
		if err != nil {
			t.Fatal(err)
		}
		r := mergequeue.ProcRecord(p.Record())
		return p, &r
	}
	live, liveRec := started("sleep", "300")
	t.Cleanup(func() { proc.KillGroup(live.Record()); live.Wait() })
	exited, deadRec := started("sleep", "300") // alive while Start reads its start time
	proc.KillGroup(exited.Record())
	exited.Wait()
	otherBoot := *liveRec
	otherBoot.Boot = "another-machine"
	for _, c := range []struct {
		name      string
		holder    *mergequeue.ProcRecord
		recovered bool
	}{
		{"this process", &self, false},
		{"a live process", liveRec, false},
		{"a process of another boot", &otherBoot, false},
		{"no record", nil, false},
		{"a process that exited", deadRec, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
			st := f.store(f.Root)
			pol := mergequeue.PolicyFrom(st.Config)
			if _, _, err := st.Write(context.Background(), f.now, "train", []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
				drafts, _ := mergequeue.DecideClaimHeld(queueOf(v), "r1", c.holder, mergequeue.Target{Branch: "main"}, pol, f.now)
				return drafts, nil
			}); err != nil {
				t.Fatal(err)
			}
			// a minute in: the lease (five) runs for a while yet
			events, err := recoverExpired(context.Background(), f.store(f.Root), "ada@example.com", f.now.Add(time.Minute), nil)
			if err != nil {
				t.Fatal(err)
			}
			e := f.queue().Entry(resp.EntryID)
			if got := e.Status == mergequeue.Pending; got != c.recovered || (len(events) > 0) != c.recovered {
				t.Fatalf("entry %s after %d recovery events, want recovered %v", e.Status, len(events), c.recovered)
			}
			if c.recovered && (e.Attempts != 1 || !strings.Contains(e.LastError, "died in claimed")) {
				t.Fatalf("attempts %d, last error %q", e.Attempts, e.LastError)
			}
			if got := NeedsRecovery(f.queue(), f.now.Add(time.Minute)); got {
				t.Fatal("still needs recovery")
			}
		})
	}
}

// The train's scratch worktree is spool's own path, derived from the
// entry (.git/spool/scratch/merge-<ref>), made while the entry is tested
// and gone once it merged.
func TestTrainScratchIsDerivedFromTheEntry(t *testing.T) {
	f := newFixture(t)
	ws := f.Worktree("feat", "f.txt", "f\n")
	resp := f.mustSubmit(ws, SubmitOptions{NoPush: true})
	want := ScratchPath(f.store(f.Root).Repo, resp.EntryID, resp.EntryRef)
	if !strings.HasPrefix(want, filepath.Join(f.Root, ".git", "spool", "scratch", "merge-")) || !strings.HasSuffix(want, resp.EntryRef) {
		t.Fatalf("scratch path %s", want)
	}
	r := f.runner()
	seen := false
	r.afterStep = func(s mergequeue.Status) {
		if s == mergequeue.Testing {
			_, err := os.Stat(filepath.Join(want, "f.txt"))
			seen = err == nil && strings.Contains(f.Git(f.Root, "worktree", "list"), want)
		}
	}
	if res, err := r.Run(context.Background(), true); err != nil || len(res) != 1 || res[0].Status != mergequeue.Merged {
		t.Fatalf("run: %+v %v", res, err)
	}
	if !seen {
		t.Fatalf("no scratch worktree at %s while testing", want)
	}
	if e := f.queue().Entry(resp.EntryID); e.ScratchDir != "" {
		t.Fatalf("a merged entry keeps scratch_dir %q", e.ScratchDir)
	}
	if _, err := os.Lstat(want); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("scratch left behind: %v", err)
	}
}

// Recovery removes the scratch worktree this clone's train would have made
// for the entry, never the scratch_dir an event names: a forged
// merge.transitioned naming another directory must leave it whole.
func TestRecoverRemovesOnlyTheDerivedScratch(t *testing.T) {
	f := newFixture(t)
	ws := f.Worktree("feat", "f.txt", "f\n")
	resp := f.mustSubmit(ws, SubmitOptions{NoPush: true})
	victim := filepath.Join(t.TempDir(), "victim")
	f.Write(victim, "keep.txt", "precious\n")
	st := f.store(f.Root)
	pol := mergequeue.PolicyFrom(st.Config)
	decide := func(decide func(q *mergequeue.State, e *mergequeue.Entry) ([]eventlog.Draft, error)) {
		t.Helper()
		f.now = f.now.Add(time.Second)
		if _, _, err := st.Write(context.Background(), f.now, "mallory", []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
			return decide(queueOf(v), queueOf(v).Entry(resp.EntryID))
		}); err != nil {
			t.Fatal(err)
		}
	}
	decide(func(q *mergequeue.State, _ *mergequeue.Entry) ([]eventlog.Draft, error) {
		drafts, _ := mergequeue.DecideClaim(q, "dead", mergequeue.Target{Branch: "main"}, pol, f.now)
		return drafts, nil
	})
	decide(func(q *mergequeue.State, e *mergequeue.Entry) ([]eventlog.Draft, error) {
		return mergequeue.DecideStep(q, mergequeue.Step{EntryID: e.ID, Runner: "dead", From: e.Status, To: mergequeue.Rebasing,
			HeadSHA: e.HeadSHA, ScratchDir: victim}, pol, f.now)
	})
	if e := f.queue().Entry(resp.EntryID); e.ScratchDir != victim {
		t.Fatalf("set-up: scratch_dir %q", e.ScratchDir)
	}
	// What the dead runner made: its scratch worktree, at the derived path.
	own := ScratchPath(st.Repo, resp.EntryID, resp.EntryRef)
	os.MkdirAll(filepath.Dir(own), 0o755)
	f.Git(f.Root, "worktree", "add", "-q", "--detach", own, "HEAD")

	if _, err := recoverExpired(context.Background(), f.store(f.Root), "ada@example.com", f.now.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if got := f.queue().Entry(resp.EntryID).Status; got != mergequeue.Pending {
		t.Fatalf("after recovery: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(victim, "keep.txt")); err != nil || string(b) != "precious\n" {
		t.Fatalf("recovery removed the directory the event named: %q %v", b, err)
	}
	if _, err := os.Lstat(own); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dead runner's scratch is left: %v", err)
	}
	if out := f.Git(f.Root, "worktree", "list"); strings.Contains(out, own) {
		t.Fatalf("still registered:\n%s", out)
	}
}
