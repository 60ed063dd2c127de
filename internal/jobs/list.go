package jobs

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/jsonout"
)

// Row is one line of spool job list.
type Row struct {
	Position      int       `json:"position"` // 1.. for queued jobs; 0 for the others
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	Owner         string    `json:"owner"`
	Project       string    `json:"project,omitempty"`
	Tier          Tier      `json:"priority"`
	Status        Status    `json:"status"`
	Slots         int       `json:"gpus"`
	Segments      int       `json:"segments"`
	SegmentsDone  int       `json:"segments_done"`
	Submitted     time.Time `json:"submitted_at"`
	StartAfter    time.Time `json:"start_after,omitzero"`
	EarliestStart time.Time `json:"earliest_start,omitzero"` // zero when it cannot be estimated
	LikelyStart   time.Time `json:"likely_start,omitzero"`
	WaitReason    string    `json:"wait_reason"` // "" when it waits its turn
}

// AppendJSON writes the Row as encoding/json does (jsonout): at 10,000
// rows encoding/json's reflection and its indenting pass were a third of
// spool --json job list.
func (r Row) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	o := jsonout.NewObject(dst, f)
	o.Int("position", int64(r.Position))
	o.String("id", r.ID)
	o.String("name", r.Name)
	o.String("owner", r.Owner)
	o.StringOmitEmpty("project", r.Project)
	o.String("priority", string(r.Tier))
	o.String("status", string(r.Status))
	o.Int("gpus", int64(r.Slots))
	o.Int("segments", int64(r.Segments))
	o.Int("segments_done", int64(r.SegmentsDone))
	o.Time("submitted_at", r.Submitted)
	o.TimeOmitZero("start_after", r.StartAfter)
	o.TimeOmitZero("earliest_start", r.EarliestStart)
	o.TimeOmitZero("likely_start", r.LikelyStart)
	o.String("wait_reason", r.WaitReason)
	return o.End()
}

// List is spool job list: running and dispatched jobs first, then the
// queued jobs in the order the dispatcher will take them (positions 1..,
// simulated with the same rule as a worker's claim, fair share included:
// see forecast), then paused jobs in queue order, then scheduled jobs by
// start_after, and with all the ended ones, latest first. Waiting jobs get
// a start range from that simulation.
func (s *State) List(p Policy, now time.Time, all bool) []Row {
	p = withZone(p)
	v := s.view(p, now)
	out := make([]Row, 0, len(v.running)+len(v.line)+len(v.scheduled)+len(v.ended))
	row := func(j *Job, done int) Row {
		return Row{ID: j.ID, Name: j.Name, Owner: j.Owner, Project: j.Project, Tier: j.Tier, Status: j.Status,
			Slots: j.Slots, Segments: j.Segments, SegmentsDone: done, Submitted: j.Submitted, StartAfter: j.StartAfter}
	}
	waits := func(w *waiting) Row {
		r := row(w.j, w.done)
		r.EarliestStart, r.LikelyStart, r.WaitReason = w.earliest, w.likely, w.reason
		return r
	}
	for _, j := range v.running {
		out = append(out, row(j, j.DoneSegments()))
	}
	for i, w := range v.order {
		r := waits(w)
		if r.Status == Queued {
			r.Position = i + 1
		}
		out = append(out, r)
	}
	for i := range v.scheduled {
		out = append(out, waits(&v.scheduled[i]))
	}
	if all {
		for _, j := range v.ended {
			out = append(out, row(j, j.DoneSegments()))
		}
	}
	return out
}

// withZone guards against a Policy built by hand without a zone.
func withZone(p Policy) Policy {
	if p.Zone == nil {
		p.Zone = time.UTC
	}
	return p
}

// waiting is a job not started yet, with why it waits and when it may
// start (zero when it cannot be estimated).
type waiting struct {
	j                *Job
	done             int // segments done
	reason           string
	earliest, likely time.Time
	seq              int // its place among the simulated (likely) starts; -1: none
}

