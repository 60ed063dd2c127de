package jobs

import (
	"math"
	"time"
)

// The dispatch rule (order.go) as one function of the queue, used both by a
// worker's claim (Decide) and by the simulation that orders job list, job
// explain, the board and their estimates (forecast): what the list says
// comes next is what the dispatcher takes, because both ask choose.
//
// The queue is held in lanes: the queued jobs of one tier, owner, project,
// off-peak flag and moved flag, in queue order. Every skip of rule 3 but
// the slots is the same for a whole lane (a quota is the owner's and the
// project's, the off-peak window and urgent work concern every off-peak
// job), and so is fair share's owner, so choose looks at lanes' first jobs
// only: a step costs the number of lanes, not of jobs.

// laneKey is what puts two queued jobs in one lane. The owner and the
// project are in it only where they matter: the owner under fair share or
// a quota on the user, the project under a quota on the project; else
// they are "", so that lanes stay few.
type laneKey struct {
	rank    int
	owner   string
	project string
	offPeak bool
	moved   bool
}

// place is a job's key in a lane: its tier and order (a scheduled job's
// order being its release).
type place struct {
	j     *Job
	w     *waiting // the list's row; nil for a claim
	rank  int
	order int64
	done  int       // segments done (in a simulation: of a job that yielded, more than the state's)
	again bool      // a simulated job back in the queue after it yielded: its start was said
	first time.Time // when such a job was first dispatched
}

func placeLess(a, b place) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.order != b.order {
		return a.order < b.order
	}
	return a.j.ID < b.j.ID
}

// jobLane is one lane: its queued jobs, sorted, merged with the jobs that
// enter it later (scheduled ones, in a simulation).
type jobLane struct {
	key    laneKey
	owner  int       // the owner's index in the fair share tracker
	until  time.Time // quotas hold it until then (zero: they do not)
	sorted []place
	i      int
	late   *minHeap[place]
	listed bool // in its tier's list (an empty lane is taken out)
}

func (l *jobLane) len() int { return len(l.sorted) - l.i + l.late.len() }

func (l *jobLane) fromSorted() bool {
	return l.i < len(l.sorted) && (l.late.len() == 0 || placeLess(l.sorted[l.i], l.late.top()))
}

func (l *jobLane) top() place {
	if l.fromSorted() {
		return l.sorted[l.i]
	}
	return l.late.top()
}

func (l *jobLane) pop() place {
	if l.fromSorted() {
		l.i++
		return l.sorted[l.i-1]
	}
	return l.late.pop()
}

// pool is the queue in lanes, with what the rule needs besides: the
// policy, the quotas, fair share's usage, and how many urgent jobs are
// queued (off-peak jobs wait for none, held or not, dispatchable or not).
type pool struct {
	p      Policy
	q      *quotas
	lanes  map[laneKey]*jobLane
	tiers  [3][]*jobLane // by rank: the lanes with jobs
	fair   *fairTrack    // nil under fifo
	use    []float64     // fair share's usage at the step, by owner
	urgent int
}

func (s *State) newPool(p Policy, now time.Time) *pool {
	pl := &pool{p: withZone(p), q: s.quotas(p, now), lanes: map[laneKey]*jobLane{}}
	if p.Fair {
		pl.fair = s.fairTrack(p, now)
	}
	return pl
}

// add puts a job in its lane: sorted when the jobs come in queue order
// (the queue as it is), late otherwise (released later in a simulation).
func (pl *pool) add(x place, sorted bool) {
	l := pl.lane(x)
	if !l.listed {
		l.listed = true
		pl.tiers[l.key.rank] = append(pl.tiers[l.key.rank], l)
	}
	if sorted {
		l.sorted = append(l.sorted, x)
	} else {
		l.late.push(x)
	}
}

// lane is x's lane, made when it has none yet (not listed in its tier).
func (pl *pool) lane(x place) *jobLane {
	j := x.j
	return pl.laneOf(x.rank, j.Owner, j.Project, j.OffPeak, j.Moved)
}

// laneOf is the lane of a job with these fields.
func (pl *pool) laneOf(rank int, owner, project string, offPeak, moved bool) *jobLane {
	k := laneKey{rank: rank, offPeak: offPeak, moved: moved}
	if pl.fair != nil || pl.q.s.Quotas["user/"+owner] != nil {
		k.owner = owner
	}
	if project != "" && pl.q.s.Quotas["project/"+project] != nil {
		k.project = project
	}
	l := pl.lanes[k]
	if l == nil {
		l = &jobLane{key: k, late: newMinHeap(placeLess), until: pl.q.holdUntil(k.owner, k.project)}
		if pl.fair != nil {
			l.owner = pl.fair.index(owner)
		}
		pl.lanes[k] = l
	}
	return l
}

// waiting returns the tier's lanes with jobs, taking the empty ones out.
func (pl *pool) waiting(rank int) []*jobLane {
	lanes := pl.tiers[rank][:0]
	for _, l := range pl.tiers[rank] {
		if l.len() > 0 {
			lanes = append(lanes, l)
		} else {
			l.listed = false
		}
	}
	clear(pl.tiers[rank][len(lanes):])
	pl.tiers[rank] = lanes
	return lanes
}

