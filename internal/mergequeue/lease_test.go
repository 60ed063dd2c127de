package mergequeue

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestLeaseRuleAgrees holds Expired, recovery, NextExpiry and the claim to
// one rule of a lease (leaseLive), at random claim and renewal times and at
// each lease's end exactly: at NextExpiry, Expired is never empty and the
// entry it names is one recovery takes; a nanosecond before, it lists
// nothing, and a live lease still holds the train (no claim).
func TestLeaseRuleAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	paths := [][]Status{nil, {Rebasing}, {Rebasing, Testing}, {Rebasing, Testing, ReadyToMerge}}
	for round := range 200 {
		s := New()
		submit(t, s, req("ws-a", 1, "ada"), t0)
		submit(t, s, req("ws-b", 2, "bob"), t0)
		claimed := t0.Add(time.Duration(rng.IntN(600)) * time.Second)
		drive(t, s, 1, paths[rng.IntN(len(paths))], claimed)
		if rng.IntN(2) == 0 {
			renewed := claimed.Add(time.Duration(rng.IntN(600)) * time.Second)
			fold(t, s, renewed, "train", must(DecideRenew(s, 1, "r1", pol, renewed)))
		}
		asked := claimed.Add(time.Duration(rng.IntN(900)) * time.Second)
		at := s.NextExpiry(asked)
		if at.IsZero() {
			if len(s.Expired(asked)) == 0 {
				t.Fatalf("round %d: no lease to run out after %s, and none expired", round, asked)
			}
			continue
		}
		if got := s.Expired(at); len(got) != 1 || got[0].ID != 1 {
			t.Fatalf("round %d: at NextExpiry %s, Expired lists %v", round, at, got)
		}
		if got := s.Recoverable(at, nil); len(got) != 1 || got[0].ID != 1 {
			t.Fatalf("round %d: at NextExpiry %s, recovery takes %v", round, at, got)
		}
		before := at.Add(-time.Nanosecond)
		if got := s.Expired(before); len(got) != 0 {
			t.Fatalf("round %d: a nanosecond before NextExpiry, Expired lists %v", round, got)
		}
		if _, e := DecideClaim(s, "r2", Target{Branch: "main"}, pol, before); e != nil {
			t.Fatalf("round %d: claimed entry %d under a live lease", round, e.ID)
		}
	}
}
