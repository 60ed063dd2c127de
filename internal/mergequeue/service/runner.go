package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// Runner is one merge train process.
type Runner struct {
	outMu sync.Mutex

	Store  *store.Store
	Actor  string
	Now    func() time.Time
	Target string       // branch the train moves (merge.target unless overridden)
	Out    io.Writer    // one line per step, for people
	ID     string       // identifies this runner's leases
	Warn   func(string) // what recovery could not finish; nil drops it

	// WatchEvery is how often, while an entry's test command runs, the
	// runner reads the queue to see whether the entry is still its own (a
	// merge cancel, a recovery by another process): if not, it ends the
	// test command's process group at once rather than at merge.test_timeout.
	// 0 is DefaultWatchEvery.
	WatchEvery time.Duration

	// LockPatience is how long a lock file of git's may stand in the way
	// of moving or pushing the target before the entry is given back
	// (WaitTargetLocked); 0 is 10 s.
	LockPatience time.Duration

	// PauseAt and PauseFile let crash tests stop the runner right after a
	// step: it writes PauseFile and blocks until killed. Set from the
	// SPOOL_TEST_MERGE_PAUSE(_FILE) environment variables by the CLI.
	PauseAt, PauseFile string

	afterStep func(mergequeue.Status) // tests: act between two steps

	remoteOnce sync.Once
	remoteName string // merge.remote when it exists, else ""

	passed map[int64]bool // entries this --once run gave back (Target.Passed)

	pushTries map[string]pushTry // pending_push entries by ref: the push's backoff
}

// pushTry is the backoff of an offline entry's push: tries so far, and when
// the next one is due (this process's own clock: when to retry a side
// effect, never a decision).
type pushTry struct {
	tries int
	next  time.Time
}

// PushBackoff is the wait after the first failed retry of an offline
// entry's push; it doubles with each failure, up to MaxPushBackoff.
const (
	PushBackoff    = 5 * time.Second
	MaxPushBackoff = 5 * time.Minute
)

// PushTimeout bounds one retry of an offline entry's push: a remote that
// does not answer (a host down, a firewall dropping packets) must not hold
// the train for a TCP timeout.
const PushTimeout = time.Minute

// pushAt pushes e's head to its branch on remote, unattended: no terminal
// to ask for a password on, killed whole at PushTimeout or when spool dies.
func (r *Runner) pushAt(ctx context.Context, remote string, e *mergequeue.Entry) error {
	pctx, cancel := context.WithTimeout(ctx, PushTimeout)
	defer cancel()
	return git.PushBranchAt(git.Unattended(pctx), r.Store.Repo.Root, remote, e.HeadSHA, e.Branch)
}

// pushWaiting pushes the branch of each entry queued offline
// (mergequeue.WaitPushPending) whose backoff is due, and records each that
// reached the remote (merge.pushed): the train then takes it in its turn.
// It reports whether it recorded one.
func (r *Runner) pushWaiting(ctx context.Context, q *mergequeue.State) bool {
	waiting := q.PushWaiting()
	if len(waiting) == 0 {
		return false
	}
	remote := r.remote(ctx)
	recorded := false
	for _, e := range waiting {
		t := r.pushTries[e.Ref]
		if time.Now().Before(t.next) {
			continue
		}
		if e.Branch == r.Target {
			continue // the log names it; the train never pushes its target but by merging
		}
		if _, err := git.RevParse(ctx, r.Store.Repo.Root, e.HeadSHA); err != nil {
			continue // a commit only the submitting clone has: its own train or watch pushes it
		}
		note := "pushed " + e.Branch + " to " + remote
		if remote == "" {
			note = "not pushed: no remote to push to (merge.remote is \"\" or does not exist)"
		} else if err := r.pushAt(ctx, remote, e); err != nil {
			t.tries++
			wait := min(PushBackoff<<min(t.tries-1, 16), MaxPushBackoff)
			t.next = time.Now().Add(wait)
			if r.pushTries == nil {
				r.pushTries = map[string]pushTry{}
			}
			r.pushTries[e.Ref] = t
			r.logf("entry %d: %s: push of %s to %s failed (try %d: %s); next try in %s", e.ID, mergequeue.WaitPushPending, e.Branch, remote, t.tries,
				firstLine(err.Error()), wait)
			continue
		}
		_, _, err := r.Store.Write(context.WithoutCancel(ctx), r.Now(), r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
			return mergequeue.DecidePushed(queueOf(v), e.Ref, e.HeadSHA, note)
		})
		delete(r.pushTries, e.Ref)
		if err != nil {
			r.logf("entry %d: %s, but not recorded: %v", e.ID, note, err) // updated meanwhile: its new head waits, or was pushed
			continue
		}
		r.logf("entry %d: %s", e.ID, note)
		recorded = true
	}
	return recorded
}

// remote is the remote the target is pushed to, or "" when there is none;
// asked once per run.
func (r *Runner) remote(ctx context.Context) string {
	r.remoteOnce.Do(func() {
		if name := mergequeue.SettingsFrom(r.Store.Config).Remote; git.RemoteExists(ctx, r.Store.Repo.Root, name) {
			r.remoteName = name
		}
	})
	return r.remoteName
}

