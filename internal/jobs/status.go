// Package jobs is the job scheduler's domain: jobs in three
// priority tiers, their strict lifecycle, segments, slots offered by
// workers, quotas with fair share, start_after, off-peak, reordering,
// recurring schedules, estimates and analytics. The worker that runs a
// job's argv is the edge (internal/jobs/service); nothing here does I/O.
package jobs

// Status is where a job is in its lifecycle. Only the transitions the
// lifecycle allows are applied (a complete job never runs again); any
// other is refused with an error that says why.
type Status string

const (
	Queued     Status = "queued"
	Scheduled  Status = "scheduled"
	Dispatched Status = "dispatched"
	Running    Status = "running"
	Paused     Status = "paused"
	Cancelled  Status = "cancelled"
	Failed     Status = "failed"
	Complete   Status = "complete"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{Scheduled, Queued, Dispatched, Running, Paused, Cancelled, Failed, Complete}

// transitions is the state machine (docs/jobs.md). Every change
// of status, by a command, a worker or the clock, is checked against it,
// in decide and again in the fold.
var transitions = map[Status][]Status{
	Scheduled:  {Queued, Cancelled},
	Queued:     {Dispatched, Paused, Cancelled},
	Dispatched: {Running, Queued, Paused, Cancelled, Failed},
	Running:    {Complete, Failed, Cancelled, Paused, Queued},
	Paused:     {Queued, Cancelled},
	Cancelled:  nil,
	Failed:     {Queued}, // job retry: it resumes at its first unfinished segment
	Complete:   nil,
}

// CanTransition reports whether the table allows from → to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Held statuses are those a worker holds the job in, under a lease
// (dispatched, running): the lease runs out (Job.leaseRunOut), a pause,
// a cancel or a yield is asked of the worker.
func (s Status) Held() bool { return s == Dispatched || s == Running }

// Terminal statuses end a job (a failed one until job retry puts it back).
func (s Status) Terminal() bool { return s == Cancelled || s == Failed || s == Complete }

// Tier is a priority tier; lower dispatches first.
type Tier string

const (
	Urgent     Tier = "urgent"
	Normal     Tier = "normal"
	Background Tier = "background"
)

// Tiers in dispatch order.
var Tiers = []Tier{Urgent, Normal, Background}

// Rank is the tier's place in dispatch order.
func (t Tier) Rank() int {
	switch t {
	case Urgent:
		return 0
	case Normal:
		return 1
	}
	return 2
}

// Valid reports whether t is a tier.
func (t Tier) Valid() bool { return t == Urgent || t == Normal || t == Background }
