package mergequeue_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/projections/projectiontest"
)

func TestMergeQueueConformance(t *testing.T) {
	// An entry takes several commands through the train: a longer log.
	projectiontest.Run(t, projectiontest.Suite{Spec: mergequeue.Spec, NewClone: newMergeClone, Steps: 200})
}

// mergeClone decides what spool merge and the merge train would on one
// clone: its people submit, cancel and retry, its train claims and steps
// the entries it holds, its watch recovers expired leases. Clones decide
// on what they have seen, so merged logs hold the concurrent claims, steps
// and submissions the fold must resolve.
type mergeClone struct {
	s      *mergequeue.State
	writer string
	runner string
	pol    mergequeue.Policy
}

func newMergeClone(writer string) projectiontest.Clone {
	return &mergeClone{s: mergequeue.New(), writer: writer, runner: "train@" + writer[:6],
		pol: mergequeue.Policy{MaxAttempts: 3, Lease: 30 * time.Minute, Admins: []string{"root@example.com"}}}
}

func (c *mergeClone) Apply(e *eventlog.Event) { c.s.Apply(e) }

var (
	mergeActors = []string{"ada@example.com", "bob@example.com", "root@example.com"}
	workspaces  = []string{"feature one", "wörk-ä", `quote"ws`, `back\slash`, "plain"}
	mergePaths  = []string{"src/a.go", "docs/read me.md", "ünï/côde.go"}
	reasons     = []string{"tests failed", "conflict in\nsrc/a.go", "exit 1: \"boom\"", ""}
)

func (c *mergeClone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	actor := pick(r, mergeActors)
	id := int64(r.IntN(c.s.Len()+1) + 1) // now and then one that does not exist
	if e := c.s.Entry(id); e != nil && r.IntN(4) > 0 {
		actor = e.Owner
	}
	switch op := r.IntN(16); {
	case op < 3:
		sub, err := mergequeue.DecideSubmit(c.s, c.submission(r, actor), c.pol, now)
		return actor, sub.Drafts, err
	case op == 3:
		drafts, err := mergequeue.DecideCancel(c.s, id, actor, pick(r, reasons), c.pol)
		return actor, drafts, err
	case op == 4:
		drafts, err := mergequeue.DecideRetry(c.s, id, actor, c.pol)
		return actor, drafts, err
	case op < 7:
		target := mergequeue.Target{Branch: "main", SHA: sha(r.IntN(50) + 500)}
		if r.IntN(3) == 0 {
			target.Dirty = []string{pick(r, mergePaths)}
		}
		var holder *mergequeue.ProcRecord
		if r.IntN(2) == 0 {
			holder = &mergequeue.ProcRecord{PID: 1000 + r.IntN(9000), PGID: 1000 + r.IntN(9000), Start: uint64(r.IntN(1 << 30)), Boot: "boot-" + c.writer[:4]}
		}
		drafts, _ := mergequeue.DecideClaimHeld(c.s, c.runner, holder, target, c.pol, now)
		return c.runner, drafts, nil
	case op < 12:
		return c.step(r, now)
	case op == 12:
		return c.renew(r, now)
	case op == 13:
		var dead map[string]bool
		if r.IntN(3) == 0 {
			dead = map[string]bool{c.runner: true} // its process found gone
		}
		merged := map[int64]bool{}
		for _, e := range c.s.Recoverable(now, dead) {
			merged[e.ID] = r.IntN(2) == 0
		}
		return "watch", mergequeue.DecideRecover(c.s, merged, dead, c.pol, now), nil
	case op == 14 && r.IntN(3) == 0:
		return actor, mergequeue.DecideFreeze(c.s, pick(r, reasons)), nil
	}
	return actor, mergequeue.DecideUnfreeze(c.s), nil
}

