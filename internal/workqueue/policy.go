package workqueue

import (
	"iter"
	"math"
	"slices"
	"time"
)

// Policy names.
const (
	Exponential = "exponential" // the wait doubles after each failure up to a cap; abandoned after max failures
	Progressive = "progressive" // retry at once, then requeue; demote every 3 failures, Blocked after 3 at P4
)

// Policy is the queue's configuration, read once per command.
type Policy struct {
	Kind          string
	Initial       time.Duration
	Max           time.Duration
	Multiplier    float64
	MaxFailures   int // exponential only; 0 = unlimited
	Lease         time.Duration
	Label         string   // workqueue.label: required for next
	ExcludeLabels []string // workqueue.exclude_labels
}

// Backoff is how long a task waits after its attempts-th attempt failed:
// nothing after the first, then initial·multiplier^(attempts-2), capped at max.
func (p Policy) Backoff(attempts int) time.Duration {
	if attempts <= 1 || p.Kind == Progressive {
		return 0
	}
	wait := float64(p.Initial) * math.Pow(p.Multiplier, float64(attempts-2))
	if wait >= float64(p.Max) || math.IsInf(wait, 0) || math.IsNaN(wait) {
		return p.Max
	}
	return time.Duration(wait)
}

// Effective is the entry as it stands at now: the fold of the events
// Expire would record for it at now. A claim whose lease ran out is thus a
// failed attempt ("lease expired") dated at the lease's end, with the
// policy's consequences (abandoned, demoted, blocked), exactly as next
// records them; any other entry is as it is, as Expire records nothing
// for it. The fold is effectiveFold's (a Fork of a state holding the entry
// alone), made here without the events' JSON (foldDecided);
// TestEffectiveIsFoldOfExpire holds the two equal.
//
// The priority a demotion starts from is the entry's (its priority at the
// claim, or its last demotion): Effective has no task to read it from.
func (p Policy) Effective(h Entry, now time.Time) Entry {
	if !h.leaseExpired(now) {
		return h // Expire records nothing for it: the fold of no events
	}
	e := h
	for _, d := range p.expiry(h, h.Priority, now) {
		if !e.foldDecided(d, now) {
			return p.effectiveFold(h, now)
		}
	}
	return e
}

// effectiveFold is Effective by definition: the fold, on a Fork, of what
// Expire records for a state that holds h alone.
func (p Policy) effectiveFold(h Entry, now time.Time) Entry {
	id := h.ID
	if !ValidID(id) {
		h.ID = effectiveID // the fold takes only ids it could name a task by
	}
	s := &State{trk: &trackerSide{}, hst: &historySide{m: map[string]*Entry{h.ID: &h}}}
	f := NewFork(s, "", now)
	f.Add(Expire(s, p, now)...)
	o, err := f.State()
	if err != nil {
		panic(err) // the drafts are the package's own data types, which always marshal
	}
	e := *o.hst.m[h.ID]
	e.ID = id
	return e
}

// effectiveID stands for an entry's id Effective's fold would skip.
const effectiveID = "x"

// leaseRunOut is the rule of every lease: one that runs until until has
// run out at now from until on (at until itself, it has).
func leaseRunOut(until, now time.Time) bool { return !now.Before(until) }

// leaseExpired reports whether h holds a claim whose lease ran out by now:
// what Expire records and Effective applies.
func (h *Entry) leaseExpired(now time.Time) bool {
	return h.Status == HistWorking && leaseRunOut(h.LeaseUntil, now)
}

// leaseHeld reports whether h holds a claim whose lease has not run out.
func (h *Entry) leaseHeld(now time.Time) bool {
	return h.Status == HistWorking && !leaseRunOut(h.LeaseUntil, now)
}

// leaseExpired reports whether t is in progress under a claim whose lease
// ran out by now (a task in progress with no lease, as an import has it,
// has none to run out).
func (t *Task) leaseExpired(now time.Time) bool {
	return t.Status == StatusInProgress && !t.LeaseUntil.IsZero() && leaseRunOut(t.LeaseUntil, now)
}

// requeuedAfter reports whether the failures-th failure puts the task at
// the back of its priority (QueuedAt): under the progressive policy,
// every second one does.
func requeuedAfter(failures int) bool { return failures%2 == 0 }

// Outcome is what the policy does after a failed attempt.
type Outcome struct {
	Abandon  bool // exponential: max_failures reached
	DemoteTo int  // progressive: the new priority, or -1
	Block    bool // progressive: three failures at priority 4
}

