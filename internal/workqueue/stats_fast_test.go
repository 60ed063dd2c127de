package workqueue

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// NativeStats on a state read from its snapshots (the index's counts and
// bits, the history, what changed since) is what Policy.Stats counts over
// every task of the state held whole: on the snapshot as written, after
// changes (blockers closed and reopened, labels, parents, claims, failures,
// blocks), at several times and under both policies.
func TestNativeStatsAsEveryTaskCounted(t *testing.T) {
	t.Parallel()
	for seed := range 12 {
		r := rand.New(rand.NewPCG(uint64(seed), 34))
		w := newWorld(t)
		pol := DefaultPolicy()
		if seed%2 == 1 {
			pol.Kind = Progressive
		}
		step := 1800
		if seed%3 != 2 {
			step, pol.MaxFailures = 90, 2 // backoffs still running, abandonments
		}
		at := t0
		var lastFail time.Time
		var ids, worked []string // worked: claimed at some point
		pick := func() string { return ids[r.IntN(len(ids))] }
		pickWorked := func() string {
			if len(worked) == 0 || r.IntN(4) == 0 {
				return pick()
			}
			return worked[r.IntN(len(worked))]
		}
		try := func(drafts []eventlog.Draft, err error) {
			if err == nil {
				w.apply("ada", at, drafts...)
			}
		}
		one := func(d eventlog.Draft, err error) { try([]eventlog.Draft{d}, err) }
		change := func(n int) {
			for range n {
				at = at.Add(time.Duration(r.IntN(step)) * time.Second)
				switch k := r.IntN(24); {
				case k < 7 || len(ids) == 0:
					var labels []string
					if r.IntN(6) == 0 {
						labels = []string{BlockedLabel}
					}
					ids = append(ids, w.add(fmt.Sprint("t", len(ids)), r.IntN(5), at, labels...))
				case k < 9:
					try(CloseTasks(w.s, []string{pick()}, "done"))
				case k < 10:
					one(Reopen(w.s, pick()))
				case k < 12:
					one(AddDep(w.s, pick(), pick()))
				case k < 13:
					one(AddDep(w.s, pick(), "sp-nothere"))
				case k < 14 && r.IntN(3) == 0:
					parent := pick()
					try(UpdateTask(w.s, pick(), Update{Parent: &parent}))
				case k < 15:
					if r.IntN(2) == 0 {
						try(UpdateTask(w.s, pickWorked(), Update{AddLabels: []string{BlockedLabel}}))
					} else {
						try(UpdateTask(w.s, pickWorked(), Update{RemoveLabels: []string{BlockedLabel}}))
					}
				case k < 17:
					id := pick()
					if drafts, err := ClaimTask(w.s, pol, id, "agent", "ada", at); err == nil {
						w.apply("ada", at, drafts...)
						worked = append(worked, id)
					}
				case k < 19:
					if drafts, err := Fail(w.s, pol, pickWorked(), "ada", "boom", at); err == nil {
						w.apply("ada", at, drafts...)
						lastFail = at
					}
				case k < 20:
					try(Done(w.s, pol, pickWorked(), "ada", "ok", at))
				case k < 21:
					one(Retry(w.s, pol, pickWorked(), at))
				case k < 22:
					one(Unblock(w.s, pickWorked(), r.IntN(2) == 0))
				case k < 23:
					id := pickWorked()
					one(Release(w.s, pol, id, "ada", at))
					if r.IntN(2) == 0 { // a pending entry: the label counts
						try(UpdateTask(w.s, id, Update{AddLabels: []string{BlockedLabel}}))
					}
				default:
					one(Block(w.s, pickWorked(), "stuck"))
				}
			}
		}
		change(300)
		for i := range 3 { // failed twice just now: in backoff, or abandoned
			id := w.add(fmt.Sprint("f", i), i, at)
			for range 2 {
				d, err := ClaimTask(w.s, pol, id, "agent", "ada", at)
				if err != nil {
					t.Fatal(err)
				}
				w.apply("ada", at, d...)
				if d, err = Fail(w.s, pol, id, "ada", "boom", at); err != nil {
					t.Fatal(err)
				}
				w.apply("ada", at, d...)
				lastFail = at
			}
		}
		fresh, onFile := w.reopener(t), w.fileReopener(t)
		for round := range 3 {
			if round > 0 {
				change(40)
			}
			for _, now := range []time.Time{at, at.Add(-2 * time.Hour), at.Add(time.Minute), at.Add(10 * time.Minute), at.Add(48 * time.Hour), lastFail.Add(30 * time.Second)} {
				g := pol.Gate(nil, nil)
				whole := fresh()
				whole.allTasks()
				want := whole.NativeStats(pol, g, now) // held whole: every task counted
				got := fresh().NativeStats(pol, g, now)
				if fold := w.s.NativeStats(pol, g, now); fold != want {
					t.Fatalf("seed %d round %d at %v: the fold's %+v, want %+v", seed, round, now, fold, want)
				}
				if want != got {
					t.Fatalf("seed %d round %d at %v: %+v, want %+v", seed, round, now, got, want)
				}
				// On a file, with tasks changed since the save: the summary,
				// corrected for them, without the index.
				lazy := onFile()
				if got := lazy.NativeStats(pol, g, now); want != got {
					t.Fatalf("seed %d round %d at %v, on a file: %+v, want %+v", seed, round, now, got, want)
				}
				if lazy.trk.lazy != nil && lazy.trk.lazy.loaded.Load() != nil {
					t.Fatalf("seed %d round %d: stats read the index", seed, round)
				}
			}
		}
	}
}
