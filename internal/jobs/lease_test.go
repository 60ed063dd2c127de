package jobs

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// TestLeaseEndAgrees holds Tick and NextTick to one rule of a job's lease
// (leaseRunOut): a lease holds through its end, Tick requeues the job at
// the time NextTick names and not a nanosecond before, however the lease
// was last extended.
func TestLeaseEndAgrees(t *testing.T) {
	for _, beat := range []time.Duration{0, time.Minute, 4*time.Minute + time.Nanosecond} {
		w := newWorld(t)
		id := w.submit("ada", Submit{Segments: 2})
		if w.claim("w1", 1) != id {
			t.Fatal("no claim")
		}
		if beat > 0 {
			w.now = w.now.Add(beat)
			d, _, err := Heartbeat(w.s, w.p, id, "w1", w.now)
			w.apply("w1", []eventlog.Draft{d}, err)
		}
		at := NextTick(w.s, w.p, w.now)
		if !at.Equal(w.s.Jobs[id].LeaseUntil.Add(time.Nanosecond)) {
			t.Fatalf("NextTick %s, lease until %s", at, w.s.Jobs[id].LeaseUntil)
		}
		if d := Tick(w.s, w.p, at.Add(-time.Nanosecond), nil); len(d) != 0 {
			t.Fatalf("a nanosecond before NextTick (the lease's end), Tick decided %v", d)
		}
		d := Tick(w.s, w.p, at, nil)
		if len(d) != 1 || d[0].Type != TypeRequeued {
			t.Fatalf("at NextTick, Tick decided %v", d)
		}
	}
}
