package jobs

import (
	"fmt"
	"math"
	"strconv"
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
	for _, j := range s.decided().Jobs {
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
	used, of := SlotTimePair(h.Used, limit)
	return fmt.Sprintf("quota_exceeded: %s %s used %s of its %s %s, until %s", h.Quota.Scope, h.Quota.Name,
		used, h.Window, of, h.ResetAt.Format(time.RFC3339))
}

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

// holdUntil is when the quotas on owner and project all have room again:
// the latest reset of the windows they are over (zero when none is).
// Usage to come is not foreseen: a window is open again at its reset.
func (q *quotas) holdUntil(owner, project string) time.Time {
	var until time.Time
	for _, x := range q.applying(owner, project) {
		if x.Daily > 0 && q.used("daily", x.Scope, x.Name) >= x.Daily {
			if r := q.dayStart.AddDate(0, 0, 1); r.After(until) {
				until = r
			}
		}
		if x.Weekly > 0 && q.used("weekly", x.Scope, x.Name) >= x.Weekly {
			if r := q.weekStart.AddDate(0, 0, 7); r.After(until) {
				until = r
			}
		}
	}
	return until
}

// warnings says which quotas owner or project have used 80% or more of,
// in slot time of one human unit (SlotTime): below the limit with the
// share used, rounded down (never 100% while room is left); at or past it
// as over quota, with when new jobs may run again.
func (q *quotas) warnings(owner, project string) []string {
	var out []string
	for _, x := range q.applying(owner, project) {
		for _, w := range []struct {
			window string
			limit  time.Duration
			reset  time.Time
		}{{"daily", x.Daily, q.dayStart.AddDate(0, 0, 1)}, {"weekly", x.Weekly, q.weekStart.AddDate(0, 0, 7)}} {
			if w.limit <= 0 {
				continue
			}
			used := q.used(w.window, x.Scope, x.Name)
			u, l := SlotTimePair(used, w.limit)
			switch share := float64(used) / float64(w.limit); {
			case used >= w.limit:
				out = append(out, fmt.Sprintf("%s %s is over its %s quota: %s of %s used; its new jobs wait until %s",
					x.Scope, x.Name, w.window, u, l, w.reset.In(q.p.zone()).Format(time.RFC3339)))
			case share >= 0.8:
				out = append(out, fmt.Sprintf("%s %s has used %d%% of its %s quota: %s of %s",
					x.Scope, x.Name, int(math.Floor(share*100)), w.window, u, l))
			}
		}
	}
	return out
}

// SlotTimePair says a usage and its limit in the limit's unit: slot-s
// under 2 minutes, slot-min under 2 hours, slot-h beyond; at most one
// decimal ("5 slot-s", "59.8 slot-min", "1.2 slot-h").
func SlotTimePair(used, limit time.Duration) (string, string) {
	unit, name := time.Hour, "slot-h"
	switch {
	case limit < 2*time.Minute:
		unit, name = time.Second, "slot-s"
	case limit < 2*time.Hour:
		unit, name = time.Minute, "slot-min"
	}
	f := func(d time.Duration) string {
		v := strconv.FormatFloat(math.Round(float64(d)/float64(unit)*10)/10, 'f', -1, 64)
		return v + " " + name
	}
	return f(used), f(limit)
}
