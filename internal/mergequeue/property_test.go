package mergequeue

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// TestInvariantsProperty runs random sequences of submit, cancel, retry,
// claim, train steps, lease renewals, recovery and freezes, and checks every
// invariant CheckInvariants knows after each operation, plus: a rejected
// operation changes nothing (it is atomic), the audit trail only grows and
// every status change adds an audit step.
func TestInvariantsProperty(t *testing.T) {
	seeds, steps := 40, 400
	if testing.Short() {
		seeds = 5
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := New()
		now := t0
		p := pol
		p.Capacity = rng.Intn(2) * 6 // half the runs with a capacity
		p.Admins = []string{"root"}
		actors := []string{"ada", "bob", "root"}
		workspaces := []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7"}
		runners := []string{"r1", "r2"}
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rng.Intn(90)) * time.Second)
			if rng.Intn(20) == 0 {
				now = now.Add(p.Lease) // let leases expire
			}
			before, _ := s.MarshalState()
			prev := snapshotHistory(s)
			actor := actors[rng.Intn(len(actors))]
			var drafts []eventlog.Draft
			var err error
			op := rng.Intn(10)
			id := int64(rng.Intn(s.Len() + 2)) // sometimes missing
			switch op {
			case 0, 1, 2:
				ws := workspaces[rng.Intn(len(workspaces))]
				r := SubmitRequest{Workspace: ws, Branch: "b", HeadSHA: sha(rng.Intn(6) + 1), Priority: P(rng.Intn(6) - 1 + 1), Actor: actor}
				if rng.Intn(3) == 0 {
					r.ChangeID = fmt.Sprintf("C%d", rng.Intn(3))
				}
				if rng.Intn(8) == 0 {
					r.DedupeKey = fmt.Sprintf("shared:K%d", rng.Intn(2))
				}
				var sub Submission
				sub, err = DecideSubmit(s, r, p, now)
				drafts = sub.Drafts
			case 3:
				drafts, err = DecideCancel(s, id, actor, "", p)
			case 4:
				drafts, err = DecideRetry(s, id, actor, p)
			case 5:
				drafts, _ = DecideClaim(s, runners[rng.Intn(2)], Target{Branch: "main"}, p, now)
			case 6, 7:
				e := s.Entry(id)
				if e == nil {
					break
				}
				to := Statuses[rng.Intn(len(Statuses))]
				if tos := transitions[e.Status]; len(tos) > 0 && rng.Intn(4) > 0 {
					to = tos[rng.Intn(len(tos))]
				}
				drafts, err = DecideStep(s, Step{EntryID: id, Runner: e.Runner, From: e.Status, To: to, HeadSHA: e.HeadSHA,
					TestedSHA: sha(100 + i), TestedAgainstSHA: sha(200 + i)}, p, now)
			case 8:
				merged := map[int64]bool{}
				for _, e := range s.Expired(now) {
					merged[e.ID] = rng.Intn(2) == 0
				}
				drafts = DecideRecover(s, merged, nil, p, now)
			case 9:
				if rng.Intn(2) == 0 {
					drafts = DecideFreeze(s, "x")
				} else {
					drafts = DecideUnfreeze(s)
				}
				if e := s.Entry(id); e != nil && e.Status.Processing() {
					drafts, err = DecideRenew(s, id, e.Runner, p, now)
				}
			}
			if err != nil {
				if len(drafts) != 0 {
					t.Fatalf("seed %d step %d: error %v with drafts", seed, i, err)
				}
				after, _ := s.MarshalState()
				if !bytes.Equal(before, after) {
					t.Fatalf("seed %d step %d: rejected op changed state", seed, i)
				}
				continue
			}
			fold(t, s, now, actor, drafts)
			if bad := CheckInvariants(s); len(bad) > 0 {
				t.Fatalf("seed %d step %d (op %d): %v", seed, i, op, bad)
			}
			checkAudit(t, s, prev, fmt.Sprintf("seed %d step %d", seed, i))
			if i%25 == 0 { // the render caches never go stale
				cached := s.render()
				for _, e := range s.All() {
					e.encoded = nil
				}
				if !bytes.Equal(cached, s.render()) {
					t.Fatalf("seed %d step %d: cached rendering is stale", seed, i)
				}
			}
		}
	}
}

type historyMark struct {
	status Status
	steps  int
	last   AuditStep
}

func snapshotHistory(s *State) []historyMark {
	out := make([]historyMark, s.Len())
	for i, e := range s.All() {
		out[i] = historyMark{e.Status, e.Steps, e.LastStep}
	}
	return out
}

func checkAudit(t *testing.T, s *State, prev []historyMark, where string) {
	t.Helper()
	for i, old := range prev {
		e := s.All()[i]
		if e.Steps < old.steps {
			t.Fatalf("%s: audit trail not append-only: entry %d trail shrank", where, e.ID)
		}
		if e.Steps == old.steps && e.LastStep != old.last {
			t.Fatalf("%s: audit trail not append-only: entry %d last step rewritten", where, e.ID)
		}
		if e.Steps > old.steps && (e.LastStep.N <= old.last.N || e.LastStep.At.Before(old.last.At)) {
			t.Fatalf("%s: audit step numbers or times went back: entry %d step %+v after %+v", where, e.ID, e.LastStep, old.last)
		}
		if e.Status != old.status && e.Steps == old.steps {
			t.Fatalf("%s: entry %d went %s → %s without an audit step", where, e.ID, old.status, e.Status)
		}
	}
}

// Submissions of one key serialize, at the decider level: the same submission
// decided twice in a row (as two serialized processes would) leaves one active
// entry.
func TestSameKeyTwiceSerializes(t *testing.T) {
	s := New()
	r := req("ws-a", 1, "ada")
	a := submit(t, s, r, t0)
	b := submit(t, s, r, t0)
	if a.EntryID != b.EntryID || a.Type != SubmissionNew || b.Type != SubmissionUpdated || s.ActiveCount() != 1 {
		t.Fatalf("%+v then %+v, %d active", a, b, s.ActiveCount())
	}
}
