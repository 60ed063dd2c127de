package workqueue

import (
	"iter"
	"slices"
	"sort"
	"time"
)

// EffectiveStatus is the tracker status at now: a task whose claim's lease
// ran out is open again (the queue counts the lost attempt).
func (s *State) EffectiveStatus(t *Task, now time.Time) string {
	if t.leaseExpired(now) {
		return StatusOpen
	}
	return t.Status
}

// blockedBy reports whether t waits: by itself (waitsItself: the blocked
// label, a blocker not closed), or through a parent that waits. memo holds
// the answers for parents already walked.
func (s *State) blockedBy(t *Task, memo map[string]bool, depth int) bool {
	if waitsItself(t, s) {
		return true
	}
	if t.Parent == "" || depth >= 64 {
		return false
	}
	if v, ok := memo[t.Parent]; ok {
		return v
	}
	p := s.Task(t.Parent)
	v := p != nil && s.blockedBy(p, memo, depth+1)
	memo[t.Parent] = v
	return v
}

// Waits says what t waits for: its blockers not closed, by id, or, when it
// has none, its parent when the parent waits (parent is "" otherwise).
func (s *State) Waits(t *Task) (blockers []string, parent string) {
	for _, d := range t.Blockers {
		if s.notClosed(d.ID) {
			blockers = append(blockers, d.ID)
		}
	}
	if len(blockers) == 0 && t.Parent != "" {
		if p := s.Task(t.Parent); p != nil && s.blockedBy(p, map[string]bool{}, 1) {
			parent = p.ID
		}
	}
	return blockers, parent
}

// ReadyFilter narrows spool ready: every label in All, at least one in Any.
// Claimed lets claimed tasks in as well (bd ready lists in_progress work);
// Unassigned keeps only tasks nobody is assigned.
type ReadyFilter struct {
	All        []string
	Any        []string
	Claimed    bool
	Unassigned bool
}

func (f ReadyFilter) Admits(t *Task) bool {
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
	return s.readyBy(p, f, now, nil, taskLess, nil, Gate{}, limit)
}

// readyBy is Ready for the tasks keep admits (all when nil), in the order
// of less, given order: the snapshot's open tasks (positions in
// taskTable.open) in that order, nil for ready's own (taskLess). g is
// the gate keep applies (Gate{}: none): of the snapshot's tasks unchanged
// since, only those g and f admit are read (State.admitted).
func (s *State) readyBy(p Policy, f ReadyFilter, now time.Time, keep func(*Task) bool, less func(a, b *Task) bool, order func(*taskTable) iter.Seq[int], g Gate, limit int) []*Task {
	if limit <= 0 && s.trk.lazy != nil {
		s.trk.table().Preload() // most tasks: one read rather than one each
	}
	memo := map[string]bool{}
	var out []*Task
	s.openOrderBy(nil, order, s.admitted(g, f), func(t *Task) bool {
		if limit > 0 && len(out) == limit && !less(t, out[limit-1]) {
			return false // would not make the first limit
		}
		st := s.EffectiveStatus(t, now)
		if st != StatusOpen && !(f.Claimed && st == StatusInProgress) || !f.Admits(t) ||
			f.Unassigned && st == t.Status && t.Detail().Assignee != "" { // an expired claim's assignee is gone
			return true
		}
		if s.blockedBy(t, memo, 0) || keep != nil && !keep(t) {
			return true
		}
		if limit > 0 {
			out = insertTop(out, t, limit, less)
		} else {
			out = append(out, t)
		}
		return true
	})
	return topK(out, limit, less)
}

// ReadyBeads is Ready for bd ready: the tasks keep admits, in the order of
// one of its sort policies (BeadsOrder), the first limit of them when
// limit > 0. The snapshot's open tasks are walked in that order (by their
// creation times in its index) and only until the first limit are found.
func (s *State) ReadyBeads(p Policy, f ReadyFilter, now time.Time, keep func(*Task) bool, policy string, limit int) ([]*Task, error) {
	less, err := beadsLess(policy, now)
	if err != nil {
		return nil, err
	}
	return s.readyBy(p, f, now, keep, less, beadsOrder(policy, now), Gate{}, limit), nil
}

// beadsOrder walks a table's open tasks in the order of bd ready's sort
// policy (nil: ready's own, policy priority), by their creation times in
// its index.
func beadsOrder(policy string, now time.Time) func(*taskTable) iter.Seq[int] {
	switch policy {
	case "oldest":
		return func(t *taskTable) iter.Seq[int] { return t.byAge(func(int) bool { return true }) }
	case "hybrid", "":
		cut := now.Add(-48 * time.Hour).UnixNano()
		return func(t *taskTable) iter.Seq[int] {
			return func(yield func(int) bool) {
				for k := range t.open { // recent ones by priority: ready's order
					if t.createdAt(k) >= cut && !yield(k) {
						return
					}
				}
				for k := range t.byAge(func(k int) bool { return t.createdAt(k) < cut }) {
					if !yield(k) {
						return
					}
				}
			}
		}
	}
	return nil
}

