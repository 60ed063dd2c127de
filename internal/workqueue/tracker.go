package workqueue

import (
	"slices"
	"sort"
	"time"
)

// EffectiveStatus is the tracker status at now: a task whose claim's lease
// ran out is open again (the queue counts the lost attempt).
func (s *State) EffectiveStatus(t *Task, p Policy, now time.Time) string {
	if t.Status == StatusInProgress && !t.LeaseUntil.IsZero() && !now.Before(t.LeaseUntil) {
		return StatusOpen
	}
	return t.Status
}

// blockedBy reports whether t waits: an open blocker, the blocked label, or
// a parent that waits. memo holds the answers for parents already walked.
func (s *State) blockedBy(t *Task, memo map[string]bool, depth int) bool {
	if t.HasLabel(BlockedLabel) {
		return true
	}
	for _, d := range t.Blockers {
		if b := s.Tasks[d.ID]; b != nil && b.Status != StatusClosed {
			return true
		}
	}
	if t.Parent == "" || depth >= 64 {
		return false
	}
	if v, ok := memo[t.Parent]; ok {
		return v
	}
	p := s.Tasks[t.Parent]
	v := p != nil && s.blockedBy(p, memo, depth+1)
	memo[t.Parent] = v
	return v
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
// the blocked label, by priority then creation time (beads' bd ready); at
// most limit of them when limit > 0.
func (s *State) Ready(p Policy, f ReadyFilter, now time.Time, limit int) []*Task {
	memo := map[string]bool{}
	var out []*Task
	for _, t := range s.Tasks {
		if t.Status != StatusOpen && s.EffectiveStatus(t, p, now) != StatusOpen || !f.admits(t) {
			continue
		}
		if limit > 0 && len(out) == limit && !taskLess(t, out[limit-1]) {
			continue // would not make the first limit: skip the blocker walk
		}
		if s.blockedBy(t, memo, 0) {
			continue
		}
		if limit > 0 {
			out = insertTop(out, t, limit, taskLess)
		} else {
			out = append(out, t)
		}
	}
	return topK(out, limit, taskLess)
}

// insertTop inserts it into top, kept sorted and at most k long.
func insertTop[T any](top []T, it T, k int, less func(a, b T) bool) []T {
	if len(top) == k && !less(it, top[k-1]) {
		return top
	}
	i := sort.Search(len(top), func(i int) bool { return less(it, top[i]) })
	top = slices.Insert(top, i, it)
	if len(top) > k {
		top = top[:k]
	}
	return top
}

// Unsorted asks Ready and Select for every item, in no order (for counting
// and for picking the minimum afterwards).
const Unsorted = -1

// topK sorts items, or when 0 < k < len(items) returns only the first k in
// order, which costs O(n·k) rather than a full sort.
func topK[T any](items []T, k int, less func(a, b T) bool) []T {
	if k == Unsorted {
		return items
	}
	if k <= 0 || k >= len(items) {
		sort.Slice(items, func(i, j int) bool { return less(items[i], items[j]) })
		return items
	}
	top := make([]T, 0, k+1)
	for _, it := range items {
		top = insertTop(top, it, k, less)
	}
	return top
}

// taskLess orders by priority, then creation time, then id.
func taskLess(a, b *Task) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

func sortTasks(ts []*Task) {
	sort.Slice(ts, func(i, j int) bool { return taskLess(ts[i], ts[j]) })
}

// Candidates turns ready tasks into queue candidates.
func Candidates(ts []*Task) []Candidate {
	out := make([]Candidate, len(ts))
	for i, t := range ts {
		out[i] = Candidate{ID: t.ID, Title: t.Title, Priority: t.Priority, IssueType: t.Type, Labels: t.Labels, CreatedAt: t.CreatedAt}
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

// Dependents returns, sorted, the tasks that wait for id and its children.
func (s *State) Dependents(id string) (blocks, children []string) {
	for _, t := range s.Tasks {
		if t.Parent == id {
			children = append(children, t.ID)
		}
		for _, d := range t.Blockers {
			if d.ID == id {
				blocks = append(blocks, t.ID)
				break
			}
		}
	}
	sort.Strings(blocks)
	sort.Strings(children)
	return blocks, children
}
