package jobs

import (
	"maps"
	"slices"
	"time"
)

// QuotaRow is a quota and what has been used of it, in seconds of slot time.
type QuotaRow struct {
	Scope        string  `json:"scope"`
	Name         string  `json:"name"`
	Daily        float64 `json:"daily_seconds,omitempty"`
	Weekly       float64 `json:"weekly_seconds,omitempty"`
	UsedToday    float64 `json:"used_today_seconds"`
	UsedThisWeek float64 `json:"used_this_week_seconds"`
	Held         bool    `json:"held"` // new jobs wait (quota_exceeded)
}

// QuotaUsage lists the quotas by scope and name with their usage now.
func (s *State) QuotaUsage(p Policy, now time.Time) []QuotaRow {
	q := s.quotas(p, now)
	out := []QuotaRow{}
	for _, k := range slices.Sorted(maps.Keys(s.Quotas)) {
		x := *s.Quotas[k]
		day, week := q.used("daily", x.Scope, x.Name), q.used("weekly", x.Scope, x.Name)
		r := QuotaRow{Scope: x.Scope, Name: x.Name, Daily: x.Daily.Seconds(), Weekly: x.Weekly.Seconds(),
			UsedToday: day.Seconds(), UsedThisWeek: week.Seconds()}
		r.Held = x.Daily > 0 && day >= x.Daily || x.Weekly > 0 && week >= x.Weekly
		out = append(out, r)
	}
	return out
}

// ScheduleRow is a schedule with its next occurrence.
type ScheduleRow struct {
	Schedule
	NextAt time.Time `json:"next_at"`
}

// ScheduleRows lists the schedules by id.
func (s *State) ScheduleRows(p Policy, now time.Time) []ScheduleRow {
	out := []ScheduleRow{}
	for _, id := range slices.Sorted(maps.Keys(s.Schedules)) {
		sc := s.Schedules[id]
		r := ScheduleRow{Schedule: *sc}
		if e, err := ParseEvery(sc.Every); err == nil {
			from := sc.base()
			if due, ok := sc.Due(p.Zone, now); ok {
				r.NextAt = due // due now: the next tick submits it
			} else {
				r.NextAt = e.Next(from, p.Zone)
			}
		}
		out = append(out, r)
	}
	return out
}
