package jobs

import (
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// Seconds is a duration that JSON writes as seconds (a float).
type Seconds time.Duration

func (d Seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

func (d *Seconds) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*d = Seconds(f * float64(time.Second))
	return nil
}

// Duration is d as a time.Duration.
func (d Seconds) Duration() time.Duration { return time.Duration(d) }

// Stats is spool job stats: the queue's history in [Since, Until)
// (wait per tier, queue depth over time, peak hours, for capacity
// planning), days and hours in the scheduler's time zone.
type Stats struct {
	Since    time.Time    `json:"since"`
	Until    time.Time    `json:"until"`
	Zone     string       `json:"zone"`
	Totals   Totals       `json:"totals"`
	Wait     []TierWait   `json:"wait_by_day"`  // by day, then tier; only days with a dispatch
	WaitAll  []TierWait   `json:"wait_by_tier"` // the whole window, a line per tier
	Depth    []DepthPoint `json:"queue_depth"`
	Bucket   Seconds      `json:"queue_depth_bucket,omitempty"` // 0: a point per change
	Hours    []HourUse    `json:"peak_hours"`                   // 24, hour 0 first
	Users    []SlotUse    `json:"usage_by_user"`                // most first
	Projects []SlotUse    `json:"usage_by_project"`

	loc *time.Location // for RenderChart; lost in JSON, where Zone says it
}

// Totals counts what happened in the window.
type Totals struct {
	Submitted  int     `json:"submitted"`
	Dispatched int     `json:"dispatched"` // first dispatches
	Completed  int     `json:"completed"`
	Failed     int     `json:"failed"`
	Cancelled  int     `json:"cancelled"`
	SlotTime   Seconds `json:"slot_time"`
}

// TierWait is the wait from entering the queue to the first dispatch, of
// the jobs of a tier first dispatched that day (or in the window).
type TierWait struct {
	Day     string  `json:"day,omitempty"` // 2006-01-02
	Tier    Tier    `json:"priority"`
	Jobs    int     `json:"jobs"`
	Average Seconds `json:"average"`
	Longest Seconds `json:"longest"`
}

// DepthPoint is how many jobs were queued from At on (the most queued in
// the bucket starting at At, when the series is bucketed).
type DepthPoint struct {
	At    time.Time `json:"at"`
	Depth int       `json:"depth"`
}

// HourUse is one hour of the day over the window.
type HourUse struct {
	Hour      int     `json:"hour"`
	Submitted int     `json:"submitted"`
	SlotTime  Seconds `json:"slot_time"`
}

// SlotUse is a user's or a project's slot time.
type SlotUse struct {
	Name     string  `json:"name"`
	SlotTime Seconds `json:"slot_time"`
}

// MaxDepthPoints bounds the queue depth series.
const MaxDepthPoints = 500

// Stats is spool job stats over [since, now). A wait counts on the day
// (and in the window) of its first dispatch, in the job's tier now; the
// queue depth is the number of queued jobs at since and after each
// change, or, with more than MaxDepthPoints changes, the most queued in
// each of MaxDepthPoints equal buckets, so that peaks survive.
func (s *State) Stats(p Policy, since, now time.Time) Stats {
	p = withZone(p)
	st := Stats{Since: since, Until: now, Zone: p.Zone.String(), loc: p.Zone, Wait: []TierWait{}, WaitAll: []TierWait{},
		Hours: make([]HourUse, 24), Users: []SlotUse{}, Projects: []SlotUse{}}
	for h := range st.Hours {
		st.Hours[h].Hour = h
	}
	in := func(t time.Time) bool { return !t.Before(since) && t.Before(now) }
	type dayTier struct {
		day  string
		tier Tier
	}
	waits := map[dayTier]*TierWait{}
	all := map[Tier]*TierWait{}
	var changes []DepthPoint // +1 or -1 at a time
	for _, j := range s.Sorted() {
		if in(j.Submitted) {
			st.Totals.Submitted++
			st.Hours[j.Submitted.In(p.Zone).Hour()].Submitted++
		}
		if in(j.Ended) {
			switch j.Status {
			case Complete:
				st.Totals.Completed++
			case Failed:
				st.Totals.Failed++
			case Cancelled:
				st.Totals.Cancelled++
			}
		}
		var entered time.Time
		dispatched := false
		for _, t := range j.Trail {
			if t.From == Queued {
				changes = append(changes, DepthPoint{At: t.At, Depth: -1})
			}
			if t.To == Queued {
				changes = append(changes, DepthPoint{At: t.At, Depth: +1})
				if entered.IsZero() {
					entered = t.At
				}
			}
			if t.To == Dispatched && !dispatched && !entered.IsZero() {
				dispatched = true
				if !in(t.At) {
					continue
				}
				st.Totals.Dispatched++
				w := t.At.Sub(entered)
				k := dayTier{t.At.In(p.Zone).Format(time.DateOnly), j.Tier}
				if waits[k] == nil {
					waits[k] = &TierWait{Day: k.day, Tier: j.Tier}
				}
				if all[j.Tier] == nil {
					all[j.Tier] = &TierWait{Tier: j.Tier}
				}
				for _, x := range []*TierWait{waits[k], all[j.Tier]} {
					x.Jobs++
					x.Average += Seconds(w) // a sum until the end
					x.Longest = max(x.Longest, Seconds(w))
				}
			}
		}
		j.spans(now, func(a, b time.Time) {
			a, b = maxTime(a, since), minTime(b, now)
			for a.Before(b) {
				lt := a.In(p.Zone)
				next := a.Add(time.Hour - time.Duration(lt.Minute())*time.Minute - time.Duration(lt.Second())*time.Second - time.Duration(lt.Nanosecond()))
				end := minTime(next, b)
				st.Hours[lt.Hour()].SlotTime += Seconds(end.Sub(a) * time.Duration(j.Slots))
				a = end
			}
		})
	}
	for _, x := range waits {
		x.Average /= Seconds(x.Jobs)
		st.Wait = append(st.Wait, *x)
	}
	sort.Slice(st.Wait, func(a, b int) bool {
		x, y := st.Wait[a], st.Wait[b]
		if x.Day != y.Day {
			return x.Day < y.Day
		}
		return x.Tier.Rank() < y.Tier.Rank()
	})
	for _, t := range Tiers {
		if x := all[t]; x != nil {
			x.Average /= Seconds(x.Jobs)
			st.WaitAll = append(st.WaitAll, *x)
		}
	}
	st.Depth, st.Bucket = depthSeries(changes, since, now)
	u := s.usageSince(since, now)
	st.Users, st.Projects = slotUses(u.user), slotUses(u.project)
	for _, x := range st.Users {
		st.Totals.SlotTime += x.SlotTime
	}
	return st
}

// spans calls fn with every stretch of time the job held its slots (as
// slotTime counts them): its runs, and the segment running now.
func (j *Job) spans(now time.Time, fn func(start, end time.Time)) {
	for _, r := range j.Runs {
		fn(r.Start, r.End)
	}
	if j.Status == Running {
		for _, seg := range j.Segs {
			if !seg.Started.IsZero() && seg.Ended.IsZero() {
				fn(seg.Started, now)
			}
		}
	}
}

// depthSeries folds the queue's +1/-1 changes into the depth at since and
// after each change in [since, now), bucketed when there are too many.
func depthSeries(changes []DepthPoint, since, now time.Time) ([]DepthPoint, Seconds) {
	sort.SliceStable(changes, func(a, b int) bool { return changes[a].At.Before(changes[b].At) })
	depth, i := 0, 0
	for ; i < len(changes) && changes[i].At.Before(since); i++ {
		depth += changes[i].Depth
	}
	points := []DepthPoint{{At: since, Depth: depth}}
	for ; i < len(changes) && changes[i].At.Before(now); i++ {
		depth += changes[i].Depth
		if last := &points[len(points)-1]; last.At.Equal(changes[i].At) {
			last.Depth = depth // one point per instant
		} else {
			points = append(points, DepthPoint{At: changes[i].At, Depth: depth})
		}
	}
	if len(points) <= MaxDepthPoints || !now.After(since) {
		return points, 0
	}
	width := (now.Sub(since) + MaxDepthPoints - 1) / MaxDepthPoints
	out := make([]DepthPoint, 0, MaxDepthPoints)
	carry := 0 // the depth when the bucket starts
	k := 0
	for b := 0; b < MaxDepthPoints; b++ {
		start := since.Add(time.Duration(b) * width)
		if !start.Before(now) {
			break
		}
		end := start.Add(width)
		most := carry
		for ; k < len(points) && points[k].At.Before(end); k++ {
			most = max(most, points[k].Depth)
			carry = points[k].Depth
		}
		out = append(out, DepthPoint{At: start, Depth: most})
	}
	return out, Seconds(width)
}

func slotUses(m map[string]time.Duration) []SlotUse {
	out := make([]SlotUse, 0, len(m))
	for name, d := range m {
		out = append(out, SlotUse{Name: name, SlotTime: Seconds(d)})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].SlotTime != out[b].SlotTime {
			return out[a].SlotTime > out[b].SlotTime
		}
		return out[a].Name < out[b].Name
	})
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
