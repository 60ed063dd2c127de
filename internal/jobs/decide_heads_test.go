package jobs_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

// Decide keeps only each lane's first job: it decides what it decided
// from the whole sorted queue, for random histories, clocks and offers.
func TestDecideFromLaneHeadsIsTheWholeQueue(t *testing.T) {
	t.Parallel()
	c := newClone("w").(*clone)
	decided := 0
	for seed := range uint64(24) {
		s := built(t, seed, 400).State()
		for h := range 24 {
			now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(h) * 97 * time.Minute)
			for _, p := range []jobs.Policy{c.policy(), func() jobs.Policy { p := c.policy(); p.Fair = false; return p }()} {
				for _, o := range []jobs.Offer{{Worker: "w1", Free: 2, Total: 2}, {Worker: "w2", Free: 0, Total: 1}, {Worker: "w3", Free: 1, Total: 4}} {
					got, want := s.Decide(p, o, now), jobs.DecideWhole(s, p, o, now)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d at %s, %+v: %+v, whole queue %+v", seed, now, o, got, want)
					}
					if got.Job != nil || got.Next != nil {
						decided++
					}
				}
			}
		}
	}
	if decided < 500 {
		t.Fatalf("only %d decisions found a job", decided)
	}
}
