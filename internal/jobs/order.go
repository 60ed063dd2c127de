package jobs

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The dispatch rule (docs/jobs.md):
//  1. Tiers in order: urgent, normal, background.
//  2. Within a tier, jobs in order: the time each entered the queue, or
//     where an admin moved it.
//  3. A job is skipped, never blocking the others, while it cannot run: an
//     off-peak job outside the window or while urgent work is queued, a job
//     whose user or project is over quota, a job needing more slots than
//     the worker has at all.
//  4. Fair share (scheduler.fairness fair): of the tier's runnable jobs the
//     next is the first one an admin moved, or the first of the user with
//     the least recent slot time (FairUsage); fifo takes the first.
//  5. That job waits for enough free slots: nothing overtakes it. Running
//     off-peak jobs of lower tiers than its own are asked to yield at their
//     next segment boundary, as many as it needs slots (off-peak work
//     always yields to higher-priority work).

// Offer is what a worker offers: its free slots now, and all it has.
type Offer struct {
	Worker string
	Free   int
	Total  int
}

// Queue returns the queued jobs by tier and order: the queue's order,
// which rules 3 to 5 (choose, dispatch.go) apply; the list's positions are
// the order choose takes them in.
func (s *State) Queue() []*Job {
	var out []*Job
	for _, j := range s.Jobs {
		if j.Status == Queued {
			out = append(out, j)
		}
	}
	sortQueue(out)
	return out
}

// sortQueue sorts by jobLess. It sorts keys copied out of the jobs: at
// 10,000 jobs, comparing through the pointers (and sort.Slice's swapper)
// was a third of a claim's decision. jobLess is a total order (ids are
// unique), so any sort gives the same result.
func sortQueue(jobs []*Job) {
	type key struct {
		rank  int
		order int64
		j     *Job
	}
	keys := make([]key, len(jobs))
	for i, j := range jobs {
		keys[i] = key{j.Tier.Rank(), j.Order, j}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		if a.order != b.order {
			return cmp.Compare(a.order, b.order)
		}
		return strings.Compare(a.j.ID, b.j.ID)
	})
	for i := range keys {
		jobs[i] = keys[i].j
	}
}

func jobLess(a, b *Job) bool {
	if ra, rb := a.Tier.Rank(), b.Tier.Rank(); ra != rb {
		return ra < rb
	}
	if a.Order != b.Order {
		return a.Order < b.Order
	}
	return a.ID < b.ID
}

// skip says why a queued job cannot be dispatched now ("" when it can, slots aside).
func (s *State) skip(j *Job, p Policy, q *quotas, urgent bool, total int, now time.Time) string {
	switch {
	case j.Slots > total:
		return "needs more slots than the worker has"
	case j.OffPeak && !p.OffPeak.Contains(now, p.Zone):
		return "off-peak: outside the window"
	case j.OffPeak && urgent && j.Tier != Urgent: // urgent off-peak work waits only for its window
		return "off-peak: urgent work is queued"
	}
	if h, held := q.hold(j.Owner, j.Project); held {
		return h.String()
	}
	return ""
}

// Decision is what a worker's dispatch found.
type Decision struct {
	Job   *Job   // to dispatch; nil when none
	Next  *Job   // the job next in line when it waits for slots
	Yield []*Job // running off-peak jobs to ask to make room for urgent work
}

// Decide picks the job a worker with offer o dispatches now (rule above):
// the first step of the order job list shows (choose, dispatch.go).
func (s *State) Decide(p Policy, o Offer, now time.Time) Decision {
	return s.decideFrom(s.queueHeads(p, now, o.Total), o, now)
}

// decideFrom is Decide on the lanes pl.
func (s *State) decideFrom(pl *pool, o Offer, now time.Time) Decision {
	l := pl.choose(now)
	if l == nil {
		return Decision{}
	}
	next := l.top().j
	if next.Slots <= o.Free {
		return Decision{Job: next}
	}
	return Decision{Next: next, Yield: s.yielders(next, o.Free)}
}

