package workqueue

import (
	"iter"
	"maps"
	"time"
)

// What decisions read. A decision takes the narrowest of these that
// serves it, so that it cannot reach the maps the fold writes: only the
// fold (Apply) changes a State. *State is the one implementation.
var (
	_ Tracker = (*State)(nil)
	_ History = (*State)(nil)
)

// Tracker is what a decision about tasks reads: a task by id, whether one
// exists, and the walks of their relations (parent, blockers, links).
type Tracker interface {
	Task(id string) *Task
	HasTask(id string) bool
	reaches(from, to string) bool    // from waits for to, through blockers and parents
	reachesAny(from, to string) bool // the same through any dependency type
	descends(id, ancestor string) bool
}

// History is what a decision about claims reads: an entry by id, and the
// live claims with their leases' ends.
type History interface {
	Entry(id string) *Entry
	Claims() iter.Seq2[string, time.Time]
}

// taskOf is the task with this id, or the error that names it missing.
func taskOf(s Tracker, id string) (*Task, error) {
	t := s.Task(id)
	if t == nil {
		return nil, NoTask(id)
	}
	return t, nil
}

// Claims yields every entry that holds a claim, with its lease's end. The
// snapshot's index has both: next looks at every claim to expire those run
// out, and a busy queue holds hundreds.
func (s *State) Claims() iter.Seq2[string, time.Time] {
	return func(yield func(string, time.Time) bool) {
		for id, h := range s.hst.m {
			if h.Status == HistWorking && !yield(id, h.LeaseUntil) {
				return
			}
		}
		if t := s.hst.table; t != nil {
			for k, i := range t.waiting {
				if id := t.IDs[i]; t.working[k] && s.hst.m[id] == nil && !yield(id, t.leases[k]) {
					return
				}
			}
		}
	}
}

// Waiting yields every entry that holds a claim or failed (a lease or a
// backoff to run out; Policy.Wakeup), with others: the entries decoded or
// changed since the snapshot, whatever their status, and those the
// snapshot recorded as waiting.
func (s *State) Waiting() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for _, h := range s.hst.m {
			if !yield(h) {
				return
			}
		}
		if t := s.hst.table; t != nil {
			for _, i := range t.waiting {
				if id := t.IDs[i]; s.hst.m[id] == nil && !yield(s.Entry(id)) { // unchanged since the snapshot
					return
				}
			}
		}
	}
}

// Tasks yields every task, decoding those a snapshot still holds, in no
// order.
func (s *State) Tasks() iter.Seq[*Task] { return maps.Values(s.allTasks()) }

// Entries yields every task's history, as Tasks does.
func (s *State) Entries() iter.Seq[*Entry] { return maps.Values(s.allHistory()) }