// view is the state sorted the way list and explain read it, with the
// skip reasons and the start estimates, computed once.
type view struct {
	running   []*Job     // dispatched and running, by dispatch time
	line      []waiting  // queued and paused, in queue order
	queue     []*waiting // the queued ones of line, in queue order
	order     []*waiting // the queued ones in dispatch order (positions), then the paused ones
	scheduled []waiting  // by start_after
	ended     []*Job     // latest first

	total  int // slots of all workers (the policy's while none announced)
	most   int // the most one worker has
	urgent bool
	q      *quotas
}

// find returns j's line in the view, nil when it does not wait.
func (v *view) find(j *Job) *waiting {
	for _, ws := range [][]waiting{v.line, v.scheduled} {
		for i := range ws {
			if ws[i].j == j {
				return &ws[i]
			}
		}
	}
	return nil
}

func (s *State) view(p Policy, now time.Time) *view { return s.viewUntil(p, now, nil) }

// viewUntil is view with the simulation stopped once until has its start
// (explain's job): the starts before it, and its own, are those of the whole
// run; the jobs after it have none (seq -1), which sorts and counts them
// after it as the whole run would.
func (s *State) viewUntil(p Policy, now time.Time, until *Job) *view {
	v := &view{most: s.MaxSlots(p), q: s.quotas(p, now)}
	for _, w := range s.Workers {
		v.total += w.Slots
	}
	if v.total == 0 {
		v.total = p.Slots
	}
	var line, scheduled []*Job
	for _, j := range s.Jobs {
		switch j.Status {
		case Dispatched, Running:
			v.running = append(v.running, j)
		case Queued, Paused:
			line = append(line, j)
			if j.Status == Queued && j.Tier == Urgent {
				v.urgent = true // what urgentQueued says of the sorted queue
			}
		case Scheduled:
			scheduled = append(scheduled, j)
		default:
			v.ended = append(v.ended, j)
		}
	}
	sort.Slice(v.running, func(a, b int) bool {
		x, y := v.running[a], v.running[b]
		if dx, dy := dispatchedAt(x), dispatchedAt(y); !dx.Equal(dy) {
			return dx.Before(dy)
		}
		return x.ID < y.ID
	})
	sortQueue(line)
	sort.Slice(scheduled, func(a, b int) bool {
		x, y := scheduled[a], scheduled[b]
		if !x.StartAfter.Equal(y.StartAfter) {
			return x.StartAfter.Before(y.StartAfter)
		}
		return jobLess(x, y)
	})
	sort.Slice(v.ended, func(a, b int) bool {
		x, y := v.ended[a], v.ended[b]
		if !x.Ended.Equal(y.Ended) {
			return x.Ended.After(y.Ended)
		}
		return x.ID < y.ID
	})
	v.line = make([]waiting, len(line))
	v.queue = make([]*waiting, 0, len(line))
	f := forecast{s: s, p: p, now: now, total: v.total, most: v.most, running: v.running, until: until}
	var paused []*waiting
	for i, j := range line {
		w := &v.line[i]
		w.j, w.done, w.seq = j, j.DoneSegments(), -1
		if j.Status == Paused {
			w.reason = "paused"
			paused = append(paused, w)
			continue
		}
		v.queue = append(v.queue, w)
		w.reason = s.skip(j, p, v.q, v.urgent, v.most, now)
		f.queue = append(f.queue, w) // held and off-peak ones too: they get an estimate
	}
	v.scheduled = make([]waiting, len(scheduled))
	for i, j := range scheduled {
		v.scheduled[i] = waiting{j: j, done: j.DoneSegments(), seq: -1, reason: "scheduled: enters the queue at " + j.StartAfter.In(p.Zone).Format(time.RFC3339)}
		f.scheduled = append(f.scheduled, &v.scheduled[i])
	}
	st := s.segmentTimes()
	seq := 0
	// The two simulations are independent (each its own pool, fair share
	// and runs; the state, the times and the queue only read; each sets
	// fields of its own): the earliest one runs alongside, on another core.
	var wg sync.WaitGroup
	wg.Go(func() {
		f.run(func(j *Job) time.Duration { return st.of(j.Name, p).earliest }, func(w *waiting, t time.Time) { w.earliest = t })
	})
	f.run(func(j *Job) time.Duration { return st.of(j.Name, p).likely }, func(w *waiting, t time.Time) { w.likely, w.seq = t, seq; seq++ })
	wg.Wait()
	// Dispatch order: the simulated starts, then the queued jobs that cannot
	// be estimated in queue order, then the paused ones.
	v.order = make([]*waiting, 0, len(line))
	v.order = append(v.order, v.queue...)
	sort.SliceStable(v.order, func(a, b int) bool {
		x, y := v.order[a], v.order[b]
		if (x.seq < 0) != (y.seq < 0) {
			return x.seq >= 0
		}
		return x.seq < y.seq
	})
	v.order = append(v.order, paused...)
	for _, ws := range [][]waiting{v.line, v.scheduled} {
		for i := range ws {
			// Shorter runs can reorder an off-peak window or a release and
			// land a job later; the range stays a range.
			if w := &ws[i]; w.likely.IsZero() || w.earliest.After(w.likely) {
				w.earliest = w.likely
			}
		}
	}
	return v
}

