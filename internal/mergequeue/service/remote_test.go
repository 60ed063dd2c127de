package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/projections"
)

// otherClone clones the fixture's remote (another developer, another
// train) and returns its directory.
func (f *fixture) otherClone() string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "other")
	f.Git(filepath.Dir(dir), "clone", "-q", f.Remote, dir)
	return dir
}

// pushFrom commits file in clone and pushes it to the remote's main.
func (f *fixture) pushFrom(clone, file string) string {
	f.t.Helper()
	sha := f.Commit(clone, file, file+"\n", "other clone: "+file)
	f.Git(clone, "push", "-q", "origin", "main")
	return sha
}

// Another clone pushed to the remote's main after the entry was queued:
// the train fetches the remote's main, rebases onto it (the local main is
// behind it) and pushes the entry on top, in one attempt, and brings the
// local main and its checkout along; the user's origin/main is not the
// train's to fetch.
func TestTrainRebasesOntoTheRemotesTarget(t *testing.T) {
	f := newFixture(t)
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	tracking := f.Git(f.Root, "rev-parse", "refs/remotes/origin/main")
	theirs := f.pushFrom(f.otherClone(), "theirs.txt")
	res := f.run()
	e := f.queue().Entry(1)
	if len(res) != 1 || e.Status != mergequeue.Merged || e.Attempts != 1 || e.TestedAgainstSHA != theirs {
		t.Fatalf("results %+v; entry %s after %d attempts, tested against %s (theirs %s): %s", res, e.Status, e.Attempts, e.TestedAgainstSHA, theirs, f.statuses(1))
	}
	main := f.Git(f.Root, "rev-parse", "main")
	if main != e.TestedSHA || f.Git(f.Remote, "rev-parse", "main") != main || f.Git(f.Root, "rev-parse", "main~1") != theirs {
		t.Fatalf("local main %s, remote %s, tested %s", main, f.Git(f.Remote, "rev-parse", "main"), e.TestedSHA)
	}
	for _, file := range []string{"f.txt", "theirs.txt"} {
		if _, err := os.Stat(filepath.Join(f.Root, file)); err != nil {
			t.Errorf("the checkout of main lacks %s", file)
		}
	}
	if out := f.Git(f.Root, "status", "--porcelain", "--", ".", ":(exclude).spool"); out != "" {
		t.Fatalf("the checkout of main is not clean:\n%s", out)
	}
	if got := f.Git(f.Root, "rev-parse", trainRef("origin", "main")); got != theirs {
		t.Errorf("spool's copy of origin's main is %s, want %s", got, theirs)
	}
	// The push itself moves origin/main, as any push does; the train's
	// fetches did not (it was still at the old tip before the push).
	if got := f.Git(f.Root, "rev-parse", "refs/remotes/origin/main"); got != main && got != tracking {
		t.Errorf("origin/main is %s", got)
	}
}

// The local main has commits the remote lacks and the remote's main is an
// ancestor of it: the train rebases onto the local main, as without a
// remote, and its push takes those commits along.
func TestTrainKeepsALocalTargetAhead(t *testing.T) {
	f := newFixture(t)
	mine := f.Commit(f.Root, "mine.txt", "mine\n", "local only")
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.Merged || e.TestedAgainstSHA != mine || f.Git(f.Remote, "rev-parse", "main") != e.TestedSHA {
		t.Fatalf("entry %s against %s (mine %s): %s", e.Status, e.TestedAgainstSHA, mine, e.LastError)
	}
}