// queueHeads is the queued jobs in lanes, those needing more than most
// slots left out (rule 3: they are skipped; an urgent one still counts as
// urgent work queued), for one choose: each lane holds only its first job, found without sorting the queue (at 10,000 queued jobs the sort was
// most of a claim's decision). The lanes are listed in their tiers in the
// order of their first jobs, as adding the sorted queue lists them: choose
// reads them in that order.
func (s *State) queueHeads(p Policy, now time.Time, most int) *pool {
	pl := s.decided().newPool(p, now)
	for _, j := range s.Jobs {
		if j.Status != Queued {
			continue
		}
		if j.Tier == Urgent {
			pl.urgent++
		}
		if j.Slots > most {
			continue
		}
		x := place{j: j, rank: j.Tier.Rank(), order: j.Order}
		switch l := pl.lane(x); {
		case len(l.sorted) == 0:
			l.sorted = append(l.sorted, x)
		case placeLess(x, l.sorted[0]):
			l.sorted[0] = x
		}
	}
	if s.lazy != nil {
		s.idleHeads(pl, most)
	}
	lanes := slices.Collect(maps.Values(pl.lanes))
	slices.SortFunc(lanes, func(a, b *jobLane) int {
		if placeLess(a.top(), b.top()) {
			return -1
		}
		return 1 // no two lanes hold one job
	})
	for _, l := range lanes {
		l.listed = true
		pl.tiers[l.key.rank] = append(pl.tiers[l.key.rank], l)
	}
	return pl
}

// idleHeads is queueHeads for the idle jobs of a claimable state, read
// from the snapshot's claim section: of each group (in queue order) the
// first job not taken into Jobs that fits most is a candidate for its
// lane's first, and only the lanes' firsts are decoded. Urgent work is
// counted only as far as choose reads it: whether any is queued.
func (s *State) idleHeads(pl *pool, most int) {
	heads := map[*jobLane]idleJob{}
	mustDecode(s.lazy.eachGroup(func(k groupKey, next func() (idleJob, bool)) {
		urgent := k.rank == Urgent.Rank()
		for {
			x, ok := next()
			if !ok {
				return
			}
			if s.isTaken(x.rec) {
				continue // an event changed it: Jobs has it
			}
			if urgent && pl.urgent == 0 {
				pl.urgent++
			}
			if x.slots > most {
				continue
			}
			l := pl.laneOf(k.rank, k.owner, k.project, k.offPeak, k.moved)
			if h, ok := heads[l]; !ok || x.order < h.order || x.order == h.order && x.rec < h.rec {
				heads[l] = x
			}
			return
		}
	}))
	sl := &slabs{}
	for l, h := range heads {
		j, err := s.lazy.decode(h.rec, sl)
		mustDecode(err)
		x := place{j: j, rank: l.key.rank, order: j.Order}
		if len(l.sorted) == 0 {
			l.sorted = append(l.sorted, x)
		} else if placeLess(x, l.sorted[0]) {
			l.sorted[0] = x
		}
	}
}

// yielders returns the running off-peak jobs to ask to yield for next,
// which waits for slots with free of them free (pickYielders).
func (s *State) yielders(next *Job, free int) []*Job {
	var (
		running []*Job
		cands   []yieldCand
	)
	for _, j := range s.decided().Jobs {
		if j.OffPeak && j.Status.Held() {
			running = append(running, j)
			cands = append(cands, yieldCand{rank: j.Tier.Rank(), first: j.FirstStart, id: j.ID, slots: j.Slots, asked: j.YieldRequested})
		}
	}
	var out []*Job
	for _, i := range pickYielders(cands, next.Tier.Rank(), next.Slots-free) {
		out = append(out, running[i])
	}
	return out
}

// yieldCand is a running off-peak job as rule 5 sees it.
type yieldCand struct {
	rank  int
	first time.Time // first dispatched
	id    string
	slots int
	asked bool // asked to yield already
}

// pickYielders is rule 5's yield, for a worker's claim and the list's
// simulation alike: of the running off-peak jobs of lower tiers than rank,
// the lowest tier first, then the latest started first, as many as hold
// the need slots the waiting job lacks (those asked already count); it
// returns the indexes of those to ask now.
func pickYielders(cands []yieldCand, rank, need int) []int {
	var idx []int
	for i, c := range cands {
		if c.rank > rank {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool {
		x, y := cands[idx[a]], cands[idx[b]]
		if x.rank != y.rank {
			return x.rank > y.rank
		}
		if !x.first.Equal(y.first) {
			return x.first.After(y.first)
		}
		return x.id < y.id
	})
	var out []int
	for _, i := range idx {
		if need <= 0 {
			break
		}
		need -= cands[i].slots
		if !cands[i].asked {
			out = append(out, i)
		}
	}
	return out
}

// Busy is the slots a worker's jobs hold.
func (s *State) Busy(worker string) int {
	n := 0
	for _, j := range s.decided().Jobs {
		if j.Worker == worker && j.Status.Held() {
			n += j.Slots
		}
	}
	return n
}

// MaxSlots is the most slots any worker offers, or the policy's when none
// has announced itself.
func (s *State) MaxSlots(p Policy) int {
	n := 0
	for _, w := range s.Workers {
		n = max(n, w.Slots)
	}
	if n == 0 {
		n = p.Slots
	}
	return n
}