// dispatchedAt is when a job was last dispatched.
func dispatchedAt(j *Job) time.Time {
	for i := len(j.Trail) - 1; i >= 0; i-- {
		if j.Trail[i].To == Dispatched {
			return j.Trail[i].At
		}
	}
	return j.FirstStart
}

// segTime is what a segment of some name is expected to take.
type segTime struct{ earliest, likely time.Duration }

// segmentTimes holds the finished segments' durations by job name, sorted.
type segmentTimes map[string][]time.Duration

func (s *State) segmentTimes() segmentTimes {
	out := segmentTimes{}
	for _, j := range s.Jobs {
		for _, seg := range j.Segs {
			if seg.Done && !seg.Started.IsZero() && seg.Ended.After(seg.Started) {
				out[j.Name] = append(out[j.Name], seg.Ended.Sub(seg.Started))
			}
		}
	}
	for _, d := range out {
		slices.Sort(d)
	}
	return out
}

// of is what a segment of that name is expected to take: likely the
// median finished segment of the name, or the policy's default while none
// has finished; earliest the shortest of them once three have, and half
// the likely time before (one or two runs say little of how short it can
// be: the range is a range, not the same time twice).
func (st segmentTimes) of(name string, p Policy) segTime {
	d := st[name]
	if len(d) == 0 {
		return segTime{p.DefaultSegment / 2, p.DefaultSegment}
	}
	m := d[len(d)/2]
	if len(d)%2 == 0 {
		m = (d[len(d)/2-1] + d[len(d)/2]) / 2
	}
	if len(d) < minSamples {
		return segTime{earliest: m / 2, likely: m}
	}
	return segTime{earliest: d[0], likely: m}
}

// minSamples is how many finished segments of a name make their shortest
// the earliest estimate.
const minSamples = 3

// forecast simulates dispatch from now on, with every job's segments
// taking an expected time, and says when each waiting job would start.
//
// Each step asks choose (dispatch.go), as a worker's claim does, at the
// simulated time: fair share's usage grows with the jobs simulated, the
// off-peak window opens and closes, a quota hold ends at its window's
// reset (usage to come is not foreseen), urgent work leaves the queue as it
// starts, and scheduled jobs enter at start_after, at their tier's end. The
// workers' slots are one pool (a job needing more than one worker has is
// left out beforehand). Running jobs free their slots when their remaining
// segments are expected to end. The chosen job waits until enough slots
// are free and nothing overtakes it; meanwhile off-peak jobs of lower tiers
// are asked to yield as a claim asks them (rule 5, pickYielders), and do at
// the end of their segment, back in the queue with the rest of theirs.
// Every step starts a job or moves the clock to the next release, window
// edge, hold's end or start_after.
type forecast struct {
	s         *State
	p         Policy
	now       time.Time
	total     int
	most      int
	running   []*Job
	queue     []*waiting // queued jobs in queue order
	scheduled []*waiting // by start_after
	until     *Job       // stop once it starts (nil: run to the end)
}

// simRun is a job holding slots in the simulation.
type simRun struct {
	x      place     // the job, as it goes back to the queue if it yields
	first  time.Time // first dispatched: yielders go latest first
	segEnd time.Time // when its current segment is expected to end
	left   int       // segments not done, the current one included
	seg    time.Duration
	owner  int       // fair share's index of the owner, -1 when it does not count
	since  time.Time // since when it counts
	yield  bool      // asked to yield: it lets go at segEnd
	ver    int       // its release in the heap (an earlier one is stale)
}

