package jobs

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// listed is the waiting jobs' ids in the order job list shows them.
func listed(s *State, p Policy, now time.Time) []string {
	var out []string
	for _, w := range s.view(p, now).order {
		out = append(out, w.j.ID)
	}
	return out
}

// with is s with job id given d's order and tier, as a move would.
func with(s *State, id string, d MovedData) *State {
	moved := *s.Jobs[id]
	moved.Order, moved.Tier, moved.Moved = d.Order, d.Tier, true
	alt := *s
	alt.Jobs = maps.Clone(s.Jobs)
	alt.Jobs[id] = &moved
	return &alt
}

// nextTo says whether id sits right before (or after) ref in list.
func nextTo(list []string, id, ref string, before bool) bool {
	i, r := slices.Index(list, id), slices.Index(list, ref)
	if before {
		return i == r-1
	}
	return i == r+1
}

// A move before or after a job is in the order job list shows, which fair
// share and quotas make differ from the queue's: the moved job lands right
// next to it whenever some place in its tier puts it there (every gap of
// the queue tried by brute force), and otherwise on the asked side of it.
func TestMoveLandsNextToTheListedNeighbour(t *testing.T) {
	t.Parallel()
	users := []string{"ada", "bob", "cy"}
	adjacent, tried := 0, 0
	for seed := range 60 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		w := newWorld(t)
		w.p.Fair = r.IntN(4) != 0
		w.p.Admins = append(w.p.Admins, users...)
		// Some usage first, so that fair share reorders the queue.
		for range r.IntN(4) {
			id := w.submit(users[r.IntN(len(users))], Submit{})
			w.claim("w", 4)
			w.now = w.now.Add(time.Duration(1+r.IntN(60)) * time.Minute)
			w.segmentDone(id, 0)
		}
		var ids []string
		for range 6 + r.IntN(10) {
			tier := Normal
			if r.IntN(6) == 0 {
				tier = Background
			}
			ids = append(ids, w.submit(users[r.IntN(len(users))], Submit{Tier: tier, Slots: 1 + r.IntN(2)}))
			w.now = w.now.Add(time.Duration(r.IntN(90)) * time.Second)
		}
		for range 4 {
			id, ref := ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]
			if id == ref {
				continue
			}
			before := r.IntN(2) == 0
			m := Move{After: ref}
			if before {
				m = Move{Before: ref}
			}
			drafts, err := MoveJob(w.s, w.p, id, m, "root", w.now)
			if err != nil {
				t.Fatal(err)
			}
			got := listed(with(w.s, id, drafts[0].Data.(MovedData)), w.p, w.now)
			possible := false
			for _, o := range w.s.Jobs {
				for _, delta := range []int64{-1, 1} {
					if o.ID != id && o.Tier == w.s.Jobs[ref].Tier && nextTo(listed(with(w.s, id, MovedData{Order: o.Order + delta, Tier: o.Tier}), w.p, w.now), id, ref, before) {
						possible = true
					}
				}
			}
			tried++
			side := slices.Index(got, id) < slices.Index(got, ref)
			switch {
			case nextTo(got, id, ref, before):
				adjacent++
			case possible:
				t.Fatalf("seed %d (fair %v): %s moved %s %s lands at %v, though a place next to it exists", seed, w.p.Fair, id, map[bool]string{true: "before", false: "after"}[before], ref, got)
			case side != before:
				t.Fatalf("seed %d: %s moved %s %s lands on the other side: %v", seed, id, map[bool]string{true: "before", false: "after"}[before], ref, got)
			}
			w.apply("root", drafts, nil)
		}
	}
	if adjacent < tried/2 { // the set-up would no longer test much
		t.Fatalf("only %d of %d moves landed next to their neighbour", adjacent, tried)
	}
	t.Logf("%d of %d moves landed right next to their neighbour", adjacent, tried)
}

// A move under fair share at 1,000 queued jobs of three users, to the
// middle of the list: the bisection's forecasts are its cost.
func BenchmarkMoveFairShare(b *testing.B) {
	w := newWorld(b)
	users := []string{"ada", "bob", "cy"}
	for i := range 3 {
		id := w.submit(users[i], Submit{})
		w.claim("w", 4)
		w.now = w.now.Add(time.Duration(10*(i+1)) * time.Minute)
		w.segmentDone(id, 0)
	}
	var ids []string
	for i := range 1000 {
		ids = append(ids, w.submit(users[i%3], Submit{}))
	}
	list := listed(w.s, w.p, w.now)
	b.ResetTimer()
	for b.Loop() {
		if _, err := MoveJob(w.s, w.p, ids[0], Move{After: list[500]}, "root", w.now); err != nil {
			b.Fatal(err)
		}
	}
}