// byAge yields the open tasks that in admits by creation time, then id;
// sorted as they are taken (a heap), since a walk that finds its first few
// stops early.
func (t *taskTable) byAge(in func(k int) bool) iter.Seq[int] {
	return func(yield func(int) bool) {
		type item struct {
			at int64
			k  int
		}
		h := make([]item, 0, len(t.open))
		for k := range t.open {
			if in(k) {
				h = append(h, item{t.createdAt(k), k})
			}
		}
		less := func(a, b item) bool {
			if a.at != b.at {
				return a.at < b.at
			}
			return t.IDs[t.open[a.k]] < t.IDs[t.open[b.k]]
		}
		down := func(i, n int) {
			for {
				c := 2*i + 1
				if c >= n {
					return
				}
				if c+1 < n && less(h[c+1], h[c]) {
					c++
				}
				if !less(h[c], h[i]) {
					return
				}
				h[i], h[c] = h[c], h[i]
				i = c
			}
		}
		for i := len(h)/2 - 1; i >= 0; i-- {
			down(i, len(h))
		}
		for n := len(h); n > 0; n-- {
			if !yield(h[0].k) {
				return
			}
			h[0] = h[n-1]
			down(0, n-1)
		}
	}
}

// openOrderBy calls f with every task that may be open and not blocked.
// First come the snapshot's tasks that were not closed and are unchanged
// since, in order (nil: ready's own, taskLess), for as long as f returns
// true, less those still blocked for certain and those admits does not
// hold (nil: none left out; by their place in ready's order,
// lazyTasks.admits); then, whatever f returns, the tasks decoded or
// changed since and those in over (which stand for tasks of the same id),
// in no order.
func (s *State) openOrderBy(over map[string]*Task, order func(*taskTable) iter.Seq[int], admits *admitter, f func(*Task) bool) {
	rest := make([]*Task, 0, len(s.trk.m)+len(over))
	skip := make(map[string]bool, len(s.trk.m)+len(over))
	for id, t := range s.trk.m {
		if over[id] == nil {
			rest = append(rest, t)
			skip[id] = true
		}
	}
	for id, t := range over {
		rest = append(rest, t)
		skip[id] = true
	}
	if s.trk.lazy != nil {
		// A task that waited by itself when saved and is unchanged since
		// still waits unless one of its blockers was closed since; those
		// tasks name it (baseRefs), and only they are read. Both sets are
		// kept by position, so that a task passed over is not even named.
		positions := func(ids map[string]bool) map[int]bool {
			at := make(map[int]bool, len(ids))
			for id := range ids {
				if i := s.position(id); i >= 0 {
					at[i] = true
				}
			}
			return at
		}
		skipAt := positions(skip)
		var namedAt map[int]bool
		for o := range s.trk.openTasks(order) {
			i := o.pos
			if skipAt[i] || admits != nil && !admits.has(o.k) {
				continue // changed since: in rest; not admitted: as saved, unread
			}
			if o.waits {
				if namedAt == nil {
					namedAt = positions(s.namedByClosing(over, false))
				}
				if !namedAt[i] {
					continue
				}
			}
			if !f(s.taskAt(i)) {
				break
			}
		}
	}
	for _, t := range rest {
		f(t)
	}
}