// end is when it lets its slots go.
func (r *simRun) end() time.Time {
	if r.yield {
		return r.segEnd
	}
	return r.segEnd.Add(time.Duration(r.left-1) * r.seg)
}

type release struct {
	at  time.Time
	run *simRun
	ver int
}

// run simulates with segments taking seg, and calls set with each start.
func (f *forecast) run(seg func(*Job) time.Duration, set func(*waiting, time.Time)) {
	p, cur := f.p, f.now
	free := f.total
	pl := f.s.newPool(p, f.now)
	rel := newMinHeap(func(a, b release) bool { return a.at.Before(b.at) })
	rel.items = make([]release, 0, len(f.running)+len(f.queue)+len(f.scheduled))
	var runs []*simRun // off-peak ones: those that may be asked to yield
	hold := func(r *simRun) {
		free -= r.x.j.Slots
		rel.push(release{at: r.end(), run: r, ver: r.ver})
		if r.x.j.OffPeak {
			runs = append(runs, r)
		}
	}
	for _, j := range f.running {
		d := seg(j)
		r := &simRun{x: place{j: j, rank: j.Tier.Rank(), order: j.Order, done: j.DoneSegments()}, first: j.FirstStart,
			seg: d, left: max(j.Segments-j.DoneSegments(), 1), owner: -1, yield: j.YieldRequested}
		end := f.now.Add(remaining(j, d, f.now))
		r.segEnd = end.Add(-time.Duration(r.left-1) * d)
		if r.segEnd.Before(f.now) { // late: its segment may end any moment
			r.segEnd = f.now
		}
		if pl.fair != nil && j.Status == Running {
			for _, sg := range j.Segs { // the segment fairTrack counts as running
				if !sg.Started.IsZero() && sg.Ended.IsZero() && f.now.After(sg.Started) {
					r.owner, r.since = pl.fair.index(j.Owner), sg.Started
				}
			}
		}
		hold(r)
	}
	for _, w := range f.queue {
		if w.j.Tier == Urgent {
			pl.urgent++
		}
		if w.j.Slots <= f.most {
			pl.add(place{j: w.j, w: w, rank: w.j.Tier.Rank(), order: w.j.Order, done: w.done}, true)
		}
	}
	var pending []*waiting
	for _, w := range f.scheduled {
		if w.j.Slots <= f.most && (!w.j.OffPeak || p.OffPeak.Set) { // else it could never start
			pending = append(pending, w)
		}
	}
	next := 0
	for {
		for ; next < len(pending) && !pending[next].j.StartAfter.After(cur); next++ {
			w := pending[next]
			at := w.j.StartAfter
			if at.Before(f.now) {
				at = f.now // Tick releases it at the next command
			}
			if w.j.Tier == Urgent {
				pl.urgent++
			}
			pl.add(place{j: w.j, w: w, rank: w.j.Tier.Rank(), order: at.UnixNano(), done: w.done}, false)
		}
		for rel.len() > 0 && !rel.top().at.After(cur) {
			e := rel.pop()
			r := e.run
			if e.ver != r.ver {
				continue // moved earlier by a yield
			}
			free += r.x.j.Slots
			if r.owner >= 0 {
				pl.fair.end(r.owner, r.x.j.Slots, r.since, e.at)
			}
			r.ver = -1                 // gone
			if r.yield && r.left > 1 { // back in the queue, its place kept
				x := r.x
				x.done, x.again, x.first = x.j.Segments-r.left+1, true, r.first
				if x.j.Tier == Urgent {
					pl.urgent++
				}
				pl.add(x, false)
			}
		}
		l := pl.choose(cur)
		if l != nil && l.top().j.Slots <= free {
			x := l.pop()
			j := x.j
			if !x.again && x.w != nil {
				set(x.w, cur)
				if x.w.j == f.until {
					return
				}
			}
			if j.Tier == Urgent {
				pl.urgent--
			}
			d := seg(j)
			first := cur
			if x.again {
				first = x.first
			}
			r := &simRun{x: x, first: first, seg: d, left: j.Segments - x.done, segEnd: cur.Add(d), owner: -1}
			if pl.fair != nil {
				r.owner, r.since = l.owner, cur
				pl.fair.run(l.owner, j.Slots, cur)
			}
			hold(r)
			continue
		}
		if l != nil { // the chosen job waits for slots: off-peak jobs of lower tiers yield
			runs = slices.DeleteFunc(runs, func(r *simRun) bool { return r.ver < 0 })
			cands := make([]yieldCand, len(runs))
			for i, r := range runs {
				cands[i] = yieldCand{rank: r.x.rank, first: r.first, id: r.x.j.ID, slots: r.x.j.Slots, asked: r.yield}
			}
			head := l.top().j
			for _, i := range pickYielders(cands, head.Tier.Rank(), head.Slots-free) {
				r := runs[i]
				if r.seg > 0 && !r.segEnd.After(cur) { // its segment ended: the one running now is a later one
					n := cur.Sub(r.segEnd)/r.seg + 1
					r.segEnd, r.left = r.segEnd.Add(n*r.seg), r.left-int(n)
				}
				r.yield = true
				r.ver++
				rel.push(release{at: r.end(), run: r, ver: r.ver})
			}
		}
		// Nothing starts now: on to the next moment something changes.
		var then time.Time
		soonest := func(t time.Time) {
			if t.After(cur) && (then.IsZero() || t.Before(then)) {
				then = t
			}
		}
		for rel.len() > 0 && rel.top().ver != rel.top().run.ver {
			rel.pop() // stale
		}
		if rel.len() > 0 {
			soonest(rel.top().at)
		}
		if next < len(pending) {
			soonest(pending[next].j.StartAfter)
		}
		offPeak := false
		for rank := range pl.tiers {
			for _, l := range pl.waiting(rank) {
				soonest(l.until)
				offPeak = offPeak || l.key.offPeak
			}
		}
		if offPeak && p.OffPeak.Set {
			if p.OffPeak.Contains(cur, p.Zone) {
				soonest(windowCloses(p.OffPeak, cur, p.Zone))
			} else {
				soonest(p.OffPeak.Next(cur, p.Zone))
			}
		}
		if then.IsZero() {
			return // what is left cannot start
		}
		cur = then
	}
}

