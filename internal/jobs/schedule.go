package jobs

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/spoolhq/spool/internal/fault"
)

// Every is a recurring schedule's timing, in the scheduler's time zone.
type Every struct{ s cron.Schedule }

// ParseEvery reads --every: daily (local midnight), weekly (Sunday
// midnight), or a standard five-field cron expression or @descriptor,
// parsed by robfig/cron.
func ParseEvery(spec string) (Every, error) {
	expr := spec
	switch spec {
	case "daily":
		expr = "@daily"
	case "weekly":
		expr = "@weekly"
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return Every{}, fault.New(CodeInvalidSchedule, err,
			fmt.Sprintf("--every %q: %v (use daily, weekly or a cron expression such as \"0 3 * * 1-5\")", spec, err), "every", spec)
	}
	return Every{s: s}, nil
}

// Next is the first occurrence after t.
func (e Every) Next(t time.Time, zone *time.Location) time.Time {
	n := e.s.Next(t.In(zone))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// base is when a schedule starts counting: its last occurrence, else its
// creation or the start_after it was given.
func (sc *Schedule) base() time.Time {
	b := sc.Created
	if sc.Job.StartAfter.After(b) {
		b = sc.Job.StartAfter
	}
	if sc.Last.After(b) {
		b = sc.Last
	}
	return b
}

// Due returns the latest occurrence after the schedule's base and at or
// before now: one submission however long nothing ticked (missed
// occurrences are not made up).
func (sc *Schedule) Due(zone *time.Location, now time.Time) (time.Time, bool) {
	e, err := ParseEvery(sc.Every)
	if err != nil {
		return time.Time{}, false
	}
	base := sc.base()
	t := e.Next(base, zone)
	if t.IsZero() || t.After(now) {
		return time.Time{}, false
	}
	// Jump close to now first, so that a minutely schedule idle for a
	// month is not walked minute by minute.
	for _, back := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 8 * 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour} {
		if from := now.Add(-back); from.After(base) {
			if x := e.Next(from, zone); !x.IsZero() && !x.After(now) {
				t = x
				break
			}
		}
	}
	for i := 0; i < 10000; i++ {
		n := e.Next(t, zone)
		if n.IsZero() || n.After(now) {
			break
		}
		t = n
	}
	return t, true
}
