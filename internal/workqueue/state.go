package workqueue

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// Task is one task of the embedded tracker.
type Task struct {
	ID          string
	Title       string
	Description string
	Status      string
	Priority    int
	Type        string
	Labels      []string // sorted, unique
	Assignee    string
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time
	CloseReason string
	Parent      string
	Blockers    []Dep // sorted by ID
	Comments    []Comment
	rawComments string // comments still encoded as the snapshot holds them
}

// Dep is a "blocks" dependency: the task waits for Blocker to close.
type Dep struct {
	ID string
	At time.Time
	By string
}

// Comment is a note on a task.
type Comment struct {
	Author string
	Text   string
	At     time.Time
}

// HasLabel reports whether the task carries label l.
func (t *Task) HasLabel(l string) bool {
	_, ok := slices.BinarySearch(t.Labels, l)
	return ok
}

// Entry is the queue's history of one task (seed 001's BeadHistory), for
// native tasks and for tasks of an external source alike.
type Entry struct {
	ID            string
	Status        string // Hist*
	Attempts      int    // claims, reset by retry and unblock --reset-attempts
	Failures      int    // failed attempts (progressive policy's counter)
	LastAttempt   time.Time
	LastFailureAt time.Time
	LastError     string
	Worker        string
	Actor         string // who claimed: only they may finish the attempt
	LeaseUntil    time.Time
	QueuedAt      time.Time // set when the progressive policy requeues
	Priority      int       // priority at the claim, lowered by demotion
	Blocked       bool
}

// State is the projection: the tracker's tasks and the queue's history.
type State struct {
	Tasks   map[string]*Task
	History map[string]*Entry
}

// Name is the projection's name.
const Name = "tasks"

// Spec registers the projection. Its state grows with the number of tasks, so
// saves are amortized (see projections.Spec.Amortize).
var Spec = projections.Spec{Name: Name, Version: 1, Amortize: 200, New: func() projections.Projection { return NewState() }}

// NewState returns an empty state.
func NewState() *State {
	return &State{Tasks: map[string]*Task{}, History: map[string]*Entry{}}
}

func (s *State) entry(id string) *Entry {
	h := s.History[id]
	if h == nil {
		h = &Entry{ID: id, Status: HistPending}
		s.History[id] = h
	}
	return h
}

// Apply folds one event. Unknown types and unusable data are skipped.
func (s *State) Apply(e *eventlog.Event) error {
	id := e.Subject
	if id == "" || len(e.Type) < 5 || e.Type[:5] != "task." {
		return nil
	}
	t := s.Tasks[id]
	switch e.Type {
	case TypeCreated:
		var d CreatedData
		if t != nil || json.Unmarshal(e.Data, &d) != nil {
			return nil // a duplicate id or bad data: the first create wins
		}
		t = &Task{ID: id, Title: d.Title, Description: d.Description, Status: StatusOpen, Priority: d.Priority,
			Type: d.IssueType, Labels: normLabels(d.Labels), CreatedBy: e.Actor, CreatedAt: e.At, UpdatedAt: e.At, Parent: d.Parent}
		for _, b := range d.Deps {
			t.addBlocker(Dep{ID: b, At: e.At, By: e.Actor})
		}
		s.Tasks[id] = t
		return nil
	case TypeUpdated:
		var d UpdatedData
		if t == nil || json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		if d.Title != nil {
			t.Title = *d.Title
		}
		if d.Description != nil {
			t.Description = *d.Description
		}
		if d.Priority != nil {
			t.Priority = *d.Priority
		}
		if d.Status != nil {
			t.setStatus(*d.Status, e.At, "")
		}
		t.Labels = normLabels(append(t.Labels, d.AddLabels...))
		t.Labels = slices.DeleteFunc(t.Labels, func(l string) bool { return slices.Contains(d.RemoveLabels, l) })
		t.UpdatedAt = e.At
	case TypeClosed:
		var d ClosedData
		if t == nil || json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		t.setStatus(StatusClosed, e.At, d.Reason)
		t.UpdatedAt = e.At
		if h := s.History[id]; h != nil && h.Status == HistWorking {
			h.release(HistPending) // closed under a worker: the claim ends
		}
	case TypeReopened:
		if t == nil {
			return nil
		}
		t.setStatus(StatusOpen, e.At, "")
		t.UpdatedAt = e.At
		if h := s.History[id]; h != nil && h.Status == HistCompleted {
			h.Status = HistPending
		}
	case TypeDepAdded, TypeDepRemoved:
		var d DepData
		if t == nil || json.Unmarshal(e.Data, &d) != nil || d.Blocker == "" {
			return nil
		}
		if e.Type == TypeDepAdded {
			t.addBlocker(Dep{ID: d.Blocker, At: e.At, By: e.Actor})
		} else {
			t.Blockers = slices.DeleteFunc(t.Blockers, func(b Dep) bool { return b.ID == d.Blocker })
		}
		t.UpdatedAt = e.At
	case TypeCommented:
		var d CommentData
		if t == nil || json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		t.Comments = append(t.loadComments(), Comment{Author: e.Actor, Text: d.Text, At: e.At})
		t.UpdatedAt = e.At
	default:
		return s.applyQueue(e, t)
	}
	return nil
}

