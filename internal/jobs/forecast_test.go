package jobs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// drive runs w's worker (slots in all) the way spool job worker does, each
// segment taking exactly the policy's default segment time, until nothing
// waits or until stop: at each moment it claims until nothing fits, then
// moves the clock to the next segment end, tick or window opening. It
// returns the jobs in the order they were first dispatched, and when.
func (w *world) drive(worker string, slots int, stop time.Time) ([]string, map[string]time.Time) {
	w.t.Helper()
	var order []string
	started := map[string]time.Time{}
	// ends are the running segments' ends, from the state.
	ends := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, j := range w.s.Jobs {
			if j.Status != Running {
				continue
			}
			for _, sg := range j.Segs {
				if !sg.Started.IsZero() && sg.Ended.IsZero() {
					out[j.ID] = sg.Started.Add(w.p.DefaultSegment)
				}
			}
		}
		return out
	}
	for steps := 0; steps < 10000; steps++ {
		for {
			id := w.claim(worker, slots)
			if id == "" {
				break
			}
			if _, ok := started[id]; !ok {
				order = append(order, id)
				started[id] = w.now
			}
		}
		var then time.Time
		soonest := func(t time.Time) {
			if t.After(w.now) && (then.IsZero() || t.Before(then)) {
				then = t
			}
		}
		running := ends()
		for _, at := range running {
			soonest(at)
		}
		soonest(NextTick(w.s, w.p, w.now))
		waiting := false
		for _, j := range w.s.Jobs {
			waiting = waiting || j.Status == Queued || j.Status == Scheduled
			if j.Status == Queued && j.OffPeak {
				soonest(w.p.OffPeak.Next(w.now, w.p.Zone))
			}
		}
		if !waiting && len(running) == 0 {
			return order, started
		}
		if then.IsZero() || !stop.IsZero() && then.After(stop) {
			if !stop.IsZero() {
				w.now = stop
			}
			return order, started
		}
		w.now = then
		ids := make([]string, 0, len(running))
		for id, at := range running {
			if !at.After(w.now) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			w.segmentDone(id, 0)
		}
	}
	w.t.Fatal("the worker never ran out of work")
	return nil, nil
}

// The list's order and start times are the dispatcher's: with Ada's a1..a6
// submitted before Bob's b1..b3 and one slot, fair share takes turns, and
// the list says so before the worker runs them.
func TestListOrderIsTheDispatchOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.Lease = 24 * time.Hour
	w.s.Workers["w"] = &Worker{Name: "w", Slots: 1, Seen: w.now}
	names := map[string]string{}
	for i := 1; i <= 6; i++ {
		names[w.submit("ada", Submit{Name: fmt.Sprint("a", i)})] = fmt.Sprint("a", i)
	}
	for i := 1; i <= 3; i++ {
		names[w.submit("bob", Submit{Name: fmt.Sprint("b", i)})] = fmt.Sprint("b", i)
	}
	var listed []string
	likely := map[string]time.Time{}
	for _, r := range w.s.List(w.p, w.now, false) {
		listed = append(listed, names[r.ID])
		likely[r.ID] = r.LikelyStart
		if r.Position != len(listed) {
			t.Fatalf("%s at position %d, row %d", names[r.ID], r.Position, len(listed))
		}
	}
	if want := "a1 b1 a2 b2 a3 b3 a4 a5 a6"; strings.Join(listed, " ") != want {
		t.Fatalf("list reads %q, want %q", strings.Join(listed, " "), want)
	}
	// job explain agrees with the list: a1 is next, b1 second with a1
	// ahead, and neither says someone else's jobs go first.
	a1, b1 := w.s.List(w.p, w.now, false)[0].ID, w.s.List(w.p, w.now, false)[1].ID
	for i, id := range []string{a1, b1} {
		e, err := w.s.Explain(w.p, id, w.now)
		if err != nil {
			t.Fatal(err)
		}
		if e.Position != i+1 || e.Next != (i == 0) {
			t.Fatalf("explain %s: position %d, next %v", names[id], e.Position, e.Next)
		}
		other := map[int]string{0: "bob's jobs go first", 1: "ada's jobs go first"}[i]
		for _, r := range e.Reasons {
			if strings.Contains(r, other) {
				t.Fatalf("explain %s at position %d says %q", names[id], e.Position, r)
			}
		}
		t.Logf("explain %s: %q", names[id], e.Reasons)
	}
	order, started := w.drive("w", 1, time.Time{})
	var ran []string
	for _, id := range order {
		ran = append(ran, names[id])
		if !started[id].Equal(likely[id]) {
			t.Errorf("%s started at %s, the list said %s", names[id], started[id], likely[id])
		}
	}
	if !slices.Equal(ran, listed) {
		t.Fatalf("the worker ran %v, the list said %v", ran, listed)
	}
}