// remaining is how long a running job is expected to hold its slots: its
// segments not done, less what the current one has run.
func remaining(j *Job, seg time.Duration, now time.Time) time.Duration {
	d := time.Duration(j.Segments-j.DoneSegments()) * seg
	for _, sg := range j.Segs {
		if !sg.Done && !sg.Started.IsZero() && sg.Ended.IsZero() && now.After(sg.Started) {
			d -= now.Sub(sg.Started)
		}
	}
	return max(d, 0)
}

// windowCloses is when w, open at t, next closes.
func windowCloses(w Window, t time.Time, zone *time.Location) time.Time {
	lt := t.In(zone)
	end := time.Date(lt.Year(), lt.Month(), lt.Day(), w.To/60, w.To%60, 0, 0, zone)
	if !end.After(lt) {
		end = time.Date(lt.Year(), lt.Month(), lt.Day()+1, w.To/60, w.To%60, 0, 0, zone)
	}
	return end
}

// minHeap is a binary heap ordered by less.
type minHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func newMinHeap[T any](less func(a, b T) bool) *minHeap[T] { return &minHeap[T]{less: less} }

func (h *minHeap[T]) len() int { return len(h.items) }
func (h *minHeap[T]) top() T   { return h.items[0] }

func (h *minHeap[T]) push(x T) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		up := (i - 1) / 2
		if !h.less(h.items[i], h.items[up]) {
			break
		}
		h.items[i], h.items[up] = h.items[up], h.items[i]
		i = up
	}
}

func (h *minHeap[T]) pop() T {
	x := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && h.less(h.items[l], h.items[small]) {
			small = l
		}
		if r := l + 1; r < n && h.less(h.items[r], h.items[small]) {
			small = r
		}
		if small == i {
			break
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
	return x
}
