package jobs

import (
	"fmt"
	"math"
	"time"
)

// Quotas are on slot time (slots × running time, from the events) in a
// day that starts at local midnight and a week that starts Monday 00:00,
// in the scheduler's time zone.

// DayStart is the start of the quota day holding t.
func DayStart(t time.Time, zone *time.Location) time.Time {
	lt := t.In(zone)
	return time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, zone)
}

// WeekStart is the start (Monday 00:00) of the quota week holding t.
func WeekStart(t time.Time, zone *time.Location) time.Time {
	d := DayStart(t, zone)
	back := (int(d.Weekday()) + 6) % 7 // days since Monday
	return time.Date(d.Year(), d.Month(), d.Day()-back, 0, 0, 0, 0, zone)
}

// usage is slot time per user and per project since a time.
type usage struct{ user, project map[string]time.Duration }

// usageSince sums every job's slot time in [since, now), the segments
// running now included.
func (s *State) usageSince(since, now time.Time) usage {
	u := usage{user: map[string]time.Duration{}, project: map[string]time.Duration{}}
	for _, j := range s.Jobs {
		d := j.slotTime(since, now)
		if d == 0 {
			continue
		}
		u.user[j.Owner] += d
		if j.Project != "" {
			u.project[j.Project] += d
		}
	}
	return u
}

// slotTime is the job's slot time in [since, now).
func (j *Job) slotTime(since, now time.Time) time.Duration {
	var d time.Duration
	j.spans(now, func(start, end time.Time) {
		if start.Before(since) {
			start = since
		}
		if end.After(now) {
			end = now
		}
		if end.After(start) {
			d += end.Sub(start)
		}
	})
	return d * time.Duration(j.Slots)
}

// Hold is why quotas keep a job from dispatching: the quota it is over and
// when its window resets.
type Hold struct {
	Quota   Quota
	Window  string // daily or weekly
	Used    time.Duration
	ResetAt time.Time
}

func (h Hold) String() string {
	limit := h.Quota.Daily
	if h.Window == "weekly" {
		limit = h.Quota.Weekly
	}
	return fmt.Sprintf("quota_exceeded: %s %s used %s of its %s %s, until %s", h.Quota.Scope, h.Quota.Name,
		round(h.Used), h.Window, round(limit), h.ResetAt.Format(time.RFC3339))
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// quotas answers quota questions for one decision: usage is summed once.
type quotas struct {
	s          *State
	p          Policy
	now        time.Time
	day, week  usage
	dayStart   time.Time
	weekStart  time.Time
	summedDay  bool
	summedWeek bool
}

func (s *State) quotas(p Policy, now time.Time) *quotas {
	return &quotas{s: s, p: p, now: now, dayStart: DayStart(now, p.Zone), weekStart: WeekStart(now, p.Zone)}
}

func (q *quotas) used(window, scope, name string) time.Duration {
	var u *usage
	if window == "daily" {
		if !q.summedDay {
			q.day, q.summedDay = q.s.usageSince(q.dayStart, q.now), true
		}
		u = &q.day
	} else {
		if !q.summedWeek {
			q.week, q.summedWeek = q.s.usageSince(q.weekStart, q.now), true
		}
		u = &q.week
	}
	if scope == "user" {
		return u.user[name]
	}
	return u.project[name]
}

// applying returns the quotas on the owner and the project.
func (q *quotas) applying(owner, project string) []Quota {
	var out []Quota
	if x := q.s.Quotas["user/"+owner]; x != nil {
		out = append(out, *x)
	}
	if project != "" {
		if x := q.s.Quotas["project/"+project]; x != nil {
			out = append(out, *x)
		}
	}
	return out
}

// hold returns the first quota that owner or project is over, if any: a
// user quota and a project quota that both apply must both have room.
func (q *quotas) hold(owner, project string) (Hold, bool) {
	for _, x := range q.applying(owner, project) {
		if x.Daily > 0 {
			if used := q.used("daily", x.Scope, x.Name); used >= x.Daily {
				return Hold{Quota: x, Window: "daily", Used: used, ResetAt: q.dayStart.AddDate(0, 0, 1)}, true
			}
		}
		if x.Weekly > 0 {
			if used := q.used("weekly", x.Scope, x.Name); used >= x.Weekly {
				return Hold{Quota: x, Window: "weekly", Used: used, ResetAt: q.weekStart.AddDate(0, 0, 7)}, true
			}
		}
	}
	return Hold{}, false
}

// warnings says which quotas owner or project have used 80% or more of.
func (q *quotas) warnings(owner, project string) []string {
	var out []string
	for _, x := range q.applying(owner, project) {
		for _, w := range []struct {
			window string
			limit  time.Duration
		}{{"daily", x.Daily}, {"weekly", x.Weekly}} {
			if w.limit <= 0 {
				continue
			}
			used := q.used(w.window, x.Scope, x.Name)
			if pct := float64(used) / float64(w.limit); pct >= 0.8 {
				out = append(out, fmt.Sprintf("%s %s has used %d%% of its %s quota (%s of %s)",
					x.Scope, x.Name, int(math.Round(pct*100)), w.window, round(used), round(w.limit)))
			}
		}
	}
	return out
}

// FairUsage is each user's recent slot time for fair share: every run
// weighed down by half for each half-life since it ended.
func (s *State) FairUsage(p Policy, now time.Time) map[string]float64 {
	out := map[string]float64{}
	hl := p.HalfLife.Seconds()
	for _, j := range s.Jobs {
		var sum float64
		for _, r := range j.Runs {
			age := now.Sub(r.End).Seconds()
			if age < 0 {
				age = 0
			}
			sum += r.End.Sub(r.Start).Seconds() * math.Exp2(-age/hl)
		}
		if j.Status == Running {
			for _, seg := range j.Segs {
				if !seg.Started.IsZero() && seg.Ended.IsZero() && now.After(seg.Started) {
					sum += now.Sub(seg.Started).Seconds()
				}
			}
		}
		if sum > 0 {
			out[j.Owner] += sum * float64(j.Slots)
		}
	}
	return out
}