// choose is rules 1 to 4 at t: the lane whose first job is dispatched
// next, from the first tier with a runnable lane; nil when nothing can
// run. A lane is runnable (rule 3) when its quotas have room, and when an
// off-peak lane is inside the window with no urgent work queued (urgent
// off-peak work waits only for its window). Fair share serves, of the
// tier's runnable jobs, the first an admin moved or the first of the owner
// with the least recent slot time (on a tie, the owner whose job comes
// first); fifo the first.
func (pl *pool) choose(t time.Time) *jobLane {
	open := pl.p.OffPeak.Contains(t, pl.p.Zone)
	if pl.fair != nil {
		pl.use = pl.fair.all(t, pl.use[:0])
	}
	for rank := range pl.tiers {
		var (
			best, least *jobLane
			leastUse    float64
			runnable    = func(l *jobLane) bool {
				return !t.Before(l.until) && (!l.key.offPeak || open && (pl.urgent == 0 || rank == Urgent.Rank()))
			}
		)
		lanes := pl.waiting(rank)
		for _, l := range lanes {
			if !runnable(l) {
				continue
			}
			if pl.fair == nil || l.key.moved {
				if best == nil || placeLess(l.top(), best.top()) {
					best = l
				}
				continue
			}
			u := pl.use[l.owner]
			if least == nil || fairLess(u, leastUse) || !fairLess(leastUse, u) && placeLess(l.top(), least.top()) {
				least, leastUse = l, u
			}
		}
		if least != nil {
			// The least owner's first job, unless a moved job comes before it.
			for _, l := range lanes {
				// l.owner is the owner's index: one per owner, cheaper to compare.
				if l.owner == least.owner && !l.key.moved && runnable(l) && placeLess(l.top(), least.top()) {
					least = l
				}
			}
			if best == nil || placeLess(least.top(), best.top()) {
				best = least
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}

// fairLess compares two owners' recent slot time, equal within a
// millionth: the same usage reached by other sums is a tie, not an order.
func fairLess(a, b float64) bool {
	return a < b-1e-6*math.Max(1, math.Abs(b))
}

// fairTrack is each owner's recent slot time (rule 4) at any time from
// now on, as runs end and start: every ended run weighed down by half per
// half-life since it ended, a running segment counted whole.
type fairTrack struct {
	hl    float64 // seconds
	base  time.Time
	ix    map[string]int
	names []string
	val   []float64   // decayed slot-seconds of ended runs, as of asOf
	asOf  []time.Time // when val was
	slots []float64   // slots of running segments
	start []float64   // Σ slots × start (seconds after base) of running segments
	// decayed is val decayed to decayedAt, kept while no run ends: a
	// forecast asks all again at the same time after every start.
	decayed   []float64
	decayedAt time.Time
	fresh     bool
}

func (f *fairTrack) index(owner string) int {
	if i, ok := f.ix[owner]; ok {
		return i
	}
	f.ix[owner] = len(f.names)
	f.names = append(f.names, owner)
	f.val = append(f.val, 0)
	f.asOf = append(f.asOf, f.base)
	f.slots = append(f.slots, 0)
	f.start = append(f.start, 0)
	f.fresh = false
	return len(f.names) - 1
}

// all appends every owner's usage at t, by index, to buf: t no earlier
// than the last change recorded.
func (f *fairTrack) all(t time.Time, buf []float64) []float64 {
	ts := t.Sub(f.base).Seconds()
	if !f.fresh || !t.Equal(f.decayedAt) {
		f.decayed = f.decayed[:0]
		for i, v := range f.val {
			if v != 0 {
				v *= math.Exp2(-t.Sub(f.asOf[i]).Seconds() / f.hl)
			}
			f.decayed = append(f.decayed, v)
		}
		f.decayedAt, f.fresh = t, true
	}
	for i, v := range f.decayed {
		buf = append(buf, v+f.slots[i]*ts-f.start[i])
	}
	return buf
}

// run records that owner i runs slots from start on.
func (f *fairTrack) run(i, slots int, start time.Time) {
	f.slots[i] += float64(slots)
	f.start[i] += float64(slots) * start.Sub(f.base).Seconds()
}

// end records that what run recorded ended at end: a run of its own now,
// decaying from end.
func (f *fairTrack) end(i, slots int, start, end time.Time) {
	f.slots[i] -= float64(slots)
	f.start[i] -= float64(slots) * start.Sub(f.base).Seconds()
	f.fresh = false
	v := f.val[i]
	if v != 0 {
		v *= math.Exp2(-end.Sub(f.asOf[i]).Seconds() / f.hl)
	}
	f.val[i], f.asOf[i] = v+end.Sub(start).Seconds()*float64(slots), end
}

// fairTrack reads every job's runs at now: ended runs decayed, the
// running segment (of a running job) counted from its start.
func (s *State) fairTrack(p Policy, now time.Time) *fairTrack {
	hl := p.HalfLife.Seconds()
	if hl <= 0 {
		hl = (24 * time.Hour).Seconds()
	}
	f := &fairTrack{hl: hl, base: now, ix: map[string]int{}}
	for _, j := range s.decided().Jobs {
		var sum float64
		for _, r := range j.Runs {
			age := max(now.Sub(r.End).Seconds(), 0)
			sum += r.End.Sub(r.Start).Seconds() * math.Exp2(-age/hl)
		}
		var running []time.Time
		if j.Status == Running {
			for _, seg := range j.Segs {
				if !seg.Started.IsZero() && seg.Ended.IsZero() && now.After(seg.Started) {
					running = append(running, seg.Started)
				}
			}
		}
		if sum == 0 && len(running) == 0 {
			continue
		}
		i := f.index(j.Owner)
		f.val[i] += sum * float64(j.Slots)
		f.fresh = false
		for _, st := range running {
			f.run(i, j.Slots, st)
		}
	}
	return f
}

// FairUsage is each user's recent slot time for fair share (rule 4), in
// slot-seconds: every run weighed down by half for each half-life since it
// ended, the segments running now counted whole.
func (s *State) FairUsage(p Policy, now time.Time) map[string]float64 {
	f := s.fairTrack(p, now)
	use := f.all(now, nil)
	out := make(map[string]float64, len(f.names))
	for i, n := range f.names {
		out[n] = use[i]
	}
	return out
}