// AfterFailure decides the consequences of a failure already counted in h
// (h.Attempts claims, h.Failures failures) for a task at priority prio.
// Progressive: every third failure lowers the priority by one, or, at
// priority 4, blocks the task.
func (p Policy) AfterFailure(h Entry, prio int) Outcome {
	out := Outcome{DemoteTo: -1}
	if p.Kind == Progressive {
		if h.Failures > 0 && h.Failures%3 == 0 {
			if prio < MaxPriority {
				out.DemoteTo = prio + 1
			} else {
				out.Block = true
			}
		}
		return out
	}
	out.Abandon = p.abandons(h)
	return out
}

// MaxPriority is the least urgent priority.
const MaxPriority = 4

// NextEligible is when a failed entry may be claimed again (zero: now).
func (p Policy) NextEligible(h Entry) time.Time {
	if h.Status != HistFailed {
		return time.Time{}
	}
	wait := p.Backoff(h.Attempts)
	if wait == 0 {
		return time.Time{}
	}
	return h.LastFailureAt.Add(wait)
}

// Why a candidate is not eligible; "" means eligible.
const (
	SkipCompleted = "completed"
	SkipAbandoned = "abandoned"
	SkipBlocked   = "blocked"
	SkipWorking   = "claimed"
	SkipBackoff   = "backoff"
	SkipLabel     = "label"
	SkipType      = "type"
)

// Gate is the gating of one next: every label in Require, none in
// Exclude, and no issue type in ExcludeTypes (the orchestrator's: epics).
type Gate struct {
	Require      []string
	Exclude      []string
	ExcludeTypes []string
}

// AdmitsType reports whether a task of issue type typ may be handed out.
func (g Gate) AdmitsType(typ string) bool { return !slices.Contains(g.ExcludeTypes, typ) }

// Gate combines the configured gating with a command's flags.
func (p Policy) Gate(require, exclude []string) Gate {
	g := Gate{Require: slices.Clone(require), Exclude: append(slices.Clone(p.ExcludeLabels), exclude...)}
	if p.Label != "" && !slices.Contains(g.Require, p.Label) {
		g.Require = append([]string{p.Label}, g.Require...)
	}
	return g
}

func (g Gate) Admits(labels []string) bool {
	for _, l := range g.Require {
		if !slices.Contains(labels, l) {
			return false
		}
	}
	for _, l := range g.Exclude {
		if slices.Contains(labels, l) {
			return false
		}
	}
	return !slices.Contains(labels, BlockedLabel)
}

