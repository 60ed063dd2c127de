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

	// PauseAt and PauseFile let crash tests stop the runner right after a
	// step: it writes PauseFile and blocks until killed. Set from the
	// SPOOL_TEST_MERGE_PAUSE(_FILE) environment variables by the CLI.
	PauseAt, PauseFile string

	afterStep func(mergequeue.Status) // tests: act between two steps

	remoteOnce sync.Once
	remoteName string // merge.remote when it exists, else ""
}

// remote is the remote the target is pushed to, or "" when there is none;
// asked once per run.
func (r *Runner) remote(ctx context.Context) string {
	r.remoteOnce.Do(func() {
		if name := r.Store.Config.String("merge.remote"); git.RemoteExists(ctx, r.Store.Repo.Root, name) {
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
	v, err := r.Store.Read(ctx, mergequeue.Name)
	if err != nil || queueOf(v).PendingCount == 0 || queueOf(v).Frozen {
		return nil, err
	}
	target := mergequeue.Target{Branch: r.Target, Dirty: r.dirtyCheckout(ctx, queueOf(v))}
	target.SHA, _ = git.RevParse(ctx, r.Store.Repo.Root, "refs/heads/"+r.Target) // the steps check it again
	var claimed *mergequeue.Entry
	pol := r.policy()
	// This process, in the claim: should it die, recovery on this machine
	// sees it gone and need not wait for the lease.
	var holder *mergequeue.ProcRecord
	if self := proc.Self(); self.Start != 0 {
		h := mergequeue.ProcRecord(self)
		holder = &h
	}
	_, _, err = r.Store.Claim(ctx, r.Now(), r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
		drafts, e := mergequeue.DecideClaimHeld(queueOf(v), r.ID, holder, target, pol, r.Now())
		claimed = nil // a claim through the remote may decide again
		if e != nil {
			c := *e
			claimed = &c
		}
		return drafts, nil
	})
	if err != nil || claimed == nil {
		return nil, err
	}
	r.logf("entry %d: claimed (%s, %s)", claimed.ID, claimed.Workspace, short(claimed.HeadSHA))
	j := &job{start: start, r: r, id: claimed.ID, head: claimed.HeadSHA, status: mergequeue.Claimed, attempt: claimed.Attempts + 1,
		claimedAgainst: target.SHA}
	r.pause(mergequeue.Claimed)
	// Hold the lease through every step (worktree, rebase, test, push), not
	// only the test: a slow rebase or push must not look like a dead runner.
	stop := j.renewWhile(ctx)
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
	head    string
	status  mergequeue.Status
	attempt int
	scratch string
	runDir  string
	tested  string // the rebased commit
	against string // the target commit it was rebased onto and tested against
	lost    bool   // another process changed the entry: stop touching it

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
	var final mergequeue.Status
	_, _, err := j.r.Store.Claim(context.WithoutCancel(ctx), j.r.Now(), j.r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
		drafts, err := mergequeue.DecideStep(queueOf(v), st, pol, j.r.Now())
		if err == nil {
			final = drafts[0].Data.(mergequeue.EntryData).To
		}
		return drafts, err
	})
	if err != nil {
		if f, ok := fault.As(err); ok && f.Has(mergequeue.CodeConcurrentModification) {
			j.lost = true
		}
		return err
	}
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
	root := j.r.Store.Repo.Root
	targetRef := "refs/heads/" + j.r.Target
	j.runDir = filepath.Join(store.RunsDir(j.r.Store.Repo), strconv.FormatInt(j.id, 10), "attempt-"+strconv.Itoa(j.attempt))
	for {
		against, err := j.claimedAgainst, error(nil) // read just before the claim; ready_to_merge checks again
		if against == "" || j.status != mergequeue.Claimed {
			against, err = git.RevParse(ctx, root, targetRef)
		}
		if err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "target "+j.r.Target+" not found: "+err.Error(), nil, nil)
		}
		j.against, j.tested = against, ""
		if j.scratch == "" {
			dir, err := os.MkdirTemp("", fmt.Sprintf("spool-merge-%d-", j.id))
			if err != nil {
				return j.fail(ctx, mergequeue.FailedRetryable, "scratch worktree: "+err.Error(), nil, nil)
			}
			j.scratch = dir
		}
		// intent: rebasing onto against, in the scratch worktree
		if err := j.step(ctx, mergequeue.Rebasing, "onto "+j.r.Target+" at "+short(against), nil, nil); err != nil {
			return j.lostResult(err)
		}
		t := time.Now()
		git.RemoveScratch(ctx, root, j.scratch)
		if err := git.AddScratch(ctx, root, j.scratch, j.head); err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "scratch worktree: "+err.Error(), nil, nil)
		}
		conflicts, err := git.Rebase(ctx, j.scratch, against)
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
		// outcome of the rebase, intent of the test
		if err := j.step(ctx, mergequeue.Testing, "", nil, nil); err != nil {
			return j.lostResult(err)
		}
		t = time.Now()
		code, reason, err := j.test(ctx)
		j.testTime += time.Since(t)
		if err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "test command: "+err.Error(), nil, nil)
		}
		if code != 0 {
			return j.fail(ctx, mergequeue.FailedRetryable, reason, nil, &code)
		}
		if err := j.step(ctx, mergequeue.ReadyToMerge, "", nil, &code); err != nil {
			return j.lostResult(err)
		}
		now, err := git.RevParse(ctx, root, targetRef)
		if err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "target "+j.r.Target+" not found: "+err.Error(), nil, nil)
		}
		if now != j.against {
			j.r.logf("entry %d: %s moved from %s to %s since it was tested; rebasing again", j.id, j.r.Target, short(j.against), short(now))
			continue // ready_to_merge → rebasing
		}
		return j.merge(ctx, targetRef)
	}
}

