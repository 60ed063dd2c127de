package workqueue

import (
	"slices"
	"sort"
	"time"
)

// EffectiveStatus is the tracker status at now: a task whose claim's lease
// ran out is open again.
func (s *State) EffectiveStatus(t *Task, p Policy, now time.Time) string {
	if t.Status == StatusInProgress {
		if h := s.History[t.ID]; h != nil && h.Status == HistWorking {
			if e := p.Effective(*h, now); e.Status != HistWorking {
				return StatusOpen
			}
		}
	}
	return t.Status
}

// blockedBy reports whether t waits: an open blocker, the blocked label, or
// a parent that waits. memo holds answers already known.
func (s *State) blockedBy(t *Task, memo map[string]bool, depth int) bool {
	if v, ok := memo[t.ID]; ok {
		return v
	}
	blocked := t.HasLabel(BlockedLabel)
	for _, d := range t.Blockers {
		if b := s.Tasks[d.ID]; !blocked && b != nil && b.Status != StatusClosed {
			blocked = true
		}
	}
	if !blocked && t.Parent != "" && depth < 64 {
		if p := s.Tasks[t.Parent]; p != nil {
			blocked = s.blockedBy(p, memo, depth+1)
		}
	}
	memo[t.ID] = blocked
	return blocked
}

// ReadyFilter narrows spool ready: every label in All, at least one in Any.
type ReadyFilter struct {
	All []string
	Any []string
}

func (f ReadyFilter) admits(t *Task) bool {
	for _, l := range f.All {
		if !t.HasLabel(l) {
			return false
		}
	}
	if len(f.Any) == 0 {
		return true
	}
	for _, l := range f.Any {
		if t.HasLabel(l) {
			return true
		}
	}
	return false
}

// Ready lists open tasks with no open blocker and no blocked parent, without
// the blocked label, by priority then creation time (beads' bd ready).
func (s *State) Ready(p Policy, f ReadyFilter, now time.Time) []*Task {
	memo := make(map[string]bool, 64)
	var out []*Task
	for _, t := range s.Tasks {
		if s.EffectiveStatus(t, p, now) != StatusOpen || !f.admits(t) || s.blockedBy(t, memo, 0) {
			continue
		}
		out = append(out, t)
	}
	sortTasks(out)
	return out
}

func sortTasks(ts []*Task) {
	sort.Slice(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
}

// Candidates turns ready tasks into queue candidates.
func Candidates(ts []*Task) []Candidate {
	out := make([]Candidate, len(ts))
	for i, t := range ts {
		out[i] = Candidate{ID: t.ID, Title: t.Title, Description: t.Description, Priority: t.Priority, IssueType: t.Type, Labels: t.Labels, CreatedAt: t.CreatedAt}
	}
	return out
}

// ListFilter narrows spool task list; zero fields match everything.
type ListFilter struct {
	Status   string
	Label    string
	Priority *int
}

// List returns the matching tasks by priority then creation time.
func (s *State) List(p Policy, f ListFilter, now time.Time) []*Task {
	var out []*Task
	for _, t := range s.Tasks {
		if f.Status != "" && s.EffectiveStatus(t, p, now) != f.Status ||
			f.Label != "" && !t.HasLabel(f.Label) ||
			f.Priority != nil && t.Priority != *f.Priority {
			continue
		}
		out = append(out, t)
	}
	sortTasks(out)
	return out
}

// reaches reports whether from waits, directly or not, on to (through
// blockers and parents).
func (s *State) reaches(from, to string) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == to {
			return true
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		t := s.Tasks[id]
		if t == nil {
			continue
		}
		for _, d := range t.Blockers {
			stack = append(stack, d.ID)
		}
		if t.Parent != "" {
			stack = append(stack, t.Parent)
		}
	}
	return false
}

// View renders a task at now (its effective status).
func (s *State) View(t *Task, p Policy, now time.Time, comments bool) TaskJSON {
	j := t.JSON(comments)
	if st := s.EffectiveStatus(t, p, now); st != t.Status {
		j.Status, j.Assignee = st, ""
	}
	if j.Labels != nil {
		j.Labels = slices.Clone(j.Labels)
	}
	return j
}
