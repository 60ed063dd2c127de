package workqueue

import (
	"time"
)

// Claimable is what next could claim now, in the order it would claim
// them: the ready tasks (f) that the gate admits and whose history holds
// nothing back (backoff, abandoned, blocked, completed); at most limit of
// them when limit > 0. This is spool ready's list, the board's Ready
// column and stats' currently_ready: one meaning of "ready" everywhere
// (bd ready, which lists tasks in backoff too, is State.Ready).
func (s *State) Claimable(p Policy, g Gate, f ReadyFilter, now time.Time, limit int) []*Task {
	keep := func(t *Task) bool {
		c := Candidate{ID: t.ID, Priority: t.Priority, IssueType: t.Type, Labels: t.Labels, CreatedAt: t.CreatedAt}
		return p.Skip(c, s.Entry(t.ID), g, now) == ""
	}
	if p.Kind != Progressive {
		return s.readyBy(p, f, now, keep, taskLess, nil, g, limit)
	}
	// A requeue moves a task back to its requeue time, so the creation
	// order readyBy walks in does not bound next's: order them all.
	ts := s.readyBy(p, f, now, keep, taskLess, nil, g, Unsorted)
	queued := make(map[*Task]time.Time, len(ts))
	for _, t := range ts {
		queued[t] = p.queuedAt(t.CreatedAt, s.Entry(t.ID), now)
	}
	return topK(ts, limit, func(a, b *Task) bool {
		return candidateLess(Candidate{ID: a.ID, Priority: a.Priority, queuedAt: queued[a]},
			Candidate{ID: b.ID, Priority: b.Priority, queuedAt: queued[b]})
	})
}