func (j *job) lostResult(err error) *Result {
	return &Result{EntryID: j.id, Status: j.status, Reason: "stopped: " + err.Error()}
}

// merge moves the target with a compare-and-swap, brings the worktree that
// has it checked out along (as git merge --ff-only would) and pushes it.
// It never leaves that checkout with the merge staged in reverse: when the
// checkout has uncommitted changes to paths the merge changes, the target
// stays where it is and the entry waits (WaitCheckoutDirty).
func (j *job) merge(ctx context.Context, targetRef string) *Result {
	root := j.r.Store.Repo.Root
	checkout, err := git.CheckoutOf(ctx, root, j.r.Target)
	if err != nil {
		return j.fail(ctx, mergequeue.FailedRetryable, "git worktree list: "+err.Error(), nil, nil)
	}
	if checkout != "" {
		blocked, err := j.blockedBy(ctx, checkout)
		if err != nil {
			return j.fail(ctx, mergequeue.FailedRetryable, "reading the checkout of "+j.r.Target+": "+err.Error(), nil, nil)
		}
		if len(blocked) > 0 {
			return j.wait(ctx, checkout, blocked) // ready_to_merge → pending
		}
	}
	// intent: the target will move from against to tested
	if err := j.step(ctx, mergequeue.Merging, "", nil, nil); err != nil {
		return j.lostResult(err)
	}
	msg := fmt.Sprintf("spool merge: entry %d", j.id)
	if err := git.UpdateRef(ctx, root, targetRef, j.tested, j.against, msg); err != nil {
		return j.fail(ctx, mergequeue.FailedRetryable, "target moved during the merge: "+err.Error(), nil, nil)
	}
	j.r.pause("ref_updated")
	undo := context.WithoutCancel(ctx)
	if checkout != "" {
		if err := git.FastForward(ctx, checkout, j.against, j.tested); err != nil {
			// The checkout changed since it was read: put the target back.
			if uerr := git.UpdateRef(undo, root, targetRef, j.against, j.tested, msg+" (checkout not updated, undone)"); uerr != nil {
				return j.fail(ctx, mergequeue.FailedRetryable, "the checkout of "+j.r.Target+" was not updated ("+err.Error()+
					") and the target moved again before it could be put back: "+uerr.Error(), nil, nil)
			}
			blocked, _ := j.blockedBy(undo, checkout)
			if len(blocked) == 0 {
				blocked = []string{"(" + strings.TrimSpace(err.Error()) + ")"}
			}
			return j.wait(ctx, checkout, blocked) // merging → pending
		}
	}
	if remote := j.r.remote(ctx); remote != "" {
		if err := git.PushRef(ctx, root, remote, targetRef); err != nil {
			// Put the target back so local and remote agree, then give up
			// this attempt; the checkout goes back first, or the target stays.
			reason := "push of " + j.r.Target + " failed: " + err.Error()
			if checkout != "" {
				if uerr := git.FastForward(undo, checkout, j.tested, j.against); uerr != nil {
					return j.fail(ctx, mergequeue.FailedRetryable, reason+"; "+j.r.Target+" keeps the merge locally, its checkout changed meanwhile", nil, nil)
				}
			}
			git.UpdateRef(undo, root, targetRef, j.against, j.tested, msg+" (push failed, undone)")
			return j.fail(ctx, mergequeue.FailedRetryable, reason, nil, nil)
		}
	}
	if err := j.step(ctx, mergequeue.Merged, "", nil, nil); err != nil {
		return j.lostResult(err)
	}
	return &Result{EntryID: j.id, Status: mergequeue.Merged, TestedSHA: j.tested}
}