// Result is what happened to one entry.
type Result struct {
	EntryID   int64             `json:"entry_id"`
	Status    mergequeue.Status `json:"status"`
	TestedSHA string            `json:"tested_sha,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	// Where the time went, in milliseconds: the whole entry, the rebase
	// (scratch worktree included) and the test command; the rest is the
	// train's own overhead.
	ElapsedMS float64 `json:"elapsed_ms"`
	RebaseMS  float64 `json:"rebase_ms"`
	TestMS    float64 `json:"test_ms"`
}

// NewRunnerID returns a fresh runner id.
func NewRunnerID(actor string) string {
	var b [6]byte
	rand.Read(b[:])
	return actor + "/" + hex.EncodeToString(b[:])
}

func (r *Runner) policy() mergequeue.Policy { return mergequeue.PolicyFrom(r.Store.Config) }

func (r *Runner) logf(format string, args ...any) {
	if r.Out != nil {
		r.outMu.Lock() // the lease renewal logs from its own goroutine
		defer r.outMu.Unlock()
		fmt.Fprintf(r.Out, format+"\n", args...)
	}
}

// Run processes pending entries in position order. With once it stops when
// the queue is empty (or frozen); otherwise it waits for more until ctx ends.
func (r *Runner) Run(ctx context.Context, once bool) ([]Result, error) {
	var results []Result
	r.passed = nil
	for {
		if _, err := recoverExpired(ctx, r.Store, r.Actor, r.Now(), r.Warn); err != nil {
			return results, err
		}
		res, err := r.RunOne(ctx)
		if err != nil {
			return results, err
		}
		if res != nil {
			results = append(results, *res)
			if once && res.Status == mergequeue.Pending {
				// Given back to wait: not again in this run, whatever it
				// waits for (a lock on the remote cannot be looked at).
				if r.passed == nil {
					r.passed = map[int64]bool{}
				}
				r.passed[res.EntryID] = true
			}
			continue
		}
		if once {
			return results, nil
		}
		select {
		case <-ctx.Done():
			return results, nil
		case <-time.After(2 * time.Second):
		}
	}
}

// RunOne claims the first pending entry and takes it as far as it goes.
// It returns nil when there was nothing to claim.
func (r *Runner) RunOne(ctx context.Context) (*Result, error) {
	start := time.Now()
	// Read again for every claim: the configuration may have changed since
	// the train started (spool watch rereads it).
	if _, _, err := mergequeue.TestPlan(r.Store.Config); err != nil {
		return nil, err
	}
	v, err := r.Store.Read(ctx, mergequeue.Name)
	if err == nil && r.pushWaiting(ctx, queueOf(v)) {
		v, err = r.Store.Read(ctx, mergequeue.Name)
	}
	if err != nil || queueOf(v).PendingCount == 0 || queueOf(v).Frozen {
		return nil, err
	}
	target := mergequeue.Target{Branch: r.Target, Passed: r.passed}
	target.SHA, _ = git.RevParse(ctx, r.Store.Repo.Root, "refs/heads/"+r.Target) // the steps check it again
	r.waits(ctx, queueOf(v), &target)
	pol := r.policy()
	if _, e := mergequeue.DecideClaim(queueOf(v), r.ID, target, pol, r.Now()); e == nil {
		// Nothing this clone sees can be claimed (every pending entry
		// waits: for a push, a clean checkout …): no claim, and so no trip
		// to the remote, which may be the very thing that does not answer.
		return nil, nil
	}
	// This process, in the claim: should it die, recovery on this machine
	// sees it gone and need not wait for the lease.
	var holder *mergequeue.ProcRecord
	if self := proc.Self(); self.Start != 0 {
		h := mergequeue.ProcRecord(self)
		holder = &h
	}
	now := r.Now()
	w, err := store.Write(ctx, r.Store, store.Claiming, now, r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, *mergequeue.Entry, error) {
		drafts, e := mergequeue.DecideClaimHeld(queueOf(v), r.ID, holder, target, pol, now)
		if e == nil {
			return drafts, nil, nil
		}
		c := *e // the entry as claimed: the append moves the queue on
		return drafts, &c, nil
	})
	claimed, events := w.Result, w.Events
	if err != nil || claimed == nil {
		return nil, err
	}
	r.logf("entry %d: claimed (%s, %s)", claimed.ID, claimed.Workspace, short(claimed.HeadSHA))
	j := &job{start: start, r: r, id: claimed.ID, ref: claimed.Ref, head: claimed.HeadSHA, status: mergequeue.Claimed, attempt: claimed.Attempts + 1,
		claimedAgainst: target.SHA}
	if len(events) > 0 {
		j.claim = events[len(events)-1].ID
	}
	r.pause(mergequeue.Claimed)
	var abort context.CancelCauseFunc
	j.abortable, abort = context.WithCancelCause(ctx)
	defer abort(nil)
	// Hold the lease through every step (worktree, rebase, test, push), not
	// only the test: a slow rebase or push must not look like a dead runner.
	// While the test runs, watch that the entry is still ours (abort).
	stop := j.renewWhile(ctx, abort)
	res := j.process(ctx)
	stop()
	t := time.Now()
	git.RemoveScratch(context.WithoutCancel(ctx), r.Store.Repo.Root, j.scratch)
	j.rebaseTime += time.Since(t)
	if r.Store.DeferSave {
		if err := r.Store.Flush(context.WithoutCancel(ctx)); err != nil {
			return res, err
		}
	}
	res.ElapsedMS = ms(time.Since(j.start))
	res.RebaseMS, res.TestMS = ms(j.rebaseTime), ms(j.testTime)
	return res, nil
}

// job is one claimed entry on its way through the train.
type job struct {
	r       *Runner
	id      int64
	ref     string // the entry's ref, which names its scratch worktree
	claim   string // the id of the claim's event, which names the attempt's run directory
	head    string
	status  mergequeue.Status
	attempt int
	scratch string
	runDir  string
	tested  string // the rebased commit
	against string // the target commit it was rebased onto and tested against
	local   string // the local target's commit the merge moves from: against, or behind it (the remote's tip is against)
	from    string // on the step to merging: local, when it is not against
	lost    bool   // another process changed the entry: stop touching it

	fetched      bool   // the remote's target was fetched in this claim
	remoteTip    string // what the last fetch found
	remoteRounds int    // rebases again because the remote's target moved (maxRemoteRounds)

	// abortable is the context of the test command: cancelled, with the
	// cause, when the entry stops being this job's while it runs (watch).
	abortable context.Context
	testing   atomic.Bool // the test command runs: watch the entry
	watchMu   sync.Mutex  // held by a look at the queue while the test runs

	start                time.Time
	rebaseTime, testTime time.Duration
	claimedAgainst       string // the target's commit when the entry was claimed
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// step appends one transition as a compare-and-set on the entry.
func (j *job) step(ctx context.Context, to mergequeue.Status, reason string, paths []string, exitCode *int) error {
	pol := j.r.policy()
	st := mergequeue.Step{EntryID: j.id, Runner: j.r.ID, From: j.status, To: to, HeadSHA: j.head, TestedSHA: j.tested,
		TestedAgainstSHA: j.against, Reason: reason, Paths: paths, ExitCode: exitCode, RunDir: j.runDir, ScratchDir: j.scratch}
	if to == mergequeue.Merging {
		st.TargetFromSHA = j.from
	}
	now := j.r.Now()
	w, err := store.Write(context.WithoutCancel(ctx), j.r.Store, store.Claiming, now, j.r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, mergequeue.Status, error) {
		drafts, err := mergequeue.DecideStep(queueOf(v), st, pol, now)
		if err != nil {
			return nil, "", err
		}
		return drafts, drafts[0].Data.(mergequeue.EntryData).To, nil
	})
	if err != nil {
		if f, ok := fault.As(err); ok && f.Has(mergequeue.CodeConcurrentModification) {
			j.lost = true
		}
		return err
	}
	final := w.Result
	j.status = final
	j.r.logf("entry %d: %s%s", j.id, final, suffix(reason))
	if j.r.afterStep != nil {
		j.r.afterStep(final)
	}
	j.r.pause(final)
	return nil
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// fail records a failure; the decider turns retryable into terminal once
// the attempts are used up.
func (j *job) fail(ctx context.Context, to mergequeue.Status, reason string, paths []string, exitCode *int) *Result {
	if err := j.step(ctx, to, reason, paths, exitCode); err != nil {
		return &Result{EntryID: j.id, Status: j.status, Reason: "could not record failure: " + err.Error()}
	}
	return &Result{EntryID: j.id, Status: j.status, Reason: reason}
}

func (j *job) process(ctx context.Context) *Result {
	// A directory of the attempt's own: the claim's event id never repeats,
	// whatever resubmissions or a merge of clones' logs do to the entry's
	// number and attempt count.
	j.runDir = mergequeue.RunDir(store.RunsDir(j.r.Store.Repo), j.ref, j.claim)
	if j.runDir == "" { // never: both are ids the log gave
		j.runDir = filepath.Join(store.RunsDir(j.r.Store.Repo), "merge", "entry-"+strconv.FormatInt(j.id, 10), "attempt-"+strconv.Itoa(j.attempt))
	}
	b, res := j.base(ctx)
	for res == nil {
		j.against, j.local, j.tested = b.against, b.local, ""
		if res = j.rebaseAndTest(ctx); res != nil {
			break
		}
		// Before moving anything, the target again, here and on the remote.
		if b, res = j.base(ctx); res != nil {
			break
		}
		if b.against != j.against {
			j.r.logf("entry %d: %s moved from %s to %s since it was tested; rebasing again", j.id, j.r.Target, short(j.against), short(b.against))
			if b.remoteMoved {
				res = j.remoteRound(ctx)
			}
			continue // ready_to_merge → rebasing
		}
		j.local = b.local
		var again bool
		if res, again = j.merge(ctx); !again {
			break
		}
		// The remote refused the push, its target having moved: the local
		// target is back where it was; look again and rebase onto it.
		if res = j.remoteRound(ctx); res == nil {
			b, res = j.base(ctx)
		}
	}
	return res
}

// maxRemoteRounds is how many times, within one claim, the train rebases
// and tests an entry again because the remote's target moved under it
// (before the push, or refusing it) before it fails the attempt.
const maxRemoteRounds = 5

// remoteRound counts one more round lost to the remote's target moving;
// past maxRemoteRounds it fails the attempt.
func (j *job) remoteRound(ctx context.Context) *Result {
	if j.remoteRounds++; j.remoteRounds <= maxRemoteRounds {
		return nil
	}
	return j.fail(ctx, mergequeue.FailedRetryable, fmt.Sprintf("%s on %s kept moving: rebased and tested %d times within one claim, "+
		"each time the remote's target moved before the push landed", j.r.Target, j.r.remote(ctx), j.remoteRounds), nil, nil)
}

// rebaseAndTest rebases the head onto j.against in the scratch worktree
// and runs the test command there: claimed, ready_to_merge or merging →
// rebasing → testing → ready_to_merge, or a failure.
func (j *job) rebaseAndTest(ctx context.Context) *Result {
	root := j.r.Store.Repo.Root
	argv, untested, err := mergequeue.TestPlan(j.r.Store.Config)
	if err != nil {
		// The configuration changed since the claim: nothing to test with,
		// and no choice to merge untested. The entry goes back, not charged.
		return j.giveBack(ctx, fault.Classify(err).Message, nil)
	}
	if j.scratch == "" {
		dir := ScratchPath(j.r.Store.Repo, j.id, j.ref)
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "scratch worktree: "+err.Error(), nil, nil)
		}
		j.scratch = dir
	}
	// intent: rebasing onto against, in the scratch worktree
	if err := j.step(ctx, mergequeue.Rebasing, "onto "+j.r.Target+" at "+short(j.against), nil, nil); err != nil {
		return j.lostResult(err)
	}
	t := time.Now()
	git.RemoveScratch(ctx, root, j.scratch)
	if err := git.AddScratch(ctx, root, j.scratch, j.head); err != nil {
		return j.fail(ctx, mergequeue.FailedRetryable, "scratch worktree: "+err.Error(), nil, nil)
	}
	conflicts, err := git.Rebase(ctx, j.scratch, j.against)
	if err == nil && len(conflicts) == 0 {
		j.tested, err = git.RevParse(ctx, j.scratch, "HEAD")
	}
	j.rebaseTime += time.Since(t)
	if len(conflicts) > 0 {
		return j.fail(ctx, mergequeue.FailedTerminal, "rebase conflict", conflicts, nil)
	}
	if err != nil {
		return j.fail(ctx, mergequeue.FailedRetryable, "rebase failed: "+err.Error(), nil, nil)
	}
	// outcome of the rebase, intent of the test: an untested merge says so
	// in the entry's trail.
	why := ""
	if untested {
		why = mergequeue.UntestedReason
	}
	if err := j.step(ctx, mergequeue.Testing, why, nil, nil); err != nil {
		return j.lostResult(err)
	}
	t = time.Now()
	code, reason, err := j.test(ctx, argv)
	j.testTime += time.Since(t)
	if a, ok := err.(*abortedError); ok {
		j.lost = true
		j.r.logf("entry %d: test command stopped: %v", j.id, a.cause)
		return &Result{EntryID: j.id, Status: a.status(), Reason: "stopped: " + a.cause.Error()}
	}
	if err != nil {
		return j.fail(ctx, mergequeue.FailedRetryable, "test command: "+err.Error(), nil, nil)
	}
	if code != 0 {
		return j.fail(ctx, mergequeue.FailedRetryable, reason, nil, &code)
	}
	if err := j.step(ctx, mergequeue.ReadyToMerge, "", nil, &code); err != nil {
		return j.lostResult(err)
	}
	return nil
}

// base is what the train rebases onto and what it moves.
type base struct {
	against     string // the commit to rebase onto and test against
	local       string // the local target's commit, which the merge moves (a compare-and-swap)
	remoteMoved bool   // the remote's tip differs from the one the last base saw
}

// base reads the local target and, with a remote, fetches the remote's
// target (into a ref of spool's own, never the user's remote-tracking
// refs), and chooses what to rebase onto: the local target, unless it is
// behind the remote's tip (an ancestor of it), then the remote's tip. A
// local target ahead of the remote's is kept: its commits get pushed with
// the entry. When they have diverged the entry goes back to pending
// (WaitTargetDiverged), its attempt not charged: which side to keep is the
// user's call. A non-nil result ends the job.
func (j *job) base(ctx context.Context) (base, *Result) {
	root := j.r.Store.Repo.Root
	local, err := j.claimedAgainst, error(nil) // read just before the claim; the merge checks again
	if local == "" || j.status != mergequeue.Claimed {
		local, err = git.RevParse(ctx, root, "refs/heads/"+j.r.Target)
	}
	if err != nil {
		return base{}, j.fail(ctx, mergequeue.FailedRetryable, "target "+j.r.Target+" not found: "+err.Error(), nil, nil)
	}
	b := base{against: local, local: local}
	remote := j.r.remote(ctx)
	if remote == "" {
		return b, nil
	}
	tip, res := j.fetch(ctx, remote)
	if res != nil {
		return base{}, res
	}
	b.remoteMoved = j.fetched && tip != j.remoteTip
	j.fetched, j.remoteTip = true, tip
	if tip == "" || tip == local {
		return b, nil // the remote has no target yet (the push makes it), or has this one
	}
	if ahead, err := git.IsAncestor(ctx, root, tip, local); err != nil {
		return base{}, j.fail(ctx, mergequeue.FailedRetryable, "comparing "+j.r.Target+" with "+remote+"'s: "+err.Error(), nil, nil)
	} else if ahead {
		return b, nil
	}
	behind, err := git.IsAncestor(ctx, root, local, tip)
	if err != nil {
		return base{}, j.fail(ctx, mergequeue.FailedRetryable, "comparing "+j.r.Target+" with "+remote+"'s: "+err.Error(), nil, nil)
	}
	if !behind {
		return base{}, j.giveBack(ctx, fmt.Sprintf("%s: %s (at %s) and %s/%s (at %s) have diverged; pull (merge or rebase %s onto %s/%s) and the train merges it",
			mergequeue.WaitTargetDiverged, j.r.Target, short(local), remote, j.r.Target, short(tip), j.r.Target, remote, j.r.Target), nil)
	}
	b.against = tip
	return b, nil
}

// trainRef is spool's copy of the remote's target, which the train fetches
// before it rebases and before it pushes. It is not the user's
// remote-tracking ref (refs/remotes/…), which only the user's own fetch
// and pull move.
func trainRef(remote, target string) string { return "refs/spool/train/" + remote + "/" + target }

// fetch fetches the remote's target into trainRef and returns its commit,
// "" when the remote has no such branch.
func (j *job) fetch(ctx context.Context, remote string) (string, *Result) {
	root := j.r.Store.Repo.Root
	ref := trainRef(remote, j.r.Target)
	own := filepath.Join(j.r.Store.Repo.CommonDir, filepath.FromSlash(ref)+".lock")
	err := j.whileLocked(ctx, func() error {
		err := git.FetchRef(ctx, root, remote, j.r.Target, ref)
		if lock := git.LockFile(err); lock != "" && git.SamePath(lock, own) {
			// spool's own ref, which only the runner holding an entry
			// writes: a fetch that died with an earlier train left it.
			j.r.Store.Repo.RemoveRefLock(ref)
			err = git.FetchRef(ctx, root, remote, j.r.Target, ref)
		}
		return err
	})
	var perr *git.PushError
	switch {
	case err == nil:
	case git.LockFile(err) != "":
		return "", j.waitLocked(ctx, git.LockFile(err))
	case errors.As(err, &perr) && strings.Contains(perr.Message, "couldn't find remote ref"):
		return "", nil
	case errors.As(err, &perr):
		return "", j.fail(ctx, mergequeue.FailedRetryable, "fetching "+j.r.Target+" from "+remote+" failed: "+perr.Message, nil, nil)
	default:
		return "", j.fail(ctx, mergequeue.FailedRetryable, "fetching "+j.r.Target+" from "+remote+" failed: "+err.Error(), nil, nil)
	}
	tip, err := git.RevParse(ctx, root, ref)
	if err != nil {
		return "", j.fail(ctx, mergequeue.FailedRetryable, "reading "+ref+" after the fetch: "+err.Error(), nil, nil)
	}
	return tip, nil
}

// whileLocked runs op, and again while it fails because a lock file of
// git's exists (a user's git commit at the wrong moment holds HEAD.lock or
// the branch's lock for a moment), for up to the runner's LockPatience; it
// returns op's last error.
func (j *job) whileLocked(ctx context.Context, op func() error) error {
	patience := j.r.LockPatience
	if patience <= 0 {
		patience = defaultLockPatience
	}
	deadline := time.Now().Add(patience)
	wait := 50 * time.Millisecond
	for {
		err := op()
		left := time.Until(deadline)
		if err == nil || git.LockFile(err) == "" || left <= 0 {
			return err
		}
		j.r.logf("entry %d: %s is locked; trying again", j.id, git.LockFile(err))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(wait, left)):
		}
		wait = min(2*wait, time.Second)
	}
}

// defaultLockPatience is how long a lock file of git's may stand in the
// train's way before it gives the entry back.
const defaultLockPatience = 10 * time.Second

// waitLocked gives the entry back (pending, its attempt not charged)
// because lock stood in the way for the whole LockPatience: git's lock
// contention is never the entry's fault. The train claims it again once
// the file is gone (Runner.locked).
func (j *job) waitLocked(ctx context.Context, lock string) *Result {
	return j.giveBack(ctx, fmt.Sprintf("%s: git's lock file %s stayed in the way of %s; another git command holds it, or one that crashed left it "+
		"(remove it if no git command runs), and the train merges the entry once it is gone", mergequeue.WaitTargetLocked, lock, j.r.Target), []string{lock})
}

func (j *job) lostResult(err error) *Result {
	return &Result{EntryID: j.id, Status: j.status, Reason: "stopped: " + err.Error()}
}

// merge moves the target from j.local to j.tested with a compare-and-swap,
// brings the worktree that has it checked out along (as git merge
// --ff-only would) and pushes it. It never leaves that checkout with the
// merge staged in reverse: when the checkout has uncommitted changes to
// paths the merge changes, the target stays where it is and the entry
// waits (WaitCheckoutDirty). again is a push the remote refused because its
// target moved: the local target is back at j.local, and the caller
// rebases again.
func (j *job) merge(ctx context.Context) (res *Result, again bool) {
	root := j.r.Store.Repo.Root
	targetRef := "refs/heads/" + j.r.Target
	checkout, err := git.CheckoutOf(ctx, root, j.r.Target)
	if err != nil {
		return j.fail(ctx, mergequeue.FailedRetryable, "git worktree list: "+err.Error(), nil, nil), false
	}
	if checkout != "" {
		blocked, err := j.blockedBy(ctx, checkout)
		if err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "reading the checkout of "+j.r.Target+": "+err.Error(), nil, nil), false
		}
		if len(blocked) > 0 {
			return j.wait(ctx, checkout, blocked), false // ready_to_merge → pending
		}
	}
	// intent: the target will move from local (the base, or behind it) to tested
	j.from = ""
	if j.local != j.against {
		j.from = j.local
	}
	if err := j.step(ctx, mergequeue.Merging, "", nil, nil); err != nil {
		return j.lostResult(err), false
	}
	msg := fmt.Sprintf("spool merge: entry %d", j.id)
	if err := j.whileLocked(ctx, func() error { return git.UpdateRef(ctx, root, targetRef, j.tested, j.local, msg) }); err != nil {
		if lock := git.LockFile(err); lock != "" {
			return j.waitLocked(ctx, lock), false // merging → pending, the target unmoved
		}
		return j.fail(ctx, mergequeue.FailedRetryable, "target moved during the merge: "+err.Error(), nil, nil), false
	}
	j.r.pause("ref_updated")
	undo := context.WithoutCancel(ctx)
	putBack := func(why string) error {
		return j.whileLocked(undo, func() error { return git.UpdateRef(undo, root, targetRef, j.local, j.tested, msg+" ("+why+", undone)") })
	}
	if checkout != "" {
		if err := git.FastForward(ctx, checkout, j.local, j.tested); err != nil {
			// The checkout changed since it was read: put the target back.
			if uerr := putBack("checkout not updated"); uerr != nil {
				return j.fail(ctx, mergequeue.FailedRetryable, "the checkout of "+j.r.Target+" was not updated ("+err.Error()+
					") and the target moved again before it could be put back: "+uerr.Error(), nil, nil), false
			}
			blocked, _ := j.blockedBy(undo, checkout)
			if len(blocked) == 0 {
				blocked = []string{"(" + strings.TrimSpace(err.Error()) + ")"}
			}
			return j.wait(ctx, checkout, blocked), false // merging → pending
		}
	}
	if remote := j.r.remote(ctx); remote != "" {
		err := j.whileLocked(ctx, func() error { return git.PushRef(ctx, root, remote, targetRef) })
		if err != nil {
			// Put the target back so local and remote agree, then give up
			// this attempt (or rebase again, or wait for the lock); the
			// checkout goes back first, or the target stays.
			reason := "push of " + j.r.Target + " failed: " + err.Error()
			if checkout != "" {
				if uerr := git.FastForward(undo, checkout, j.tested, j.local); uerr != nil {
					return j.fail(ctx, mergequeue.FailedRetryable, reason+"; "+j.r.Target+" keeps the merge locally, its checkout changed meanwhile", nil, nil), false
				}
			}
			if uerr := putBack("push failed"); uerr != nil {
				return j.fail(ctx, mergequeue.FailedRetryable, reason+"; "+j.r.Target+" keeps the merge locally: "+uerr.Error(), nil, nil), false
			}
			var perr *git.PushError
			switch {
			case errors.As(err, &perr) && perr.Rejected:
				j.r.logf("entry %d: %s refused the push, its %s having moved; rebasing again", j.id, remote, j.r.Target)
				return nil, true // merging → rebasing
			case errors.As(err, &perr) && perr.Lock != "":
				return j.waitLocked(ctx, perr.Lock), false // merging → pending
			}
			return j.fail(ctx, mergequeue.FailedRetryable, reason, nil, nil), false
		}
	}
	if err := j.step(ctx, mergequeue.Merged, "", nil, nil); err != nil {
		return j.lostResult(err), false
	}
	return &Result{EntryID: j.id, Status: mergequeue.Merged, TestedSHA: j.tested}, false
}

// blockedBy lists the checkout's uncommitted paths that the merge changes.
func (j *job) blockedBy(ctx context.Context, checkout string) ([]string, error) {
	dirty, err := git.Uncommitted(ctx, checkout)
	if err != nil || len(dirty) == 0 {
		return nil, err
	}
	changed, err := git.ChangedPaths(ctx, j.r.Store.Repo.Root, j.local, j.tested)
	if err != nil {
		return nil, err
	}
	return mergequeue.Overlapping(dirty, changed), nil
}

// wait gives the entry back to the queue without moving the target; the
// train claims it again once those paths are clean (Runner.dirtyCheckout).
func (j *job) wait(ctx context.Context, checkout string, paths []string) *Result {
	shown := paths
	if len(shown) > 5 {
		shown = append(append([]string(nil), paths[:5]...), fmt.Sprintf("and %d more", len(paths)-5))
	}
	reason := fmt.Sprintf("%s: %s has uncommitted changes to %s, which the merge changes; commit or stash them and the train merges it",
		mergequeue.WaitCheckoutDirty, checkout, strings.Join(shown, ", "))
	return j.giveBack(ctx, reason, paths)
}

// giveBack returns the entry to the queue, pending, without its attempt
// charged and with the target where it was: it waits for what reason
// (one of mergequeue's Wait… kinds, then why) names, and DecideClaim
// passes it over until that is gone.
func (j *job) giveBack(ctx context.Context, reason string, paths []string) *Result {
	if err := j.step(ctx, mergequeue.Pending, reason, paths, nil); err != nil {
		return j.lostResult(err)
	}
	return &Result{EntryID: j.id, Status: mergequeue.Pending, Reason: reason}
}

// waits fills in what DecideClaim needs to know about what entries the
// train gave back wait for, read only when one waits for it: the
// uncommitted paths of the target's checkout (WaitCheckoutDirty), whether
// the local target still lacks the remote tip the train last fetched
// (WaitTargetDiverged), which of their lock files still exist
// (WaitTargetLocked). Unknown (git failed) is not waiting: the train
// checks again before moving anything.
func (r *Runner) waits(ctx context.Context, q *mergequeue.State, target *mergequeue.Target) {
	var dirty, diverged bool
	var locks []string
	for _, e := range q.Active() {
		if e.Status != mergequeue.Pending || e.Waiting == "" {
			continue
		}
		switch {
		case strings.HasPrefix(e.Waiting, mergequeue.WaitPushPending):
			// waits for merge.pushed (pushWaiting)
		case strings.HasPrefix(e.Waiting, mergequeue.WaitTargetDiverged):
			diverged = true
		case strings.HasPrefix(e.Waiting, mergequeue.WaitTargetLocked):
			locks = append(locks, e.ConflictPaths...)
		default:
			dirty = true
		}
	}
	root := r.Store.Repo.Root
	if dirty {
		if checkout, err := git.CheckoutOf(ctx, root, r.Target); err == nil && checkout != "" {
			target.Dirty, _ = git.Uncommitted(ctx, checkout)
		}
	}
	if remote := r.remote(ctx); diverged && remote != "" && target.SHA != "" {
		if tip, err := git.RevParse(ctx, root, trainRef(remote, r.Target)); err == nil {
			has, err := git.IsAncestor(ctx, root, tip, target.SHA)
			target.Diverged = err == nil && !has
		}
	}
	for _, lock := range locks {
		if _, err := os.Lstat(lock); err == nil {
			target.Locked = append(target.Locked, lock)
		}
	}
}

// test runs the configured test command in the scratch worktree, renewing
// the lease while it runs; output goes to <run dir>/test.log.
func (j *job) test(ctx context.Context, argv []string) (code int, reason string, err error) {
	if len(argv) == 0 { // merge.untested
		return 0, "", nil
	}
	dir := j.runDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, "", err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, mergequeue.TestLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, "", err
	}
	defer logFile.Close()
	if fi, err := logFile.Stat(); err == nil && fi.Size() > 0 {
		// The same attempt tests again (the remote's target moved): keep
		// the earlier round's output above.
		fmt.Fprintf(logFile, "\n=== spool: testing again, %s rebased onto %s ===\n", short(j.tested), short(j.against))
	}
	timeout := mergequeue.SettingsFrom(j.r.Store.Config).TestTimeout
	parent := ctx
	if j.abortable != nil {
		parent = j.abortable
	}
	tctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	// Its own process group, which dies with this process and on timeout;
	// recorded in the log so that recovery can end it should it survive.
	p, err := proc.Start(tctx, proc.Cmd{Argv: argv, Dir: j.scratch, Stdout: logFile, Stderr: logFile,
		Env: append(os.Environ(), "SPOOL_MERGE_ENTRY_ID="+strconv.FormatInt(j.id, 10),
			"SPOOL_MERGE_TESTED_SHA="+j.tested, "SPOOL_MERGE_TARGET_SHA="+j.against, "SPOOL_MERGE_REPO="+j.r.Store.Repo.Root)})
	if err != nil {
		return 0, "", err
	}
	j.recordProc(ctx, p.Record())
	j.testing.Store(true)
	err = p.Wait()
	j.watchMu.Lock() // a look at the queue under way ends before the job uses the store again
	j.testing.Store(false)
	j.watchMu.Unlock()
	var exitErr *proc.ExitError
	switch {
	case j.abortable != nil && context.Cause(j.abortable) != nil && ctx.Err() == nil:
		return 0, "", &abortedError{context.Cause(j.abortable)}
	case err == nil:
		return 0, "", nil
	case tctx.Err() == context.DeadlineExceeded:
		return -1, fmt.Sprintf("test command timed out after %s (output in %s)", timeout, filepath.Join(j.runDir, mergequeue.TestLog)), nil
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), fmt.Sprintf("test command exited %d (output in %s)", exitErr.ExitCode(), filepath.Join(j.runDir, mergequeue.TestLog)), nil
	}
	return 0, "", err
}

// recordProc puts the test command's process group in the log (a lease
// renewal carrying it). Best effort: the group dies with this process
// anyway; the record is for a group that survives it.
func (j *job) recordProc(ctx context.Context, rec proc.Record) {
	pol := j.r.policy()
	now := j.r.Now()
	_, _, err := j.r.Store.Claim(context.WithoutCancel(ctx), now, j.r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
		return mergequeue.DecideProcStarted(queueOf(v), j.id, j.r.ID, mergequeue.ProcRecord(rec), pol, now)
	})
	if err != nil {
		j.r.logf("entry %d: the test command's process (pid %d) was not recorded: %v", j.id, rec.PID, err)
	}
}

// DefaultWatchEvery is how often the runner looks whether the entry whose
// test command runs is still its own (Runner.WatchEvery).
const DefaultWatchEvery = 500 * time.Millisecond

// abortedError is a test command ended because the entry stopped being the
// job's while it ran (a merge cancel, another runner's recovery).
type abortedError struct{ cause error }

func (a *abortedError) Error() string { return a.cause.Error() }

// status is what the watch saw the entry become.
func (a *abortedError) status() mergequeue.Status {
	var lost *lostEntry
	if errors.As(a.cause, &lost) {
		return lost.status
	}
	return mergequeue.Testing
}

// lostEntry is the cause of an aborted test: the entry is no longer in
// testing with this runner and head.
type lostEntry struct {
	id     int64
	status mergequeue.Status
	runner string
}

func (l *lostEntry) Error() string {
	if l.status == mergequeue.Cancelled {
		return fmt.Sprintf("entry %d was cancelled while its test ran", l.id)
	}
	return fmt.Sprintf("entry %d is %s (runner %q) while its test ran: no longer this runner's", l.id, l.status, l.runner)
}

// stillOurs reads the queue and says why the entry stopped being this
// job's (nil while it is still in testing, held by this runner, at this head).
func (j *job) stillOurs(ctx context.Context) error {
	v, err := j.r.Store.Read(ctx, mergequeue.Name)
	if err != nil {
		return nil // cannot tell: the test goes on; the next step's compare-and-set decides
	}
	e := queueOf(v).EntryByRef(j.ref)
	if e == nil {
		return &lostEntry{id: j.id}
	}
	if e.Status != mergequeue.Testing || e.Runner != j.r.ID || e.HeadSHA != j.head {
		return &lostEntry{id: j.id, status: e.Status, runner: e.Runner}
	}
	return nil
}

// renewWhile renews the lease every third of its length until stopped and,
// while the test command runs, looks every WatchEvery whether the entry is
// still the job's, calling abort with why when it is not. Both run in this
// one goroutine: the store is never used by two of the job's at once.
func (j *job) renewWhile(ctx context.Context, abort context.CancelCauseFunc) (stop func()) {
	pol := j.r.policy()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	every := j.r.WatchEvery
	if every <= 0 {
		every = DefaultWatchEvery
	}
	fault.Go(func() {
		defer wg.Done()
		tick := time.NewTicker(max(pol.Lease/3, time.Second))
		defer tick.Stop()
		watch := time.NewTicker(every)
		defer watch.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-watch.C:
				j.watchMu.Lock()
				if j.testing.Load() && abort != nil {
					if why := j.stillOurs(ctx); why != nil {
						abort(why)
					}
				}
				j.watchMu.Unlock()
			case <-tick.C:
				now := j.r.Now()
				_, _, err := j.r.Store.Claim(ctx, now, j.r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
					return mergequeue.DecideRenew(queueOf(v), j.id, j.r.ID, pol, now)
				})
				if f, ok := fault.As(err); ok && (f.Has(mergequeue.CodeConcurrentModification) || f.Has(mergequeue.CodeEntryNotFound)) {
					// The entry was recovered or changed: the next step's
					// compare-and-set fails and the job stops there.
					j.r.logf("entry %d: lease not renewed: %v", j.id, err)
					if abort != nil {
						abort(fmt.Errorf("entry %d: lease not renewed: %w", j.id, err)) // not ours: a test still running stops
					}
					return
				}
				// Anything else (the lock busy for a while) is retried next tick.
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// pause blocks forever after the named step when a crash test asked for it.
func (r *Runner) pause(at mergequeue.Status) {
	if r.PauseAt == "" || string(at) != r.PauseAt {
		return
	}
	if r.PauseFile != "" {
		os.WriteFile(r.PauseFile, []byte(at), 0o644)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}
