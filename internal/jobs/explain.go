package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

// Explanation is spool job explain: why a job waits, what is ahead of it
// and when it may start.
type Explanation struct {
	ID       string `json:"id"`
	Status   Status `json:"status"`
	Tier     Tier   `json:"priority"`
	Position int    `json:"position"` // 1.. among queued jobs, in dispatch order (job list's); 0 when not queued
	Queued   int    `json:"queued"`   // how many jobs are queued

	AheadHigherTiers int           `json:"ahead_higher_tiers"` // queued jobs of higher tiers
	AheadByTier      map[Tier]int  `json:"ahead_by_tier"`      // every tier ahead, its own included
	AheadSameTier    int           `json:"ahead_same_tier"`
	AheadLowerTiers  int           `json:"ahead_lower_tiers"`    // expected to start before it while it cannot run
	Fair             *FairStanding `json:"fair_share,omitempty"` // scheduler.fairness fair
	Quota            *QuotaHold    `json:"quota_hold,omitempty"`
	OffPeak          *OffPeakState `json:"off_peak,omitempty"` // off-peak jobs only
	StartAfter       time.Time     `json:"start_after,omitzero"`
	Slots            SlotsStanding `json:"gpus"`
	EarliestStart    time.Time     `json:"earliest_start,omitzero"`
	LikelyStart      time.Time     `json:"likely_start,omitzero"`
	Next             bool          `json:"next"` // a worker with all its slots free would dispatch it now
	Reasons          []string      `json:"reasons"`
	Worker           string        `json:"worker,omitempty"`
}

// FairStanding is the owner's recent slot time against the least of the
// owners whose jobs could run next in the job's tier.
type FairStanding struct {
	Owner      string  `json:"owner"`
	Usage      float64 `json:"usage_slot_seconds"` // decayed (FairUsage)
	LeastOwner string  `json:"least_owner,omitempty"`
	Least      float64 `json:"least_slot_seconds"`
	Owners     int     `json:"owners_waiting"`      // owners with runnable jobs in the tier
	Next       bool    `json:"next_by_fair_share"`  // the owner is the one fair share serves next
	TiedWith   string  `json:"tied_with,omitempty"` // another waiting owner with the same usage (the earlier job goes first)
	Moved      bool    `json:"moved,omitempty"`     // an admin placed the job: fair share leaves it there
}

// QuotaHold is the quota that keeps the job back.
type QuotaHold struct {
	Hold    string    `json:"hold"` // Hold.String()
	Scope   string    `json:"scope"`
	Name    string    `json:"name"`
	Window  string    `json:"window"` // daily or weekly
	Used    Seconds   `json:"used"`
	Limit   Seconds   `json:"limit"`
	ResetAt time.Time `json:"reset_at"`
}

// OffPeakState is where an off-peak job stands with the window.
type OffPeakState struct {
	State  string    `json:"state"`            // inside, outside, urgent_queued, no_window
	Window string    `json:"window,omitempty"` // e.g. 22:00-08:00
	Opens  time.Time `json:"opens_at,omitzero"`
	Urgent int       `json:"urgent_queued,omitempty"`
}

// Off-peak states.
const (
	OffPeakInside   = "inside"
	OffPeakOutside  = "outside"
	OffPeakUrgent   = "urgent_queued"
	OffPeakNoWindow = "no_window"
)

// SlotsStanding is the job's slots against the workers'.
type SlotsStanding struct {
	Needed       int `json:"needed"`
	MostOnWorker int `json:"most_on_a_worker"`
	FreeNow      int `json:"free_now"`           // all workers
	MostFreeNow  int `json:"most_free_a_worker"` // what one worker could offer now
}

// Explain is spool job explain.
func (s *State) Explain(p Policy, id string, now time.Time) (Explanation, error) {
	return s.explain(p, id, now, true)
}

