package jobs

import "time"

// QuotaRow is a quota and what has been used of it.
type QuotaRow struct {
	Quota
	UsedToday    time.Duration `json:"used_today"`
	UsedThisWeek time.Duration `json:"used_this_week"`
	Held         bool          `json:"held"` // new jobs wait (quota_exceeded)
}

// QuotaUsage lists the quotas by scope and name with their usage now.
func (s *State) QuotaUsage(p Policy, now time.Time) []QuotaRow {
	q := s.quotas(p, now)
	out := []QuotaRow{}
	for _, k := range sortedKeys(s.Quotas) {
		x := *s.Quotas[k]
		r := QuotaRow{Quota: x, UsedToday: q.used("daily", x.Scope, x.Name), UsedThisWeek: q.used("weekly", x.Scope, x.Name)}
		r.Held = x.Daily > 0 && r.UsedToday >= x.Daily || x.Weekly > 0 && r.UsedThisWeek >= x.Weekly
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
	for _, id := range sortedKeys(s.Schedules) {
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
