package workqueue

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// Claiming a named task, giving a claim back, and setting a task's status
// the way beads clients do (bd update --status): each status maps onto the
// queue's own events, so that the queue's rules hold whichever front end
// changed the task.

// StatusBlocked is beads' blocked status; spool keeps it as the blocked label.
const StatusBlocked = "blocked"

// ClaimTask claims task id for worker, as next would but by name: blockers
// and backoff are next's business, not a claim's. It refuses a closed task
// and one someone else holds. A live claim that is the actor's (claimed by
// them, or for them) is left as it is when it is for the same worker (no
// events), and refused for another one: release it first. Expired leases
// are recorded first, as next does, and the rest is decided on the state
// after them. A Blocked task is unblocked by the claim (beads' blocked →
// in_progress).
func ClaimTask(s *State, p Policy, id, worker, actor string, now time.Time) ([]eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return nil, err
	}
	if t.Status == StatusClosed {
		return nil, invalidTransition(id, "is closed; reopen it first")
	}
	drafts := Expire(s, p, now)
	over, err := Overlay(s, drafts, actor, now)
	if err != nil {
		return nil, err
	}
	view := layered{s, over}
	h := view.entry(id)
	if h != nil && h.Status == HistWorking {
		until := h.LeaseUntil.Format(time.RFC3339)
		switch {
		case h.Actor != actor && h.Worker != actor:
			return nil, fault.New(CodeAlreadyClaimed, fault.ErrConflict,
				fmt.Sprintf("task %s is claimed by %s until %s", id, h.Actor, until), "id", id, "claimant", h.Actor)
		case h.Worker != worker:
			return nil, fault.New(CodeAlreadyClaimed, fault.ErrConflict,
				fmt.Sprintf("task %s is claimed for %s until %s; release it before claiming it for %s", id, h.Worker, until, worker),
				"id", id, "claimant", h.Actor, "worker", h.Worker)
		}
		return nil, nil
	}
	if view.isBlocked(id) {
		drafts = append(drafts, eventlog.Draft{Type: TypeUnblocked, Subject: id, Data: UnblockedData{}})
	}
	attempt := 1
	if h != nil {
		attempt = h.Attempts + 1
	}
	return append(drafts, eventlog.Draft{Type: TypeClaimed, Subject: id, Data: ClaimedData{Attempt: attempt, Worker: worker,
		LeaseUntil: now.Add(p.Lease), Priority: view.task(id).Priority, Source: SourceNative}}), nil
}

// Release gives a claim the actor holds back, with no result: the task is
// open again and the attempt is not counted as a failure.
func Release(s *State, p Policy, id, actor string, now time.Time) (eventlog.Draft, error) {
	h, err := held(s, id, actor, now)
	if err != nil {
		return eventlog.Draft{}, err
	}
	return eventlog.Draft{Type: TypeReleased, Subject: id, Data: AttemptData{Attempt: h.Attempts}}, nil
}

// Finish closes a task: a success of the actor's live claim (task.succeeded
// and task.closed, as done records it), or a plain close. A closed task is
// left as it is (no events), as bd close leaves it.
func Finish(s *State, p Policy, id, actor, reason string, now time.Time) ([]eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return nil, err
	}
	if t.Status == StatusClosed {
		return nil, nil
	}
	if _, err := held(s, id, actor, now); err == nil {
		return Done(s, p, id, actor, reason, now)
	}
	if err := MayClose(s, id, actor, false, now); err != nil {
		return nil, err
	}
	return CloseTasks(s, []string{id}, reason)
}

// SetStatus moves a task to a beads status: in_progress claims it for
// worker, blocked blocks it, closed finishes it, open undoes whichever of
// those holds (reopen, unblock, release), deferred defers it. A task that
// is in_progress with no live claim (imported so) is taken as open.
func SetStatus(s *State, p Policy, id, to, worker, actor, reason string, now time.Time) ([]eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return nil, err
	}
	status := s.EffectiveStatus(t, now)
	claimed := status == StatusInProgress && s.claimed(id, p, now)
	unclaimed := status == StatusInProgress && !claimed // in_progress as an import had it
	one := func(d eventlog.Draft, err error) ([]eventlog.Draft, error) {
		if err != nil {
			return nil, err
		}
		return []eventlog.Draft{d}, nil
	}
	switch to {
	case StatusInProgress:
		return ClaimTask(s, p, id, worker, actor, now)
	case StatusClosed:
		return Finish(s, p, id, actor, reason, now)
	case StatusBlocked:
		if s.isBlocked(id) {
			return nil, nil
		}
		if status == StatusClosed {
			return nil, invalidTransition(id, "is closed; reopen it first")
		}
		if reason == "" {
			reason = "set blocked"
		}
		var drafts []eventlog.Draft
		if claimed {
			r, err := Release(s, p, id, actor, now)
			if err != nil {
				return nil, err
			}
			drafts = append(drafts, r)
		}
		d := BlockedData{TaskID: id, Reason: reason}
		if h := s.Entry(id); h != nil {
			d.TotalAttempts, d.LastFailureReason = h.Failures, h.LastError
		}
		return append(drafts, eventlog.Draft{Type: TypeBlocked, Subject: id, Data: d}), nil
	case StatusOpen:
		switch {
		case status == StatusClosed:
			return one(Reopen(s, id))
		case claimed:
			return one(Release(s, p, id, actor, now))
		}
		var drafts []eventlog.Draft
		if unclaimed || status == StatusDeferred {
			open := StatusOpen
			drafts = append(drafts, eventlog.Draft{Type: TypeUpdated, Subject: id, Data: UpdatedData{Status: &open}})
		}
		if s.isBlocked(id) {
			d, err := Unblock(s, id, false)
			if err != nil {
				return nil, err
			}
			drafts = append(drafts, d)
		}
		return drafts, nil
	case StatusDeferred:
		switch {
		case status == StatusDeferred:
			return nil, nil
		case claimed:
			return nil, invalidTransition(id, "is claimed; finish or release it first")
		case status == StatusClosed:
			return nil, invalidTransition(id, "is closed; reopen it first")
		}
		deferred := StatusDeferred
		return []eventlog.Draft{{Type: TypeUpdated, Subject: id, Data: UpdatedData{Status: &deferred}}}, nil
	}
	return nil, fault.New(CodeInvalidStatus, nil,
		fmt.Sprintf("status must be one of %s, got %q", strings.Join(BeadsStatuses, ", "), to), "status", to)
}

// claimed reports whether id has a live claim.
func (s *State) claimed(id string, p Policy, now time.Time) bool {
	h := s.Entry(id)
	return h != nil && h.leaseHeld(now)
}