// Candidate is ready work offered by a bd/br source: one item of bd ready --json.
type Candidate struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description,omitempty"`
	Priority    int       `json:"priority"`
	IssueType   string    `json:"issue_type"`
	Labels      []string  `json:"labels,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	queuedAt    time.Time
}

// Skip says why the queue would not hand c out at now ("" if it would).
func (p Policy) Skip(c Candidate, h *Entry, g Gate, now time.Time) string {
	if !g.Admits(c.Labels) {
		return SkipLabel
	}
	if !g.AdmitsType(c.IssueType) {
		return SkipType
	}
	if h == nil {
		return ""
	}
	e := p.Effective(*h, now)
	switch {
	case e.Status == HistCompleted:
		return SkipCompleted
	case e.Status == HistAbandoned:
		return SkipAbandoned
	case e.blocked():
		return SkipBlocked
	case e.Status == HistWorking:
		return SkipWorking
	case e.Status == HistFailed && p.abandons(e):
		return SkipAbandoned
	case e.Status == HistFailed && now.Before(p.NextEligible(e)):
		return SkipBackoff
	}
	return ""
}

// Select filters candidates and orders the eligible ones by priority, then
// queue time (creation, or the progressive policy's requeue), then id; at
// most limit of them when limit > 0, all in no order when limit is Unsorted.
func (p Policy) Select(cands []Candidate, entry func(id string) *Entry, g Gate, now time.Time, limit int) []Candidate {
	var out []Candidate
	for _, c := range cands {
		h := entry(c.ID)
		if p.Skip(c, h, g, now) != "" {
			continue
		}
		c.queuedAt = p.queuedAt(c.CreatedAt, h, now)
		out = append(out, c)
	}
	return topK(out, limit, candidateLess)
}

// candidateLess orders by priority, then queue time, then id.
func candidateLess(a, b Candidate) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if !a.queuedAt.Equal(b.queuedAt) {
		return a.queuedAt.Before(b.queuedAt)
	}
	return a.ID < b.ID
}

// HistoryView is an entry at a time, with when it may run again.
func (p Policy) HistoryView(h Entry, now time.Time) EntryJSON {
	e := p.Effective(h, now)
	j := e.JSON()
	if e.Status == HistFailed {
		next := p.NextEligible(e)
		if next.IsZero() {
			next = e.LastFailureAt
		}
		j.NextEligibleAt = timePtr(next)
	}
	if e.blocked() {
		j.Status = HistBlocked
	}
	return j
}

// Stats counts the queue's tasks: total seen, completed, failed, in backoff
// and currently ready, plus abandoned, blocked, working and pending. Completed, failed, abandoned, blocked, working and pending
// partition TotalSeen (each task counts under exactly one of them, the
// status QueueStatus gives it); InBackoff is a part of Failed, and
// CurrentlyReady the tasks next could claim now.
type Stats struct {
	TotalSeen      int `json:"total_seen"`
	Completed      int `json:"completed"`
	Failed         int `json:"failed"`
	InBackoff      int `json:"in_backoff"`
	Abandoned      int `json:"abandoned"`
	Blocked        int `json:"blocked"`
	Working        int `json:"working"`
	Pending        int `json:"pending"`
	CurrentlyReady int `json:"currently_ready"`
}

// QueueStatus is where a task stands in the queue at now, one of the
// history statuses: t is the tracker's task (nil for a bd/br bead), h its
// history (nil when never claimed). A closed task is completed however it
// closed; a failed one that reached max_failures is abandoned, as next
// treats it; one never claimed, released, retried or unblocked is pending.
func (p Policy) QueueStatus(t *Task, h *Entry, now time.Time) string {
	if t != nil && t.Status == StatusClosed {
		return HistCompleted
	}
	if h != nil {
		switch e := p.Effective(*h, now); {
		case e.blocked():
			return HistBlocked
		case e.Status == HistFailed && p.abandons(e):
			return HistAbandoned
		case e.Status != HistPending:
			return string(e.Status)
		}
	}
	if t != nil && t.HasLabel(BlockedLabel) {
		return HistBlocked
	}
	return HistPending
}

// Stats counts every task the queue has seen at now: with native, the
// tracker's tasks and every task with a history; otherwise the tasks with
// a history and those the source offers (offered). ready is the number of
// eligible candidates.
func (p Policy) Stats(s *State, native bool, offered []Candidate, ready int, now time.Time) Stats {
	var st Stats
	count := func(t *Task, h *Entry) { p.count(&st, t, h, now) }
	history := s.allHistory()
	if native {
		for id, t := range s.allTasks() {
			count(t, history[id])
		}
	}
	for id, h := range history {
		if !native || s.Task(id) == nil {
			count(nil, h)
		}
	}
	seen := map[string]bool{}
	for _, c := range offered {
		if history[c.ID] == nil && !seen[c.ID] {
			seen[c.ID] = true
			count(nil, nil)
		}
	}
	st.CurrentlyReady = ready
	return st
}

// count counts one task the queue has seen into st (Stats).
func (p Policy) count(st *Stats, t *Task, h *Entry, now time.Time) {
	st.TotalSeen++
	switch p.QueueStatus(t, h, now) {
	case HistCompleted:
		st.Completed++
	case HistAbandoned:
		st.Abandoned++
	case HistBlocked:
		st.Blocked++
	case HistWorking:
		st.Working++
	case HistFailed:
		st.Failed++
		if now.Before(p.NextEligible(p.Effective(*h, now))) {
			st.InBackoff++
		}
	default:
		st.Pending++
	}
}

func (p Policy) abandons(h Entry) bool {
	return p.Kind != Progressive && p.MaxFailures > 0 && h.Attempts >= p.MaxFailures
}

// Wakeup is the earliest time after now at which something in the history
// may become claimable: a backoff ending or a lease running out. Zero when
// nothing is waiting. A worker with nothing to do can sleep until then
// rather than poll (a polling loop spins when all ready work is in backoff).
func (p Policy) Wakeup(history iter.Seq[*Entry], now time.Time) (time.Time, string) {
	var at time.Time
	var id string
	for h := range history {
		var t time.Time
		switch e := p.Effective(*h, now); {
		case e.Status == HistWorking:
			t = e.LeaseUntil
		case e.Status == HistFailed && !e.Blocked && !p.abandons(e):
			t = p.NextEligible(e)
		}
		if t.After(now) && (at.IsZero() || t.Before(at) || t.Equal(at) && h.ID < id) {
			at, id = t, h.ID
		}
	}
	return at, id
}

// queuedAt is where a task stands in its priority: its creation time, or,
// under the progressive policy only, when an even failure requeued it.
// Exponential keeps the queue's order (priority, then creation time): a
// failure never moves a task back.
func (p Policy) queuedAt(created time.Time, h *Entry, now time.Time) time.Time {
	if p.Kind != Progressive || h == nil {
		return created
	}
	if e := p.Effective(*h, now); e.QueuedAt.After(created) {
		return e.QueuedAt
	}
	return created
}