// namedByClosing returns the ids of the tasks that, when the snapshot was
// written, named a task that was not closed then and is closed now (in
// over, or else decoded or changed since), or with reopened, one closed
// then and not now: the tasks whose wait by themselves (waitsItself) may
// have ended, or whose being ready by themselves (plainReady) may have.
// Nothing else a blocker does changes either; a task made since names none.
func (s *State) namedByClosing(over map[string]*Task, reopened bool) map[string]bool {
	named := map[string]bool{}
	for _, m := range []map[string]*Task{s.trk.m, over} {
		for id, t := range m {
			if o := over[id]; o != nil {
				t = o
			}
			i := -1
			if t != nil {
				i = s.position(id)
			}
			if i < 0 {
				continue
			}
			if was, now := s.trk.isOpen(i), t.Status != StatusClosed; was && !now || reopened && !was && now {
				for _, r := range s.baseRefs(id) {
					named[r] = true
				}
			}
		}
	}
	return named
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
	for _, t := range s.allTasks() {
		if f.Status != "" && s.EffectiveStatus(t, now) != f.Status ||
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
func (s *State) reaches(from, to string) bool { return s.reachesThrough(from, to, false) }

// reachesThrough is reaches, and with links through links too.
func (s *State) reachesThrough(from, to string, links bool) bool {
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
		t := s.Task(id)
		if t == nil {
			continue
		}
		for _, d := range t.Blockers {
			stack = append(stack, d.ID)
		}
		if links {
			for _, l := range t.Links {
				stack = append(stack, l.ID)
			}
		}
		if t.Parent != "" {
			stack = append(stack, t.Parent)
		}
	}
	return false
}

// descends reports whether task id has ancestor among its parents, its
// parents' parents, and so on.
func (s *State) descends(id, ancestor string) bool {
	seen := map[string]bool{}
	for t := s.Task(id); t != nil && t.Parent != "" && !seen[t.ID]; t = s.Task(t.Parent) {
		if t.Parent == ancestor {
			return true
		}
		seen[t.ID] = true
	}
	return false
}

// reachesAny is reaches through links too: bd refuses a dependency that
// would close a cycle through dependencies of any type.
func (s *State) reachesAny(from, to string) bool { return s.reachesThrough(from, to, true) }

// View renders a task at now (its effective status), without dependencies
// or comments: bd ready's items, and what commands that change a task print.
func (s *State) View(t *Task, p Policy, now time.Time) TaskJSON {
	j := t.base()
	if st := s.EffectiveStatus(t, now); st != t.Status {
		j.Status, j.Assignee = st, ""
	}
	return j
}

// ListItem renders a task as bd list --json does: with its dependency
// records and both counts (dependents from DependentCounts).
func (s *State) ListItem(t *Task, p Policy, now time.Time, dependents map[string]int) ListItemJSON {
	return s.listItem(t, p, now, dependents[t.ID])
}

// listItem is ListItem with t's dependent count.
func (s *State) listItem(t *Task, p Policy, now time.Time, dependents int) ListItemJSON {
	j := s.View(t, p, now)
	j.Dependencies = t.deps()
	return ListItemJSON{TaskJSON: j, DependencyCount: len(j.Dependencies), DependentCount: dependents}
}

// DependentCounts counts, in one pass, the dependency records that name
// each task: its children, the tasks it blocks, the tasks linked to it.
func (s *State) DependentCounts() map[string]int {
	n := map[string]int{}
	for _, t := range s.allTasks() {
		if t.Parent != "" {
			n[t.Parent]++
		}
		for _, d := range t.Blockers {
			n[d.ID]++
		}
		for _, l := range t.Links {
			n[l.ID]++
		}
	}
	return n
}

// Show renders a task as bd show --json does: what it depends on and what
// depends on it as whole tasks, its comments, its parent.
func (s *State) Show(t *Task, p Policy, now time.Time) DetailJSON {
	j := DetailJSON{TaskJSON: s.View(t, p, now), Comments: t.Comments()}
	j.Labels, j.TaskJSON.Labels = j.TaskJSON.Labels, nil
	if len(j.Comments) == 0 {
		j.Comments = nil
	}
	related := func(id, typ string) RelatedJSON {
		if o := s.Task(id); o != nil {
			return RelatedJSON{TaskJSON: s.View(o, p, now), DependencyType: typ}
		}
		return RelatedJSON{TaskJSON: TaskJSON{ID: id}, DependencyType: typ} // imported with a dangling reference
	}
	for _, d := range t.deps() {
		j.Dependencies = append(j.Dependencies, related(d.DependsOnID, d.Type))
	}
	for _, o := range s.dependentsOf(t.ID) {
		for _, d := range o.deps() {
			if d.DependsOnID == t.ID {
				j.Dependents = append(j.Dependents, related(o.ID, d.Type))
			}
		}
	}
	if t.Parent != "" {
		parent := t.Parent
		j.Parent = &parent
	}
	return j
}

// dependentsOf returns the tasks with a dependency record naming id, by id:
// those decoded or changed since the snapshot, and those the snapshot
// recorded as naming it that still do.
func (s *State) dependentsOf(id string) []*Task {
	names := func(t *Task) bool {
		return t.Parent == id || slices.ContainsFunc(t.Blockers, func(d Dep) bool { return d.ID == id }) ||
			slices.ContainsFunc(t.Links, func(l Link) bool { return l.ID == id })
	}
	var out []*Task
	seen := map[string]bool{}
	for _, t := range s.trk.m {
		seen[t.ID] = true
		if names(t) {
			out = append(out, t)
		}
	}
	for _, r := range s.baseRefs(id) {
		if t := s.Task(r); !seen[r] && t != nil && names(t) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