// explain is Explain; short says to simulate dispatch only until the job
// starts (viewUntil), which is all explain reads of the simulation.
func (s *State) explain(p Policy, id string, now time.Time, short bool) (Explanation, error) {
	j := s.Jobs[id]
	if j == nil {
		return Explanation{}, fault.NotFound("job", id)
	}
	p = withZone(p)
	e := Explanation{ID: j.ID, Status: j.Status, Tier: j.Tier, StartAfter: j.StartAfter, Worker: j.Worker,
		AheadByTier: map[Tier]int{}, Reasons: []string{}}
	at := func(t time.Time) string { return t.In(p.Zone).Format(time.RFC3339) }
	switch j.Status {
	case Dispatched:
		e.Reasons = append(e.Reasons, fmt.Sprintf("dispatched to worker %s at %s", j.Worker, at(dispatchedAt(j))))
		return e, nil
	case Running:
		r := fmt.Sprintf("running on worker %s since %s (segment %d of %d)", j.Worker, at(dispatchedAt(j)), j.NextSegment()+1, j.Segments)
		switch {
		case j.CancelRequested:
			r += "; cancelling, grace until " + at(j.GraceUntil)
		case j.PauseRequested:
			r += "; pausing after this segment"
		case j.YieldRequested:
			r += "; yielding to higher-priority work after this segment"
		}
		e.Reasons = append(e.Reasons, r)
		return e, nil
	case Complete:
		e.Reasons = append(e.Reasons, "complete at "+at(j.Ended))
		return e, nil
	case Failed:
		r := "failed at " + at(j.Ended)
		if j.Error != "" {
			r += ": " + j.Error
		}
		r += fmt.Sprintf("; spool job retry %s puts it back in the queue, to resume at segment %d (%d of %d done, kept)", j.ID, j.NextSegment(), j.DoneSegments(), j.Segments)
		e.Reasons = append(e.Reasons, r)
		return e, nil
	case Cancelled:
		e.Reasons = append(e.Reasons, fmt.Sprintf("cancelled at %s (%d of %d segments done)", at(j.Ended), j.DoneSegments(), j.Segments))
		return e, nil
	}

	var until *Job
	if short {
		until = j
	}
	v := s.viewUntil(p, now, until)
	me := v.find(j)
	if me == nil { // a status this function does not know yet
		e.Reasons = append(e.Reasons, string(j.Status))
		return e, nil
	}
	e.Queued = len(v.queue)
	e.EarliestStart, e.LikelyStart = me.earliest, me.likely
	// Ahead of it: what the dispatcher takes before it (the list's order,
	// choose's simulation): the queued jobs before it in that order, and
	// the scheduled ones expected to start before it. A scheduled job is
	// not in the queue yet: ahead of it is what is expected to start first.
	ahead := map[string]int{} // same tier, by owner
	count := func(o *waiting) {
		e.AheadByTier[o.j.Tier]++
		switch r, mine := o.j.Tier.Rank(), j.Tier.Rank(); {
		case r < mine:
			e.AheadHigherTiers++
		case r == mine:
			e.AheadSameTier++
			ahead[o.j.Owner]++
		default:
			e.AheadLowerTiers++
		}
	}
	before := func(o *waiting) bool { return o.j != j && o.seq >= 0 && (me.seq < 0 || o.seq < me.seq) }
	if j.Status == Scheduled {
		for _, o := range v.queue {
			if before(o) {
				count(o)
			}
		}
	} else {
		for i, o := range v.order {
			if o.j == j {
				if j.Status == Queued {
					e.Position = i + 1
				}
				break
			}
			if o.j.Status == Queued {
				count(o)
			}
		}
	}
	for i := range v.scheduled {
		if o := &v.scheduled[i]; before(o) {
			count(o)
		}
	}

	busy := map[string]int{}
	held := 0
	for _, o := range v.running {
		busy[o.Worker] += o.Slots
		held += o.Slots
	}
	e.Slots = SlotsStanding{Needed: j.Slots, MostOnWorker: v.most, FreeNow: max(v.total-held, 0)}
	if len(s.Workers) == 0 {
		e.Slots.MostFreeNow = e.Slots.FreeNow
	}
	for _, w := range s.Workers {
		e.Slots.MostFreeNow = max(e.Slots.MostFreeNow, w.Slots-busy[w.Name])
	}

	var reasons []string
	add := func(format string, a ...any) { reasons = append(reasons, fmt.Sprintf(format, a...)) }
	if j.Status == Queued && me.reason == "" {
		o := Offer{Free: v.most, Total: v.most}
		for _, w := range slices.Sorted(maps.Keys(s.Workers)) {
			if s.Workers[w].Slots == v.most {
				o.Worker = w
				break
			}
		}
		if e.Next = s.Decide(p, o, now).Job == j; e.Next {
			if j.Slots <= e.Slots.MostFreeNow {
				add("it is next: the next worker to ask for work dispatches it")
			} else {
				add("it is next in line and waits for %d free %s", j.Slots, plural(j.Slots, "slot", "slots"))
			}
		}
	}
	switch j.Status {
	case Scheduled:
		add("scheduled: it enters the queue at %s (start_after), at the end of the %s tier", at(j.StartAfter), j.Tier)
	case Paused:
		add("paused: it keeps its place in the queue; spool job resume %s puts it back", j.ID)
	}
	if j.Slots > v.most {
		add("it needs %d slots and the largest worker has %d: it cannot run until a larger worker starts", j.Slots, v.most)
	}
	if h, ok := v.q.hold(j.Owner, j.Project); ok {
		limit := h.Quota.Daily
		if h.Window == "weekly" {
			limit = h.Quota.Weekly
		}
		e.Quota = &QuotaHold{Hold: h.String(), Scope: h.Quota.Scope, Name: h.Quota.Name, Window: h.Window,
			Used: Seconds(h.Used), Limit: Seconds(limit), ResetAt: h.ResetAt}
		used, of := SlotTimePair(h.Used, limit)
		add("held by quota: %s %s used %s of its %s %s; it resets at %s", h.Quota.Scope, h.Quota.Name,
			used, h.Window, of, at(h.ResetAt))
	}
	if j.OffPeak {
		op := &OffPeakState{Window: p.OffPeak.String()}
		for _, o := range v.queue {
			if o.j.Tier == Urgent {
				op.Urgent++
			}
		}
		switch {
		case !p.OffPeak.Set:
			op.State = OffPeakNoWindow
			add("off-peak only, and no off-peak window is set (scheduler.off_peak): it never dispatches")
		case !p.OffPeak.Contains(now, p.Zone):
			op.State, op.Opens = OffPeakOutside, p.OffPeak.Next(now, p.Zone)
			add("off-peak only: outside the window %s, which opens at %s", op.Window, at(op.Opens))
		case v.urgent:
			op.State = OffPeakUrgent
			add("off-peak only: it waits while urgent work is queued (%d urgent %s)", op.Urgent, plural(op.Urgent, "job", "jobs"))
		default:
			op.State = OffPeakInside
		}
		e.OffPeak = op
	}
	if e.AheadHigherTiers > 0 {
		var parts []string
		for _, t := range Tiers {
			if n := e.AheadByTier[t]; n > 0 && t != j.Tier {
				parts = append(parts, fmt.Sprintf("%d %s", n, t))
			}
		}
		add("%d %s of higher tiers %s ahead (%s)", e.AheadHigherTiers, plural(e.AheadHigherTiers, "job", "jobs"),
			plural(e.AheadHigherTiers, "is", "are"), strings.Join(parts, ", "))
	}
	if e.AheadSameTier > 0 {
		r := fmt.Sprintf("%d %s %s %s ahead of it", e.AheadSameTier, j.Tier, plural(e.AheadSameTier, "job", "jobs"), plural(e.AheadSameTier, "is", "are"))
		if own := ahead[j.Owner]; own < e.AheadSameTier {
			var parts []string
			for _, o := range slices.Sorted(maps.Keys(ahead)) {
				if o != j.Owner {
					parts = append(parts, fmt.Sprintf("%d of %s's", ahead[o], o))
				}
			}
			if own > 0 {
				parts = append(parts, fmt.Sprintf("%d of %s's own, submitted before it", own, j.Owner))
			}
			r += ": " + strings.Join(parts, ", ")
		}
		add("%s", r)
	}
	if e.AheadLowerTiers > 0 {
		add("%d %s of lower tiers %s expected to start before it, while it cannot run", e.AheadLowerTiers,
			plural(e.AheadLowerTiers, "job", "jobs"), plural(e.AheadLowerTiers, "is", "are"))
	}
	if p.Fair && j.Status != Scheduled {
		e.Fair = s.fairStanding(p, v, me, now)
		f := e.Fair
		switch {
		case f.Moved:
			add("an admin placed it in the queue: fair share does not move it")
		case f.LeastOwner == "" || f.Owners < 2 && f.Next: // nobody to share with
		case f.Next && f.TiedWith != "":
			add("fair share: %s and %s have the least recent slot time (%s) of the owners waiting in the %s tier; on a tie the job that came first in the queue goes first, then owners take turns by recent slot time",
				j.Owner, f.TiedWith, slotHours(f.Usage), j.Tier)
		case f.Next:
			add("fair share: %s has the least recent slot time (%s) of the owners waiting in the %s tier, so their jobs go first",
				j.Owner, slotHours(f.Usage), j.Tier)
		case !fairLess(f.Least, f.Usage):
			add("fair share: %s and %s have the same recent slot time (%s); on a tie the job that came first in the queue goes first, then owners take turns by recent slot time",
				j.Owner, f.LeastOwner, slotHours(f.Usage))
		default:
			add("fair share: %s has used %s of recent slot time, %s the least (%s); %s's jobs go first in the %s tier, owners taking turns by recent slot time",
				j.Owner, slotHours(f.Usage), f.LeastOwner, slotHours(f.Least), f.LeastOwner, j.Tier)
		}
	}
	if j.Slots <= v.most && j.Slots > e.Slots.MostFreeNow {
		add("it needs %d %s and at most %d %s free on a worker now", j.Slots, plural(j.Slots, "slot", "slots"),
			e.Slots.MostFreeNow, plural(e.Slots.MostFreeNow, "is", "are"))
	}
	switch {
	case e.LikelyStart.IsZero():
	case e.EarliestStart.Equal(e.LikelyStart):
		add("expected to start at %s", at(e.LikelyStart))
	default:
		add("expected to start between %s and %s", at(e.EarliestStart), at(e.LikelyStart))
	}
	e.Reasons = append(e.Reasons, reasons...)
	return e, nil
}

