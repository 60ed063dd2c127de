package workqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Claimable lists what next would claim, in the order it would claim them:
// claiming its list one next at a time (on a fork) takes exactly that list,
// under both policies, with a gate, at several times; its first limit are
// the first limit of all.
func TestClaimableIsNextsOrder(t *testing.T) {
	t.Parallel()
	for seed := range 6 {
		r := rand.New(rand.NewPCG(uint64(seed), 31))
		for _, kind := range []string{Exponential, Progressive} {
			p := DefaultPolicy()
			p.Kind = kind
			p.MaxFailures = 4
			w := newWorld(t)
			at := t0
			var ids []string
			for range 120 {
				at = at.Add(time.Duration(r.IntN(600)) * time.Second)
				switch k := r.IntN(10); {
				case k < 5 || len(ids) == 0:
					var labels []string
					if r.IntN(4) == 0 {
						labels = []string{"ui"}
					}
					ids = append(ids, w.add(fmt.Sprint("t", len(ids)), r.IntN(3), at, labels...))
				case k < 8:
					if id := w.next(p, Gate{}, "x", at); id != "" {
						w.fail(p, id, "x", "boom", at)
					}
				case k < 9:
					if d, err := AddDep(w.s, ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]); err == nil {
						w.apply("ada", at, d)
					}
				default:
					if id := w.next(p, Gate{}, "x", at); id != "" {
						d, err := Done(w.s, p, id, "x", "", at)
						w.must("x", at, d, err)
					}
				}
			}
			for _, now := range []time.Time{at, at.Add(30 * time.Second), at.Add(time.Hour)} {
				for _, g := range []Gate{{}, {Exclude: []string{"ui"}}, {Require: []string{"ui"}}} {
					all := w.s.Claimable(p, g, ReadyFilter{}, now, 0)
					f := NewFork(w.s, "x", now)
					var taken []string
					for {
						st, err := f.State()
						if err != nil {
							t.Fatal(err)
						}
						drafts, c, err := Next(st, nil, true, p, g, "x", "x", now)
						if err != nil {
							t.Fatal(err)
						}
						if c == nil {
							break
						}
						taken = append(taken, c.Task.ID)
						f.Add(drafts...)
					}
					got := taskIDs(all)
					if !slices.Equal(got, taken) {
						t.Fatalf("seed %d %s gate %+v at %s: Claimable %v, next takes %v", seed, kind, g, now, got, taken)
					}
					for _, limit := range []int{1, 2, 5} {
						if first := taskIDs(w.s.Claimable(p, g, ReadyFilter{}, now, limit)); !slices.Equal(first, got[:min(limit, len(got))]) {
							t.Fatalf("seed %d %s: limit %d gives %v, the first of %v", seed, kind, limit, first, got)
						}
					}
				}
			}
		}
	}
}
