package mergequeue

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// At exactly the time a lease runs out, every rule that reads leases
// agrees: NextExpiry (when the watch wakes) names a time at which Expired
// lists the entry, recovery takes it (Recoverable) and the claim rule no
// longer waits for it; an instant before, none of them does. Random runs
// of submit, claim, renew, steps and recovery, with leases of several
// lengths and a clock that now and then lands exactly on NextExpiry, as
// the watch does.
func TestExpiryRulesAgreeAtTheLeaseEnd(t *testing.T) {
	seeds, steps := 30, 200
	if testing.Short() {
		seeds = 5
	}
	target := Target{Branch: "main"}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := New()
		now := t0
		p := pol
		boundaries := 0
		for i := range steps {
			where := fmt.Sprintf("seed %d step %d", seed, i)
			checkExpiryRules(t, s, p, target, now, where, &boundaries)
			switch rng.Intn(4) {
			case 0:
				now = now.Add(time.Duration(rng.Intn(120)) * time.Second)
			case 1:
				if at := s.NextExpiry(now); !at.IsZero() {
					now = at // the watch wakes at the lease's end
				}
			}
			p.Lease = time.Duration(1+rng.Intn(5)) * time.Minute
			var id int64
			if s.Len() > 0 {
				id = int64(rng.Intn(s.Len()) + 1)
			}
			runner := []string{"r1", "r2"}[rng.Intn(2)]
			switch op := rng.Intn(8); {
			case op < 2:
				sub, err := DecideSubmit(s, req(fmt.Sprintf("ws%d", rng.Intn(6)), rng.Intn(5)+1, "ada"), p, now)
				if err == nil {
					fold(t, s, now, "ada", sub.Drafts)
				}
			case op < 4:
				d, _ := DecideClaim(s, runner, target, p, now)
				fold(t, s, now, runner, d)
			case op == 4:
				if e := s.Entry(id); e != nil && e.Status.Processing() {
					if d, err := DecideRenew(s, id, e.Runner, p, now); err == nil {
						fold(t, s, now, e.Runner, d)
					}
				}
			case op == 5:
				if e := s.Entry(id); e != nil && e.Status.Processing() {
					if to, ok := happyPathStep[e.Status]; ok {
						d, err := DecideStep(s, Step{EntryID: id, Runner: e.Runner, From: e.Status, To: to, HeadSHA: e.HeadSHA,
							TestedSHA: sha(100 + i), TestedAgainstSHA: sha(200 + i)}, p, now)
						if err == nil {
							fold(t, s, now, e.Runner, d)
						}
					}
				}
			default:
				merged := map[int64]bool{}
				for _, e := range s.Expired(now) {
					merged[e.ID] = rng.Intn(2) == 0
				}
				fold(t, s, now, "watch", DecideRecover(s, merged, nil, p, now))
			}
		}
		if boundaries == 0 {
			t.Fatalf("seed %d: no lease was ever live: the test checked nothing at a lease's end", seed)
		}
	}
}

var happyPathStep = map[Status]Status{Claimed: Rebasing, Rebasing: Testing, Testing: ReadyToMerge, ReadyToMerge: Merging, Merging: Merged}

