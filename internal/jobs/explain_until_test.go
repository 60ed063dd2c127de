package jobs_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

// Explain stops its simulation once the job starts: for every job of
// random histories it says what it said with the whole simulation run.
func TestExplainStopsAtTheJobLikeTheWholeRun(t *testing.T) {
	t.Parallel()
	c := newClone("w").(*clone)
	checked := 0
	for seed := range uint64(12) {
		s := built(t, seed, 300).State()
		for _, now := range []time.Time{time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)} {
			for _, j := range s.Sorted() {
				got, err1 := s.Explain(c.policy(), j.ID, now)
				want, err2 := jobs.ExplainWhole(s, c.policy(), j.ID, now)
				if (err1 == nil) != (err2 == nil) {
					t.Fatalf("seed %d %s: %v, whole %v", seed, j.ID, err1, err2)
				}
				// Fair share's usage is a float sum in map order: equal within rounding.
				for _, e := range []*jobs.Explanation{&got, &want} {
					if e.Fair != nil {
						f := *e.Fair
						f.Usage, f.Least = 0, 0
						e.Fair = &f
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d %s at %s:\n got %+v\nwant %+v", seed, j.ID, now, got, want)
				}
				if j.Status == jobs.Queued || j.Status == jobs.Scheduled {
					checked++
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d waiting jobs checked", checked)
	}
}