// The local main and the remote's have diverged: the train gives the entry
// back (no attempt charged, main where it was), saying to pull, and a run
// does not take it again while main still lacks the remote's tip. Once
// the user has pulled, the next run merges it.
func TestTrainWaitsForADivergedTarget(t *testing.T) {
	f := newFixture(t)
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	mine := f.Commit(f.Root, "mine.txt", "mine\n", "local only")
	theirs := f.pushFrom(f.otherClone(), "theirs.txt")
	res := f.run()
	e := f.queue().Entry(1)
	if len(res) != 1 || e.Status != mergequeue.Pending || e.Attempts != 0 || !strings.HasPrefix(e.Waiting, mergequeue.WaitTargetDiverged) ||
		!strings.Contains(e.Waiting, "pull") {
		t.Fatalf("results %+v; entry %s, %d attempts, waiting %q", res, e.Status, e.Attempts, e.Waiting)
	}
	if f.Git(f.Root, "rev-parse", "main") != mine || f.Git(f.Remote, "rev-parse", "main") != theirs {
		t.Fatal("a target moved")
	}
	steps := len(f.trail(1))
	if res := f.run(); len(res) != 0 || len(f.trail(1)) != steps {
		t.Fatalf("taken again while main still lacks the remote's tip: %+v", res)
	}
	f.Git(f.Root, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
	res = f.run()
	e = f.queue().Entry(1)
	if len(res) != 1 || e.Status != mergequeue.Merged || e.Attempts != 1 || f.Git(f.Remote, "rev-parse", "main") != e.TestedSHA {
		t.Fatalf("after the pull: %+v; entry %s, %d attempts: %s", res, e.Status, e.Attempts, e.LastError)
	}
	for _, c := range []string{mine, theirs} {
		if !strings.Contains(f.Git(f.Root, "branch", "--contains", c), "main") {
			t.Errorf("main lacks %s", c)
		}
	}
}

// Another clone pushes to the remote's main while the entry is tested:
// before moving anything the train sees the remote moved, rebases onto it
// and tests again, and merges in the same attempt.
func TestTrainRemoteMovesDuringTesting(t *testing.T) {
	f := newFixture(t)
	other := f.otherClone()
	mark := filepath.Join(t.TempDir(), "pushed")
	f.config("merge.test_command", fmt.Sprintf(`["sh","-c","[ -f %[1]s ] && exit 0; touch %[1]s; cd %[2]s && echo o > o.txt && git add o.txt && git commit -qm other && git push -q origin main"]`, mark, other))
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	f.run()
	e := f.queue().Entry(1)
	theirs := f.Git(other, "rev-parse", "HEAD")
	if e.Status != mergequeue.Merged || e.Attempts != 1 || e.TestedAgainstSHA != theirs {
		t.Fatalf("entry %s after %d attempts, tested against %s (theirs %s): %s; %s", e.Status, e.Attempts, e.TestedAgainstSHA, theirs, e.LastError, f.statuses(1))
	}
	if !strings.Contains(f.statuses(1), "testing ready_to_merge rebasing testing ready_to_merge merging merged") {
		t.Errorf("audit trail %q", f.statuses(1))
	}
	if f.Git(f.Remote, "rev-parse", "main") != e.TestedSHA || f.Git(f.Root, "rev-parse", "main~1") != theirs {
		t.Fatal("the remote's main is not the entry on top of the other clone's commit")
	}
}

// The remote's main moves between the train's last look and its push (here
// while it is in merging): the remote refuses the push; the train puts its
// main back, rebases onto the remote's new tip, tests again and merges, in
// the same attempt.
func TestTrainPushRefusedRebasesAgain(t *testing.T) {
	f := newFixture(t)
	other := f.otherClone()
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	var theirs string
	r := f.runner()
	r.afterStep = func(s mergequeue.Status) {
		if s == mergequeue.Merging && theirs == "" {
			theirs = f.pushFrom(other, "theirs.txt")
		}
	}
	if _, err := r.Run(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	e := f.queue().Entry(1)
	if e.Status != mergequeue.Merged || e.Attempts != 1 || e.TestedAgainstSHA != theirs {
		t.Fatalf("entry %s after %d attempts, tested against %s (theirs %s): %s; %s", e.Status, e.Attempts, e.TestedAgainstSHA, theirs, e.LastError, f.statuses(1))
	}
	if !strings.Contains(f.statuses(1), "merging rebasing testing ready_to_merge merging merged") {
		t.Errorf("audit trail %q", f.statuses(1))
	}
	if f.Git(f.Remote, "rev-parse", "main") != e.TestedSHA || f.Git(f.Root, "rev-parse", "main") != e.TestedSHA {
		t.Fatal("local and remote main are not the merge")
	}
}

// A remote whose main moves every time the entry is tested: after a few
// rounds within one claim the train gives up the attempt, saying the
// target kept moving, rather than testing forever.
func TestTrainRemoteKeepsMoving(t *testing.T) {
	f := newFixture(t)
	other := f.otherClone()
	f.config("merge.test_command", fmt.Sprintf(`["sh","-c","cd %s && date +%%s%%N > o.txt && git add o.txt && git commit -qm other && git push -q origin main"]`, other))
	f.config("merge.max_attempts", "1")
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.FailedTerminal || e.Attempts != 1 || !strings.Contains(e.LastError, "kept moving") {
		t.Fatalf("entry %s after %d attempts: %q", e.Status, e.Attempts, e.LastError)
	}
	if n := strings.Count(f.statuses(1), "testing"); n != maxRemoteRounds+1 {
		t.Errorf("tested %d times, want %d: %s", n, maxRemoteRounds+1, f.statuses(1))
	}
}

// A lock file of git's stands in the way of moving main (a user's git
// command at the wrong moment, or one that crashed): the train waits a
// while, then gives the entry back naming the file, its attempt not
// charged and main where it was; a run does not take it again while the
// file is there, and merges it once it is gone.
func TestTrainWaitsForAGitLock(t *testing.T) {
	for _, c := range []struct{ name, lock string }{
		{"HEAD.lock", "HEAD.lock"},
		{"refs/heads/main.lock", "refs/heads/main.lock"},
		{"the remote's refs/heads/main.lock (the push)", "refs/heads/main.lock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lock := c.lock
			f := newFixture(t)
			f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
			before := f.Git(f.Root, "rev-parse", "main")
			path := filepath.Join(f.Root, ".git", filepath.FromSlash(lock))
			if strings.HasPrefix(c.name, "the remote's") {
				path = filepath.Join(f.Remote, filepath.FromSlash(lock))
			}
			r := f.runner()
			r.LockPatience = 300 * time.Millisecond
			r.afterStep = func(s mergequeue.Status) {
				if s == mergequeue.ReadyToMerge {
					os.WriteFile(path, nil, 0o644)
				}
			}
			if _, err := r.Run(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			e := f.queue().Entry(1)
			if e.Status != mergequeue.Pending || e.Attempts != 0 || !strings.HasPrefix(e.Waiting, mergequeue.WaitTargetLocked) ||
				!strings.Contains(e.Waiting, path) || len(e.ConflictPaths) != 1 || !strings.HasSuffix(e.ConflictPaths[0], lock) {
				t.Fatalf("entry %s, %d attempts, waiting %q, paths %v: %s", e.Status, e.Attempts, e.Waiting, e.ConflictPaths, f.statuses(1))
			}
			if f.Git(f.Root, "rev-parse", "main") != before || f.Git(f.Remote, "rev-parse", "main") != before {
				t.Fatal("main moved")
			}
			steps := len(f.trail(1))
			if res := f.run(); len(res) != 0 || len(f.trail(1)) != steps {
				t.Fatalf("taken again while %s is there: %+v", lock, res)
			}
			os.Remove(path)
			f.run()
			if e := f.queue().Entry(1); e.Status != mergequeue.Merged || e.Attempts != 1 || f.Git(f.Remote, "rev-parse", "main") != e.TestedSHA {
				t.Fatalf("once the lock is gone: %s, %d attempts: %s", e.Status, e.Attempts, e.LastError)
			}
		})
	}
}

// A lock held for a moment (a user's git commit) only delays the merge.
func TestTrainOutwaitsABriefGitLock(t *testing.T) {
	f := newFixture(t)
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	path := filepath.Join(f.Root, ".git", "refs", "heads", "main.lock")
	r := f.runner()
	r.afterStep = func(s mergequeue.Status) {
		if s == mergequeue.Merging {
			os.WriteFile(path, nil, 0o644)
			time.AfterFunc(200*time.Millisecond, func() { os.Remove(path) })
		}
	}
	if _, err := r.Run(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if e := f.queue().Entry(1); e.Status != mergequeue.Merged || e.Attempts != 1 {
		t.Fatalf("entry %s, %d attempts: %s; %s", e.Status, e.Attempts, e.LastError, f.statuses(1))
	}
}

// A runner died in merging after moving a local main that lagged behind
// the remote's (it rebased onto the remote's tip), before bringing the
// checkout along: recovery marks the entry merged and brings the checkout
// along from where main was (target_from_sha), not from the tested base,
// which would leave the remote's changes staged in reverse.
func TestRecoverMergingFromALaggingTarget(t *testing.T) {
	f := newFixture(t)
	resp := f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	theirs := f.pushFrom(f.otherClone(), "theirs.txt")
	f.Git(f.Root, "fetch", "-q", "origin")
	local := f.Git(f.Root, "rev-parse", "main")
	// what the runner tested: the head rebased onto the remote's tip
	scratch := filepath.Join(t.TempDir(), "scratch")
	f.Git(f.Root, "worktree", "add", "-q", "--detach", scratch, f.queue().Entry(resp.EntryID).HeadSHA)
	f.Git(scratch, "rebase", "-q", theirs)
	tested := f.Git(scratch, "rev-parse", "HEAD")
	f.Git(f.Root, "worktree", "remove", "--force", scratch)

	st := f.store(f.Root)
	pol := mergequeue.PolicyFrom(st.Config)
	drive := func(decide func(q *mergequeue.State) ([]eventlog.Draft, error)) {
		t.Helper()
		f.now = f.now.Add(time.Second)
		if _, _, err := st.Write(context.Background(), f.now, "train", []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
			return decide(queueOf(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	drive(func(q *mergequeue.State) ([]eventlog.Draft, error) {
		drafts, _ := mergequeue.DecideClaim(q, "dead", mergequeue.Target{Branch: "main", SHA: local}, pol, f.now)
		return drafts, nil
	})
	for _, to := range []mergequeue.Status{mergequeue.Rebasing, mergequeue.Testing, mergequeue.ReadyToMerge, mergequeue.Merging} {
		drive(func(q *mergequeue.State) ([]eventlog.Draft, error) {
			e := q.Entry(resp.EntryID)
			st := mergequeue.Step{EntryID: e.ID, Runner: "dead", From: e.Status, To: to, HeadSHA: e.HeadSHA, TestedSHA: tested, TestedAgainstSHA: theirs}
			if to == mergequeue.Merging {
				st.TargetFromSHA = local
			}
			return mergequeue.DecideStep(q, st, pol, f.now)
		})
	}
	if e := f.queue().Entry(resp.EntryID); e.TargetFromSHA != local {
		t.Fatalf("target_from_sha %q, want %s", e.TargetFromSHA, local)
	}
	f.Git(f.Root, "update-ref", "refs/heads/main", tested, local) // what the runner did before it died
	if _, err := recoverExpired(context.Background(), f.store(f.Root), "ada@example.com", f.now.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if e := f.queue().Entry(resp.EntryID); e.Status != mergequeue.Merged || e.TargetFromSHA != local {
		t.Fatalf("entry %s, target_from_sha %q", e.Status, e.TargetFromSHA)
	}
	if out := f.Git(f.Root, "status", "--porcelain", "--", ".", ":(exclude).spool"); out != "" {
		t.Fatalf("the checkout of main after recovery:\n%s", out)
	}
	for _, file := range []string{"f.txt", "theirs.txt"} {
		if _, err := os.Stat(filepath.Join(f.Root, file)); err != nil {
			t.Errorf("the checkout lacks %s", file)
		}
	}
	if f.Git(f.Remote, "rev-parse", "main") != tested {
		t.Error("recovery did not push main")
	}
}

// Rebasing onto the remote's tip, the merge moves the local main across the
// other clone's changes too: a checkout whose uncommitted files those
// changes touch keeps main where it is, and the entry waits for it.
func TestTrainFromALaggingTargetWaitsForItsCheckout(t *testing.T) {
	f := newFixture(t)
	f.mustSubmit(f.Worktree("feat", "f.txt", "f\n"), SubmitOptions{NoPush: true})
	f.pushFrom(f.otherClone(), "theirs.txt")
	f.Write(f.Root, "theirs.txt", "my own, untracked\n")
	before := f.Git(f.Root, "rev-parse", "main")
	f.run()
	e := f.queue().Entry(1)
	if e.Status != mergequeue.Pending || e.Attempts != 0 || !strings.HasPrefix(e.Waiting, mergequeue.WaitCheckoutDirty) ||
		strings.Join(e.ConflictPaths, ",") != "theirs.txt" {
		t.Fatalf("entry %s, %d attempts, waiting %q, paths %v", e.Status, e.Attempts, e.Waiting, e.ConflictPaths)
	}
	if f.Git(f.Root, "rev-parse", "main") != before {
		t.Fatal("main moved under a checkout in the way")
	}
	if b, _ := os.ReadFile(filepath.Join(f.Root, "theirs.txt")); string(b) != "my own, untracked\n" {
		t.Fatalf("theirs.txt: %q", b)
	}
}

// Offline: a submission whose remote does not answer is queued as
// pending_push; the train retries the push with backoff (not again before
// it is due) and, once the remote answers, records merge.pushed and merges.
func TestOfflineSubmissionPushedWithBackoff(t *testing.T) {
	f := newFixture(t)
	feat := f.Worktree("feat", "f.txt", "f\n")
	f.Git(f.Root, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "away.git"))
	resp := f.mustSubmit(feat, SubmitOptions{})
	if !resp.PendingPush || resp.Pushed || resp.Status != mergequeue.Pending {
		t.Fatalf("response %+v", resp)
	}
	r := f.runner()
	var out strings.Builder
	r.Out = &out
	for range 3 {
		if res, err := r.RunOne(context.Background()); err != nil || res != nil {
			t.Fatalf("offline: claimed %+v, %v", res, err)
		}
	}
	if n := strings.Count(out.String(), "pending_push: push of feat"); n != 1 {
		t.Fatalf("%d tries before the backoff was due:\n%s", n, out.String())
	}
	if tr := r.pushTries[f.queue().Entry(1).Ref]; tr.tries != 1 || time.Until(tr.next) < PushBackoff/2 {
		t.Fatalf("backoff %+v", tr)
	}
	f.Git(f.Root, "remote", "set-url", "origin", f.Remote)
	if res, err := r.RunOne(context.Background()); err != nil || res != nil {
		t.Fatalf("before the backoff was due: %+v, %v", res, err)
	}
	for ref, tr := range r.pushTries { // due now
		tr.next = time.Time{}
		r.pushTries[ref] = tr
	}
	res, err := r.RunOne(context.Background())
	if err != nil || res == nil || res.Status != mergequeue.Merged {
		t.Fatalf("online: %+v, %v\n%s", res, err, out.String())
	}
	if got := f.Git(f.Remote, "rev-parse", "refs/heads/feat"); got != resp.HeadSHA {
		t.Fatalf("remote feat %s, want %s", got, resp.HeadSHA)
	}
	if !strings.Contains(f.statuses(1), "pending pending claimed") {
		t.Fatalf("trail %s", f.statuses(1))
	}
}

// An offline entry's push comes from the log, which anyone who can push
// writes: a forged one must not rewind or replace a branch. The train never
// pushes its target but by merging, never forces, and the fold refuses a
// branch name git would take for something else.
func TestForgedPendingPushChangesNoBranch(t *testing.T) {
	f := newFixture(t)
	old := f.Git(f.Root, "rev-parse", "HEAD")
	f.Write(f.Root, "new.txt", "new\n")
	f.Git(f.Root, "add", "-A")
	f.Git(f.Root, "commit", "-q", "-m", "new")
	f.Git(f.Root, "branch", "release")
	f.Git(f.Root, "push", "-q", "origin", "main", "release")
	mainAt, releaseAt := f.Git(f.Remote, "rev-parse", "main"), f.Git(f.Remote, "rev-parse", "release")
	st := f.store(f.Root)
	for i, branch := range []string{"main", "release", "--force", "a..b"} {
		change := fmt.Sprintf("I%039x", i+1)
		f.now = f.now.Add(time.Second)
		if _, _, err := st.Write(context.Background(), f.now, "mallory", []string{mergequeue.Name}, func(*projections.View) ([]eventlog.Draft, error) {
			return []eventlog.Draft{{Type: mergequeue.EvSubmitted, Subject: mergequeue.Subject(int64(i + 1)), Data: mergequeue.EntryData{
				Workspace: "ws" + strconv.Itoa(i), WorkspaceID: "ws" + strconv.Itoa(i), Branch: branch, ChangeID: change,
				ChangeIDSource: "generated", DedupeKey: "ws" + strconv.Itoa(i) + ":" + change, HeadSHA: old,
				Reason: mergequeue.WaitPushPending + ": forged"}}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.queue().PushWaiting()); n != 2 {
		t.Fatalf("%d entries wait for a push, want the two with branch names git takes as branches", n)
	}
	r := f.runner()
	var out strings.Builder
	r.Out = &out
	r.RunOne(context.Background())
	if got := f.Git(f.Remote, "rev-parse", "main"); got != mainAt {
		t.Errorf("the remote's main moved to %s (was %s):\n%s", got, mainAt, out.String())
	}
	if got := f.Git(f.Remote, "rev-parse", "release"); got != releaseAt {
		t.Errorf("the remote's release moved to %s (was %s):\n%s", got, releaseAt, out.String())
	}
}