// submission is spool merge submit in one of this clone's workspaces;
// now and then with a dedupe key another clone may use at the same time.
func (c *mergeClone) submission(r *rand.Rand, actor string) mergequeue.SubmitRequest {
	i := r.IntN(len(workspaces))
	req := mergequeue.SubmitRequest{Workspace: workspaces[i], WorkspaceID: fmt.Sprintf("%s-%d", c.writer[:8], i),
		Worktree: "/home/dev/src/" + workspaces[i], Branch: fmt.Sprintf("topic-%d", r.IntN(2)), HeadSHA: sha(r.IntN(6) + 1), Actor: actor}
	if r.IntN(2) == 0 {
		req.Priority = mergequeue.P(r.IntN(5))
	}
	switch r.IntN(6) {
	case 0:
		req.DedupeKey = fmt.Sprintf("shared:K%d", r.IntN(2))
	case 1, 2:
		req.ChangeID, req.ChangeIDSource = fmt.Sprintf("I%040d", r.IntN(3)), mergequeue.SourceTrailer
	}
	if r.IntN(3) == 0 {
		req.BeadID = fmt.Sprintf("sp-%d", r.IntN(9))
	}
	return req
}

// step moves an entry this clone's train holds (or, now and then, one it
// does not: a stale runner) along the transition table.
func (c *mergeClone) step(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	var held []*mergequeue.Entry
	for _, e := range c.s.All() {
		if e.Status.Processing() && (e.Runner == c.runner || r.IntN(10) == 0) {
			held = append(held, e)
		}
	}
	if len(held) == 0 {
		return "", nil, nil
	}
	e := pick(r, held)
	var tos []mergequeue.Status
	for _, to := range mergequeue.Statuses {
		if mergequeue.CanTransition(e.Status, to) {
			tos = append(tos, to)
		}
	}
	to := pick(r, tos)
	if next, ok := happyPath[e.Status]; ok && r.IntN(3) > 0 { // most entries get through
		to = next
	}
	st := mergequeue.Step{EntryID: e.ID, Runner: e.Runner, From: e.Status, To: to, HeadSHA: e.HeadSHA,
		TestedSHA: sha(r.IntN(50) + 100), TestedAgainstSHA: sha(r.IntN(50) + 500), RunDir: fmt.Sprintf(".spool/runs/%d-%d", e.ID, e.Attempts)}
	switch to {
	case mergequeue.FailedRetryable, mergequeue.FailedTerminal:
		st.Reason, st.ExitCode = pick(r, reasons), mergequeue.P(1+r.IntN(3))
		if r.IntN(2) == 0 {
			st.Paths = []string{pick(r, mergePaths)}
		}
	case mergequeue.Pending:
		st.Reason, st.Paths = mergequeue.WaitCheckoutDirty, []string{pick(r, mergePaths)}
	case mergequeue.Rebasing:
		st.ScratchDir = "/tmp/spool-train-" + c.writer[:4]
	}
	drafts, err := mergequeue.DecideStep(c.s, st, c.pol, now)
	return e.Runner, drafts, err
}

// renew extends a held lease, sometimes recording the test's process group.
func (c *mergeClone) renew(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	for _, e := range c.s.All() {
		if !e.Status.Processing() || e.Runner != c.runner {
			continue
		}
		if r.IntN(2) == 0 {
			p := mergequeue.ProcRecord{PID: 1000 + r.IntN(9000), PGID: 1000 + r.IntN(9000), Start: uint64(r.IntN(1 << 30)), Boot: "boot-" + c.writer[:4]}
			drafts, err := mergequeue.DecideProcStarted(c.s, e.ID, c.runner, p, c.pol, now)
			return c.runner, drafts, err
		}
		drafts, err := mergequeue.DecideRenew(c.s, e.ID, c.runner, c.pol, now)
		return c.runner, drafts, err
	}
	return "", nil, nil
}

// happyPath is the train's way through an entry that merges.
var happyPath = map[mergequeue.Status]mergequeue.Status{
	mergequeue.Claimed: mergequeue.Rebasing, mergequeue.Rebasing: mergequeue.Testing, mergequeue.Testing: mergequeue.ReadyToMerge,
	mergequeue.ReadyToMerge: mergequeue.Merging, mergequeue.Merging: mergequeue.Merged,
}

func sha(n int) string { return fmt.Sprintf("%040x", n) }

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }
