package jobs_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

// built folds a random scheduler history (the conformance suite's
// commands) and returns its projection.
func built(t testing.TB, seed uint64, steps int) *jobs.Projection {
	t.Helper()
	return fold(history(t, seed, steps))
}

// The snapshot reads back the state it was written from, field for field
// (an exit code of 0 included, which gob dropped), and writes the same
// bytes again.
func TestSnapshotReadsBackTheState(t *testing.T) {
	t.Parallel()
	exits, holders := 0, 0
	for seed := range uint64(20) {
		p := built(t, seed, 300)
		b, err := p.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		back := jobs.Spec.New().(*jobs.Projection)
		if err := back.UnmarshalState(bytes.Clone(b)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(back.State(), p.State()) {
			t.Fatalf("seed %d: the state read back differs", seed)
		}
		if again, _ := back.MarshalState(); !bytes.Equal(again, b) {
			t.Fatalf("seed %d: written again, the snapshot differs", seed)
		}
		for _, j := range p.State().Jobs {
			if j.Holder != nil {
				holders++
			}
			for _, g := range j.Segs {
				if g.ExitCode != nil {
					exits++
				}
			}
		}
	}
	if exits == 0 || holders == 0 {
		t.Fatalf("%d exit codes, %d jobs held by a recorded worker process: the test covers too little", exits, holders)
	}
}

// A time in a zone, or far from now, keeps its instant and its offset.
func TestSnapshotKeepsZonesAndFarDates(t *testing.T) {
	t.Parallel()
	p := built(t, 1, 50)
	zoned := time.Date(2026, 5, 1, 10, 0, 0, 5, time.FixedZone("CEST", 2*3600))
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	old := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, j := range p.State().Jobs {
		j.StartAfter, j.Ended, j.GraceUntil = zoned, far, old
	}
	b, _ := p.MarshalState()
	back := jobs.Spec.New().(*jobs.Projection)
	if err := back.UnmarshalState(b); err != nil {
		t.Fatal(err)
	}
	same := func(a, b time.Time) bool {
		_, oa := a.Zone()
		_, ob := b.Zone()
		return a.Equal(b) && oa == ob
	}
	for id, j := range back.State().Jobs {
		if !same(j.StartAfter, zoned) || !same(j.Ended, far) || !same(j.GraceUntil, old) {
			t.Fatalf("%s: %v %v %v", id, j.StartAfter, j.Ended, j.GraceUntil)
		}
	}
}

// Whatever bytes it is given, UnmarshalState refuses them or reads a state
// that writes itself stably; it never panics.
func FuzzUnmarshalState(f *testing.F) {
	b, _ := built(f, 2, 80).MarshalState()
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte("spool-jobs-3\n\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := jobs.Spec.New().(*jobs.Projection)
		if p.UnmarshalState(b) != nil {
			return
		}
		once, err := p.MarshalState()
		if err != nil {
			return // a time gob cannot write, read from crafted bytes
		}
		again := jobs.Spec.New().(*jobs.Projection)
		if err := again.UnmarshalState(once); err != nil {
			t.Fatalf("cannot read what it wrote: %v", err)
		}
		if twice, _ := again.MarshalState(); !bytes.Equal(twice, once) {
			t.Fatal("unstable")
		}
	})
}