// fairStanding is rule 4 as it applies to j: the owners of the runnable,
// unmoved jobs of its tier and their decayed slot time.
func (s *State) fairStanding(p Policy, v *view, me *waiting, now time.Time) *FairStanding {
	j := me.j
	usage := s.FairUsage(p, now)
	f := &FairStanding{Owner: j.Owner, Usage: usage[j.Owner], Moved: j.Moved}
	found := false
	owners := map[string]bool{}
	for _, o := range v.queue { // pick's rule: on a tie the earlier head wins
		if o.j.Tier != j.Tier || o.reason != "" || o.j.Moved {
			continue
		}
		owners[o.j.Owner] = true
		if !found || fairLess(usage[o.j.Owner], usage[f.LeastOwner]) {
			f.LeastOwner, found = o.j.Owner, true
		}
	}
	f.Owners = len(owners)
	for o := range owners {
		if o != j.Owner && !fairLess(usage[j.Owner], usage[o]) && !fairLess(usage[o], usage[j.Owner]) && (f.TiedWith == "" || o < f.TiedWith) {
			f.TiedWith = o
		}
	}
	if j.Status == Paused || me.reason != "" {
		// It does not compete now; still say where its owner would stand.
		if !found || fairLess(usage[j.Owner], usage[f.LeastOwner]) {
			f.LeastOwner = j.Owner
		}
	}
	f.Least = usage[f.LeastOwner]
	f.Next = f.LeastOwner == j.Owner && f.LeastOwner != ""
	return f
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// slotHours says slot-seconds in hours.
func slotHours(sec float64) string { return fmt.Sprintf("%.1f slot-h", sec/3600) }
