package watch

import (
	"testing"
	"time"
)

func TestSyncSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	m1, m2 := mark{inode: 1, size: 10}, mark{inode: 1, size: 20}
	for _, tc := range []struct {
		name     string
		s        schedule
		interval time.Duration
		now      mark
		want     time.Time
	}{
		{"never synced: now", schedule{}, time.Hour, m1, time.Time{}},
		{"nothing appended: the interval", schedule{last: t0, mark: m1}, 30 * time.Second, m1, t0.Add(30 * time.Second)},
		{"appended: a second after the last", schedule{last: t0, mark: m1}, time.Hour, m2, t0.Add(time.Second)},
		{"appended, with an interval shorter still", schedule{last: t0, mark: m1}, 500 * time.Millisecond, m2, t0.Add(500 * time.Millisecond)},
		{"one failure: the interval, appends or not", schedule{last: t0, mark: m1, failures: 1}, 30 * time.Second, m2, t0.Add(30 * time.Second)},
		{"three failures: four intervals", schedule{last: t0, failures: 3}, 30 * time.Second, m1, t0.Add(2 * time.Minute)},
		{"many failures: at most ten minutes", schedule{last: t0, failures: 40}, 30 * time.Second, m1, t0.Add(10 * time.Minute)},
		{"an interval longer than that bound", schedule{last: t0, failures: 5}, time.Hour, m1, t0.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.due(tc.interval, tc.now); !got.Equal(tc.want) {
				t.Errorf("due %s, want %s", got, tc.want)
			}
		})
	}
}

// A good sync clears the failures and remembers the writer file as it was
// when the sync began; a failed one counts.
func TestSyncScheduleDone(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var s schedule
	s.done(t0, mark{size: 1}, false)
	s.done(t0, mark{size: 2}, false)
	if s.failures != 2 || s.mark != (mark{}) {
		t.Fatalf("after two failures: %+v", s)
	}
	s.done(t0.Add(time.Minute), mark{size: 3}, true)
	if s.failures != 0 || s.mark != (mark{size: 3}) || !s.last.Equal(t0.Add(time.Minute)) {
		t.Errorf("after a good sync: %+v", s)
	}
}