// checkExpiryRules checks the rules at now, at NextExpiry(now) and an
// instant before it.
func checkExpiryRules(t *testing.T, s *State, p Policy, target Target, now time.Time, where string, boundaries *int) {
	t.Helper()
	next := s.NextExpiry(now)
	if next.IsZero() {
		for _, e := range s.All() {
			if e.Status.Processing() && e.LeaseUntil != nil && e.LeaseUntil.After(now) {
				t.Fatalf("%s: NextExpiry says no lease is live at %v; entry %d's runs to %v", where, now, e.ID, *e.LeaseUntil)
			}
		}
		checkClaimAgrees(t, s, p, target, now, where)
		return
	}
	*boundaries++
	if !next.After(now) {
		t.Fatalf("%s: NextExpiry(%v) is %v, not after it", where, now, next)
	}
	ending := func(list []*Entry) (n int) {
		for _, e := range list {
			if e.LeaseUntil != nil && e.LeaseUntil.Equal(next) {
				n++
			}
		}
		return n
	}
	expired, recoverable := s.Expired(next), s.Recoverable(next, nil)
	if len(expired) == 0 || ending(expired) == 0 {
		t.Fatalf("%s: at NextExpiry %v Expired lists %v, not the lease that ends then", where, next, entryIDs(expired))
	}
	for _, e := range expired {
		if !slices.Contains(recoverable, e) {
			t.Fatalf("%s: at %v entry %d is expired and recovery does not take it", where, next, e.ID)
		}
	}
	before := next.Add(-time.Nanosecond)
	if n := ending(s.Expired(before)) + ending(s.Recoverable(before, nil)); n != 0 {
		t.Fatalf("%s: a lease that runs to %v is expired an instant before", where, next)
	}
	for _, at := range []time.Time{now, before, next} {
		checkClaimAgrees(t, s, p, target, at, where)
	}
}

// checkClaimAgrees: the claim rule waits at at exactly while a processing
// entry's lease is live, that is, while one is not Expired.
func checkClaimAgrees(t *testing.T, s *State, p Policy, target Target, at time.Time, where string) {
	t.Helper()
	expired := s.Expired(at)
	live := false
	for _, e := range s.All() {
		if e.Status.Processing() && !slices.Contains(expired, e) {
			live = true
		}
	}
	_, claimed := DecideClaim(s, "r-check", target, p, at)
	waiting := len(s.OrderAt(at, p.Aging).Queue) > 0 && !s.Frozen
	switch {
	case live && claimed != nil:
		t.Fatalf("%s: at %v a lease is live (Expired lists %v) and entry %d was claimed", where, at, entryIDs(expired), claimed.ID)
	case !live && waiting && claimed == nil:
		t.Fatalf("%s: at %v every lease ran out (Expired lists %v) and nothing was claimed", where, at, entryIDs(expired))
	}
}

func entryIDs(list []*Entry) []int64 {
	out := make([]int64, len(list))
	for i, e := range list {
		out[i] = e.ID
	}
	return out
}

// Two clones' trains that claimed apart leave two live leases in the
// merged log: NextExpiry is the first to run out, and the rules agree at
// each lease's end.
func TestExpiryRulesWithTwoLiveLeases(t *testing.T) {
	a, b := New(), New()
	for _, ws := range []string{"ws1", "ws2", "ws3"} {
		submit(t, a, req(ws, 1, "ada"), t0)
	}
	snap, err := a.MarshalState() // the other clone has the same log
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalState(snap); err != nil {
		t.Fatal(err)
	}
	long, short := pol, pol
	long.Lease, short.Lease = 9*time.Minute, 4*time.Minute
	now := t0.Add(time.Minute)
	first, e1 := DecideClaim(a, "r1", Target{Branch: "main"}, long, now)
	second, e2 := DecideClaim(b, "r2", Target{Branch: "main", Passed: map[int64]bool{1: true}}, short, now)
	if e1 == nil || e2 == nil || e1.ID == e2.ID {
		t.Fatalf("claimed %v and %v", e1, e2)
	}
	fold(t, a, now, "r1", first)
	fold(t, a, now, "r2", second)
	live := 0
	for _, e := range a.All() {
		if e.Status.Processing() {
			live++
		}
	}
	if live != 2 {
		t.Fatalf("%d entries processing after the merge, want 2", live)
	}
	if got, want := a.NextExpiry(now), now.Add(short.Lease); !got.Equal(want) {
		t.Fatalf("NextExpiry %v, want the first lease's end %v", got, want)
	}
	boundaries := 0
	for at := now; !at.IsZero(); at = a.NextExpiry(at) {
		checkExpiryRules(t, a, pol, Target{Branch: "main"}, at, fmt.Sprintf("at %v", at), &boundaries)
	}
	if boundaries != 2 {
		t.Fatalf("%d lease ends checked, want 2", boundaries)
	}
}
