package workqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// bd ready's orders walk a snapshot's open tasks by the creation times in
// its index and stop at the first limit found: the same tasks, in the same
// order, as ready's every task sorted by BeadsOrder; on the snapshot as
// written and with tasks added, closed, blocked and claimed since.
func TestReadyBeadsAsEveryTaskSorted(t *testing.T) {
	t.Parallel()
	for seed := range 8 {
		r := rand.New(rand.NewPCG(uint64(seed), 33))
		w := newWorld(t)
		at := t0
		var ids []string
		change := func(n int) {
			for range n {
				at = at.Add(time.Duration(r.IntN(3600)) * time.Second)
				switch k := r.IntN(10); {
				case k < 6 || len(ids) == 0:
					var labels []string
					if r.IntN(4) == 0 {
						labels = []string{BlockedLabel}
					} else if r.IntN(3) == 0 {
						labels = []string{"ui"}
					}
					ids = append(ids, w.add(fmt.Sprint("t", len(ids)), r.IntN(5), at, labels...))
				case k < 7:
					if d, err := CloseTasks(w.s, []string{ids[r.IntN(len(ids))]}, "done"); err == nil {
						w.apply("ada", at, d...)
					}
				case k < 9:
					if d, err := AddDep(w.s, ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]); err == nil {
						w.apply("ada", at, d)
					}
				default:
					if d, err := ClaimTask(w.s, DefaultPolicy(), ids[r.IntN(len(ids))], "agent", "ada", at); err == nil {
						w.apply("ada", at, d...)
					}
				}
			}
		}
		change(400)
		fresh := w.reopener(t)
		for round := range 2 {
			if round == 1 {
				change(60)
			}
			for _, now := range []time.Time{at, at.Add(-72 * time.Hour), at.Add(24 * time.Hour), at.Add(-300 * time.Hour)} {
				for _, sort := range []string{"hybrid", "priority", "oldest"} {
					for _, f := range []ReadyFilter{{}, {Claimed: true}, {Any: []string{"ui"}, Claimed: true}} {
						for _, keep := range []func(*Task) bool{nil, func(t *Task) bool { return t.Priority != 2 }} {
							for _, limit := range []int{1, 3, 10, 50, 0} {
								all := w.s.Ready(DefaultPolicy(), f, now, Unsorted)
								if keep != nil {
									all = slices.DeleteFunc(all, func(t *Task) bool { return !keep(t) })
								}
								want, err := BeadsOrder(all, sort, now, limit)
								if err != nil {
									t.Fatal(err)
								}
								got, err := fresh().ReadyBeads(DefaultPolicy(), f, now, keep, sort, limit)
								if err != nil {
									t.Fatal(err)
								}
								if wi, gi := taskIDs(want), taskIDs(got); !slices.Equal(wi, gi) {
									t.Fatalf("seed %d round %d: %s %+v limit %d at %v: %v, want %v", seed, round, sort, f, limit, now, gi, wi)
								}
								if limit == 3 && len(want) < 3 && f.Claimed && keep == nil && sort == "hybrid" && now == at {
									t.Logf("seed %d: only %d ready", seed, len(want))
								}
							}
						}
					}
				}
			}
		}
	}
}

func taskIDs(ts []*Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