// blockedBy lists the checkout's uncommitted paths that the merge changes.
func (j *job) blockedBy(ctx context.Context, checkout string) ([]string, error) {
	dirty, err := git.Uncommitted(ctx, checkout)
	if err != nil || len(dirty) == 0 {
		return nil, err
	}
	changed, err := git.ChangedPaths(ctx, j.r.Store.Repo.Root, j.against, j.tested)
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
	if err := j.step(ctx, mergequeue.Pending, reason, paths, nil); err != nil {
		return j.lostResult(err)
	}
	return &Result{EntryID: j.id, Status: mergequeue.Pending, Reason: reason}
}

// dirtyCheckout is target.Dirty for DecideClaim: the uncommitted paths of
// the target's checkout, read only when an entry waits for it. Unknown
// (git failed) is clean: the merge checks again before moving anything.
func (r *Runner) dirtyCheckout(ctx context.Context, q *mergequeue.State) []string {
	waiting := false
	for _, e := range q.Active() {
		waiting = waiting || e.Status == mergequeue.Pending && e.Waiting != ""
	}
	if !waiting {
		return nil
	}
	checkout, err := git.CheckoutOf(ctx, r.Store.Repo.Root, r.Target)
	if err != nil || checkout == "" {
		return nil
	}
	dirty, _ := git.Uncommitted(ctx, checkout)
	return dirty
}

// test runs the configured test command in the scratch worktree, renewing
// the lease while it runs; output goes to <run dir>/test.log.
func (j *job) test(ctx context.Context) (code int, reason string, err error) {
	argv := j.r.Store.Config.Strings("merge.test_command")
	if len(argv) == 0 {
		return 0, "", nil
	}
	dir := j.runDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, "", err
	}
	logFile, err := os.Create(filepath.Join(dir, "test.log"))
	if err != nil {
		return 0, "", err
	}
	defer logFile.Close()
	timeout := j.r.Store.Config.Duration("merge.test_timeout")
	tctx, cancel := context.WithTimeout(ctx, timeout)
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
	err = p.Wait()
	var exitErr *proc.ExitError
	switch {
	case err == nil:
		return 0, "", nil
	case tctx.Err() == context.DeadlineExceeded:
		return -1, fmt.Sprintf("test command timed out after %s (output in %s/test.log)", timeout, j.runDir), nil
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), fmt.Sprintf("test command exited %d (output in %s/test.log)", exitErr.ExitCode(), j.runDir), nil
	}
	return 0, "", err
}

// recordProc puts the test command's process group in the log (a lease
// renewal carrying it). Best effort: the group dies with this process
// anyway; the record is for a group that survives it.
func (j *job) recordProc(ctx context.Context, rec proc.Record) {
	pol := j.r.policy()
	_, _, err := j.r.Store.Claim(context.WithoutCancel(ctx), j.r.Now(), j.r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
		return mergequeue.DecideProcStarted(queueOf(v), j.id, j.r.ID, mergequeue.ProcRecord(rec), pol, j.r.Now())
	})
	if err != nil {
		j.r.logf("entry %d: the test command's process (pid %d) was not recorded: %v", j.id, rec.PID, err)
	}
}

// renewWhile renews the lease every third of its length until stopped.
func (j *job) renewWhile(ctx context.Context) (stop func()) {
	pol := j.r.policy()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	fault.Go(func() {
		defer wg.Done()
		tick := time.NewTicker(max(pol.Lease/3, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _, err := j.r.Store.Claim(ctx, j.r.Now(), j.r.Actor, []string{mergequeue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
					return mergequeue.DecideRenew(queueOf(v), j.id, j.r.ID, pol, j.r.Now())
				})
				if f, ok := fault.As(err); ok && (f.Has(mergequeue.CodeConcurrentModification) || f.Has(mergequeue.CodeEntryNotFound)) {
					// The entry was recovered or changed: the next step's
					// compare-and-set fails and the job stops there.
					j.r.logf("entry %d: lease not renewed: %v", j.id, err)
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