// Whatever the queue (owners, tiers, widths, off-peak jobs and their
// yields, start_after, jobs running already), when every segment takes its
// expected time the worker dispatches the queued jobs in the list's order,
// and every waiting job at the time the list said. Under fair share the
// jobs have one segment: the simulation counts a job's slot time from its
// start to its end, where the dispatcher decays each segment from its own.
func TestForecastIsTheDispatcher(t *testing.T) {
	t.Parallel()
	yields := 0
	defer func() {
		t.Logf("%d yields", yields)
		if yields == 0 && !t.Failed() {
			t.Error("no case made an off-peak job yield")
		}
	}()
	for seed := range 90 {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 28))
			w := newWorld(t)
			w.p.Lease = 24 * time.Hour
			w.p.UrgentLimit = 1000
			w.p.OffPeak, _ = ParseWindow("22:00-08:00")
			w.p.Fair = seed%3 != 0
			w.now = time.Date(2026, 3, 2, 20, 0, 0, 0, time.UTC)
			segments := 1
			if !w.p.Fair {
				w.now = time.Date(2026, 3, 2, 21, 40, 0, 0, time.UTC) // the window opens soon
				segments = 4
			}
			slots := 1 + rng.IntN(3)
			w.s.Workers["w"] = &Worker{Name: "w", Slots: slots, Seen: w.now}
			owners := []string{"ada", "bob", "cy"}
			tiers := []Tier{Urgent, Normal, Normal, Background}
			submit := func(n, offPeak int) { // one in offPeak is off-peak
				for range n {
					s := Submit{Tier: tiers[rng.IntN(len(tiers))], Slots: 1 + rng.IntN(slots), OffPeak: rng.IntN(offPeak) == 0, Segments: 1 + rng.IntN(segments)}
					if s.OffPeak && rng.IntN(2) == 0 {
						s.Tier = Background // the likeliest to yield
					}
					if rng.IntN(5) == 0 {
						s.StartAfter = w.now.Add(time.Duration(rng.IntN(180)) * time.Minute)
					}
					w.submit(owners[rng.IntN(len(owners))], s)
				}
			}
			submit(4+rng.IntN(6), 2)
			w.drive("w", slots, w.now.Add(time.Duration(rng.IntN(50))*time.Minute)) // some done, some running
			submit(3+rng.IntN(8), 5)

			likely := map[string]time.Time{}
			var listed []string
			for _, r := range w.s.List(w.p, w.now, false) {
				if r.Status == Queued || r.Status == Scheduled {
					likely[r.ID] = r.LikelyStart
				}
				if r.Status == Queued && !r.LikelyStart.IsZero() {
					listed = append(listed, r.ID)
				}
			}
			order, started := w.drive("w", slots, time.Time{})
			for _, j := range w.s.Jobs {
				for _, tr := range j.Trail {
					if tr.Reason == ReasonYield {
						yields++
					}
				}
			}
			var ran []string
			for _, id := range order {
				if slices.Contains(listed, id) {
					ran = append(ran, id)
				}
			}
			if !slices.Equal(ran, listed) {
				t.Errorf("the worker dispatched %v, the list said %v", ran, listed)
			}
			ids := make([]string, 0, len(likely))
			for id := range likely {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				if got, want := started[id], likely[id]; !got.Equal(want) {
					j := w.s.Jobs[id]
					t.Errorf("%s (%s %s, %d slots, off-peak %v) started at %s, the list said %s", id, j.Owner, j.Tier, j.Slots, j.OffPeak, got, want)
				}
			}
		})
	}
}
