package jobs

import (
	"testing"
	"time"
)

// Who may submit urgent work (meant for review re-renders and interactive
// requests): anyone, up to scheduler.urgent_limit urgent jobs not ended at
// once; admins without a limit; 0 keeps it to admins. Raising a job to urgent
// counts the same. A recurring urgent schedule stays an admin's.
func TestUrgentLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.UrgentLimit = 2
	try := func(actor string, n Submit) error {
		t.Helper()
		if n.Argv == nil {
			n.Argv = []string{"render.sh"}
		}
		d, _, err := SubmitJob(w.s, w.p, n, actor, "w1", w.now)
		if err == nil {
			w.apply(actor, d, nil)
		}
		return err
	}
	for i := range 2 {
		if err := try("ada", Submit{Tier: Urgent}); err != nil {
			t.Fatalf("ada's urgent job %d: %v", i+1, err)
		}
	}
	err := try("ada", Submit{Tier: Urgent})
	wantCode(t, err, "urgent_limit_reached")
	if err := try("bob", Submit{Tier: Urgent}); err != nil {
		t.Fatalf("bob has his own limit: %v", err)
	}
	for range 3 {
		if err := try("root", Submit{Tier: Urgent}); err != nil {
			t.Fatalf("admins have no limit: %v", err)
		}
	}
	wantCode(t, try("ada", Submit{Tier: Urgent, Every: "daily"}), "unauthorized")

	// Raising a normal job to urgent counts too.
	n := w.submit("ada", Submit{})
	urgent := Urgent
	_, err = EditJob(w.s, w.p, n, Edit{Tier: &urgent}, "ada", w.now)
	wantCode(t, err, "urgent_limit_reached")

	// One of ada's urgent jobs ends: room for one more.
	id := w.claim("w", 4)
	if w.s.Jobs[id].Owner != "ada" {
		t.Fatalf("dispatched %s of %s", id, w.s.Jobs[id].Owner)
	}
	w.segmentDone(id, 0)
	d, err := EditJob(w.s, w.p, n, Edit{Tier: &urgent}, "ada", w.now)
	w.apply("ada", d, err)
	wantCode(t, try("ada", Submit{Tier: Urgent}), "urgent_limit_reached")

	// 0: admins only.
	w.p.UrgentLimit = 0
	wantCode(t, try("carol", Submit{Tier: Urgent}), "unauthorized")
}

// Off-peak jobs yield to higher-priority work, not only to urgent work: at
// their next segment boundary, when a job of a higher tier than theirs waits
// for their slots. A job of their own tier or a lower one does not move them.
func TestOffPeakYieldsToHigherTiers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		offPeak, wait Tier
		yield         bool
	}{
		{"background off-peak, normal waits", Background, Normal, true},
		{"background off-peak, urgent waits", Background, Urgent, true},
		{"normal off-peak, urgent waits", Normal, Urgent, true},
		{"normal off-peak, normal waits", Normal, Normal, false},
		{"normal off-peak, background waits", Normal, Background, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.p.OffPeak, _ = ParseWindow("22:00-08:00")
			w.p.UrgentLimit = 5
			w.now = time.Date(2026, 3, 2, 23, 0, 0, 0, time.UTC)
			op := w.submit("ada", Submit{Tier: tc.offPeak, OffPeak: true, Segments: 3})
			if got := w.claim("w", 1); got != op {
				t.Fatalf("dispatched %q, want the off-peak job", got)
			}
			waiting := w.submit("bob", Submit{Tier: tc.wait})
			if got := w.claim("w", 1); got != "" {
				t.Fatalf("dispatched %s with no slot free", got)
			}
			if got := w.s.Jobs[op].YieldRequested; got != tc.yield {
				t.Fatalf("yield requested %v, want %v", got, tc.yield)
			}
			if !tc.yield {
				return
			}
			if next := w.segmentDone(op, 0); next != -1 || w.status(op) != Queued || w.s.Jobs[op].DoneSegments() != 1 {
				t.Fatalf("at the boundary: next %d, %s", next, w.status(op))
			}
			if got := w.claim("w", 1); got != waiting {
				t.Fatalf("dispatched %q, want the waiting %s", got, waiting)
			}
		})
	}
}