func (s *State) applyQueue(e *eventlog.Event, t *Task) error {
	id := e.Subject
	switch e.Type {
	case TypeClaimed:
		var d ClaimedData
		if json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		h := s.entry(id)
		h.Status, h.Attempts, h.LastAttempt = HistWorking, d.Attempt, e.At
		h.Worker, h.Actor, h.LeaseUntil, h.Priority = d.Worker, e.Actor, d.LeaseUntil, d.Priority
		if t != nil {
			t.Status, t.Assignee, t.UpdatedAt = StatusInProgress, d.Worker, e.At
		}
	case TypeHeartbeat:
		var d HeartbeatData
		if h := s.History[id]; h != nil && h.Status == HistWorking && json.Unmarshal(e.Data, &d) == nil {
			h.LeaseUntil = d.LeaseUntil
		}
	case TypeSucceeded:
		h := s.entry(id)
		h.release(HistCompleted)
		h.LastError = ""
		if t != nil && t.Status == StatusInProgress {
			t.Status, t.UpdatedAt = StatusOpen, e.At // task.closed follows for native tasks
		}
	case TypeFailed, TypeLeaseExpired:
		h := s.entry(id)
		at, msg := e.At, ""
		if e.Type == TypeFailed {
			var d FailedData
			if json.Unmarshal(e.Data, &d) != nil {
				return nil
			}
			msg = d.Error
		} else {
			var d LeaseExpiredData
			if json.Unmarshal(e.Data, &d) != nil {
				return nil
			}
			at, msg = d.LeaseUntil, LeaseExpiredError
		}
		h.release(HistFailed)
		h.Failures++
		h.LastFailureAt, h.LastError = at, msg
		if h.Failures%2 == 0 {
			h.QueuedAt = at // progressive: even attempts go to the back of the queue
		}
		if t != nil {
			t.unassign(e.At)
		}
	case TypeDemoted:
		var d DemotedData
		if json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		s.entry(id).Priority = d.To
		if t != nil {
			t.Priority, t.UpdatedAt = d.To, e.At
		}
	case TypeAbandoned:
		s.entry(id).release(HistAbandoned)
		if t != nil {
			t.unassign(e.At)
		}
	case TypeBlocked:
		var d BlockedData
		if json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		h := s.entry(id)
		h.release(HistBlocked)
		h.Blocked = true
		if t != nil {
			t.unassign(e.At)
			t.Labels = normLabels(append(t.Labels, BlockedLabel))
		}
	case TypeUnblocked, TypeRetried:
		var reset bool
		if e.Type == TypeUnblocked {
			var d UnblockedData
			if json.Unmarshal(e.Data, &d) != nil {
				return nil
			}
			reset = d.ResetAttempts
		} else {
			reset = true
		}
		h := s.entry(id)
		h.release(HistPending)
		h.Blocked = false
		if reset {
			h.Attempts, h.Failures, h.LastError = 0, 0, ""
			h.LastFailureAt, h.QueuedAt = time.Time{}, time.Time{}
		}
		if t != nil {
			t.Labels = slices.DeleteFunc(t.Labels, func(l string) bool { return l == BlockedLabel })
			t.UpdatedAt = e.At
		}
	}
	return nil
}

// LeaseExpiredError is the last_error of an attempt whose lease ran out.
const LeaseExpiredError = "lease expired"

func (h *Entry) release(status string) {
	h.Status, h.Worker, h.Actor, h.LeaseUntil = status, "", "", time.Time{}
}

func (t *Task) unassign(at time.Time) {
	if t.Status == StatusInProgress {
		t.Status = StatusOpen
	}
	t.Assignee, t.UpdatedAt = "", at
}

func (t *Task) setStatus(status string, at time.Time, reason string) {
	t.Status = status
	if status == StatusClosed {
		t.ClosedAt, t.CloseReason = at, reason
	} else {
		t.ClosedAt, t.CloseReason = time.Time{}, ""
	}
	if status != StatusInProgress {
		t.Assignee = ""
	}
}

func (t *Task) addBlocker(d Dep) {
	i, found := slices.BinarySearchFunc(t.Blockers, d.ID, func(a Dep, id string) int { return cmpString(a.ID, id) })
	if !found && d.ID != t.ID {
		t.Blockers = slices.Insert(t.Blockers, i, d)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func normLabels(labels []string) []string {
	out := slices.Clone(labels)
	sort.Strings(out)
	out = slices.Compact(out)
	out = slices.DeleteFunc(out, func(l string) bool { return l == "" })
	if len(out) == 0 {
		return nil
	}
	return out
}

// SortedIDs returns the task ids in order.
func (s *State) SortedIDs() []string {
	ids := make([]string, 0, len(s.Tasks))
	for id := range s.Tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Files renders tasks.json (beads' shape, by id) and history.json.
func (s *State) Files() ([]projections.File, error) {
	ids := s.SortedIDs()
	tasks := make([]TaskJSON, 0, len(ids))
	for _, id := range ids {
		tasks = append(tasks, s.Tasks[id].JSON(false))
	}
	hids := make([]string, 0, len(s.History))
	for id := range s.History {
		hids = append(hids, id)
	}
	sort.Strings(hids)
	hist := make([]EntryJSON, 0, len(hids))
	for _, id := range hids {
		hist = append(hist, s.History[id].JSON())
	}
	tb, err := marshalIndent(tasks)
	if err != nil {
		return nil, err
	}
	hb, err := marshalIndent(hist)
	if err != nil {
		return nil, err
	}
	return []projections.File{
		{Path: ".spool/state/tasks.json", Data: tb},
		{Path: ".spool/state/history.json", Data: hb},
	}, nil
}

func marshalIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
