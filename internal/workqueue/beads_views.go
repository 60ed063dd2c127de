package workqueue

import (
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/jsonout"
)

// bd's views over the whole tracker: stats, blocked, the dependency tree,
// cycles and label counts, with bd 0.49.1's JSON and its rules for what
// counts (its SQL, read in internal/storage/sqlite).

// BeadsStatus is the status bd shows for t at now: Blocked (the blocked
// label) is bd's blocked, an expired claim open.
func (s *State) BeadsStatus(t *Task, p Policy, now time.Time) string {
	st := s.EffectiveStatus(t, now)
	if st == StatusOpen && t.HasLabel(BlockedLabel) {
		return StatusBlocked
	}
	return st
}

// blocksOpen reports whether t waits for a blocker that is not closed (bd:
// a "blocks" dependency on an issue open, in progress, blocked or deferred).
func (s *State) blocksOpen(t *Task) bool {
	for _, d := range t.Blockers {
		if s.notClosed(d.ID) {
			return true
		}
	}
	return false
}

// Statistics is bd stats --json's summary (beads' types.Statistics).
type Statistics struct {
	TotalIssues             int     `json:"total_issues"`
	OpenIssues              int     `json:"open_issues"`
	InProgressIssues        int     `json:"in_progress_issues"`
	ClosedIssues            int     `json:"closed_issues"`
	BlockedIssues           int     `json:"blocked_issues"`
	DeferredIssues          int     `json:"deferred_issues"`
	ReadyIssues             int     `json:"ready_issues"`
	TombstoneIssues         int     `json:"tombstone_issues"`
	PinnedIssues            int     `json:"pinned_issues"`
	EpicsEligibleForClosure int     `json:"epics_eligible_for_closure"`
	AverageLeadTime         float64 `json:"average_lead_time_hours"`
}

// BeadsStats counts as bd stats does: by status; blocked, the issues not
// closed with a blocker not closed; ready, the open ones without (bd
// ready's further rules, parents and claims, are not stats'); the mean
// hours from creation to close of the closed ones.
func (s *State) BeadsStats(p Policy, now time.Time) Statistics {
	if st, ok := s.summaryBeadsStats(now); ok {
		return st
	}
	var tally beadsTally
	for _, t := range s.allTasks() {
		tally.add(s, t, now)
	}
	st := tally.stats()
	for _, n := range s.epicCounts() {
		if eligibleEpic(n) {
			st.EpicsEligibleForClosure++
		}
	}
	return st
}

// BlockedJSON is an item of bd blocked --json (beads' BlockedIssue): the
// issue as bd's query selects it (no owner, labels or close reason) and
// the blockers not closed.
type BlockedJSON struct {
	TaskJSON
	BlockedByCount int      `json:"blocked_by_count"`
	BlockedBy      []string `json:"blocked_by"`
}

// BeadsBlocked lists what bd blocked lists, by priority then id: the issues
// not closed that are Blocked or deferred or wait for a blocker not closed;
// with parent, only its descendants.
func (s *State) BeadsBlocked(p Policy, now time.Time, parent string) []BlockedJSON {
	var under map[string]bool
	var tasks iter.Seq[*Task]
	if parent != "" {
		under = s.descendants(parent)
	}
	if parent == "" {
		if ts, ok := s.blockedCandidates(); ok {
			tasks = slices.Values(ts)
		}
	}
	if tasks == nil {
		tasks = maps.Values(s.allTasks())
	}
	var out []BlockedJSON
	for t := range tasks {
		status := s.BeadsStatus(t, p, now)
		if status == StatusClosed || under != nil && !under[t.ID] {
			continue
		}
		by := []string{}
		for _, d := range t.Blockers {
			if s.notClosed(d.ID) {
				by = append(by, d.ID)
			}
		}
		if len(by) == 0 && status != StatusBlocked && status != StatusDeferred {
			continue
		}
		j := selected(Beads(s.View(t, p, now)))
		j.CreatedBy = t.Detail().CreatedBy
		out = append(out, BlockedJSON{TaskJSON: j, BlockedByCount: len(by), BlockedBy: by})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Priority != out[j].Priority {
			return out[i].Priority < out[j].Priority
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// selected is an issue as bd's own queries select it for blocked, the
// dependency tree and epics: without owner, creator, labels or close
// reason, with the external reference.
func selected(v TaskJSON) TaskJSON {
	return TaskJSON{ID: v.ID, Title: v.Title, Description: v.Description, Design: v.Design,
		AcceptanceCriteria: v.AcceptanceCriteria, Notes: v.Notes, Status: v.Status, Priority: v.Priority,
		IssueType: v.IssueType, Assignee: v.Assignee, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt, ClosedAt: v.ClosedAt,
		ExternalRef: v.ExternalRef}
}

// Descendants are the tasks under id, through parents (bd's --parent of
// ready and blocked).
func (s *State) Descendants(id string) map[string]bool { return s.descendants(id) }

// descendants are the tasks under id, through parents.
func (s *State) descendants(id string) map[string]bool {
	children := map[string][]string{}
	for _, t := range s.allTasks() {
		if t.Parent != "" {
			children[t.Parent] = append(children[t.Parent], t.ID)
		}
	}
	out := map[string]bool{}
	stack := slices.Clone(children[id])
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !out[c] {
			out[c] = true
			stack = append(stack, children[c]...)
		}
	}
	return out
}

// TreeNodeJSON is an item of bd dep tree --json (beads' TreeNode).
type TreeNodeJSON struct {
	TaskJSON
	Depth     int    `json:"depth"`
	ParentID  string `json:"parent_id"`
	Truncated bool   `json:"truncated"`
}

// AppendJSON declines: encoding/json writes it, with depth and parent.
func (TreeNodeJSON) AppendJSON(dst []byte, _ jsonout.Format) ([]byte, bool) { return dst, false }

// dependsOn are the ids t depends on, whatever the type: what bd's tree
// walks.
func (t *Task) dependsOn() []string { return slices.Collect(t.dependsOnIDs()) }

// dependsOnIDs yields the ids t depends on, whatever the type: its parent,
// its blockers, its links.
func (t *Task) dependsOnIDs() iter.Seq[string] {
	return func(yield func(string) bool) {
		if t.Parent != "" && !yield(t.Parent) {
			return
		}
		for _, d := range t.Blockers {
			if !yield(d.ID) {
				return
			}
		}
		for _, l := range t.Links {
			if !yield(l.ID) {
				return
			}
		}
	}
}

// DepTree is bd dep tree from root: what it depends on (up: what depends
// on it), through dependencies of every type, down to maxDepth levels.
// Each task appears once, at its shallowest depth, under the first of its
// parents there; a level is ordered by priority, then id (bd's ORDER BY
// depth, priority, id).
func (s *State) DepTree(root string, maxDepth int, up bool, p Policy, now time.Time) []TreeNodeJSON {
	r := s.Task(root)
	if r == nil {
		return nil
	}
	node := func(t *Task, depth int, parent string) TreeNodeJSON {
		return TreeNodeJSON{TaskJSON: selected(Beads(s.View(t, p, now))), Depth: depth, ParentID: parent, Truncated: depth == maxDepth}
	}
	out := []TreeNodeJSON{node(r, 0, root)}
	seen := map[string]bool{root: true}
	level := []*Task{r}
	for depth := 1; depth <= maxDepth && len(level) > 0; depth++ {
		type edge struct {
			t      *Task
			parent string
		}
		var next []edge
		for _, t := range level {
			var ids []string
			if up {
				for _, o := range s.dependentsOf(t.ID) {
					ids = append(ids, o.ID)
				}
			} else {
				ids = t.dependsOn()
			}
			for _, id := range ids {
				if o := s.Task(id); o != nil && !seen[id] {
					next = append(next, edge{o, t.ID})
				}
			}
		}
		sort.SliceStable(next, func(i, j int) bool {
			a, b := next[i].t, next[j].t
			if a.Priority != b.Priority {
				return a.Priority < b.Priority
			}
			return a.ID < b.ID
		})
		level = level[:0:0]
		for _, e := range next {
			if !seen[e.t.ID] {
				seen[e.t.ID] = true
				out = append(out, node(e.t, depth, e.parent))
				level = append(level, e.t)
			}
		}
	}
	return out
}

// cycleEdges is what t depends on through dependencies of every type but
// relates-to: an id t relates to is no edge, whatever else links them.
func (t *Task) cycleEdges() []string {
	next := t.dependsOn()
	for _, l := range t.Links {
		if l.Type == DepRelatesTo {
			next = slices.DeleteFunc(next, func(n string) bool { return n == l.ID })
		}
	}
	return next
}

// Cycles finds the cycles through dependencies of every type but
// relates-to, as bd dep cycles: each from its smallest id, once. When the
// tasks' table had none when saved, a cycle now runs through a task
// changed since (a new edge is a changed task's; an edge to a task made
// since runs through that task): none found from those, there is none.
func (s *State) Cycles() [][]string {
	if sec, c, ok := s.bdSection(); ok && sec.acyclic && !s.cycleFrom(c.changed) {
		return nil
	}
	all := s.allTasks()
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	visited, onStack := map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	var out [][]string
	var path []string
	var dfs func(id string)
	dfs = func(id string) {
		visited[id], onStack[id] = true, true
		path = append(path, id)
		for _, n := range all[id].cycleEdges() {
			if all[n] == nil {
				continue
			}
			if !visited[n] {
				dfs(n)
			} else if onStack[n] {
				i := slices.Index(path, n)
				c := slices.Clone(path[i:])
				m := slices.Index(c, slices.Min(c))
				c = append(c[m:], c[:m]...)
				if key := strings.Join(c, "→"); !seen[key] {
					seen[key] = true
					out = append(out, c)
				}
			}
		}
		path = path[:len(path)-1]
		onStack[id] = false
	}
	for _, id := range ids {
		if !visited[id] {
			dfs(id)
		}
	}
	return out
}

// LabelCount is an item of bd label list-all --json.
type LabelCount struct {
	Label string `json:"label"`
	Count int    `json:"count"`
}

// BeadsList is bd list (and search): the tasks that pass, as bd list --json
// has them, in bd's order (priority, newest first), at most limit of them
// (0: all). admit is asked first, with the task and its status as bd
// shows it (it must read only Task's own fields, and keep nothing of the
// task: it may be decoded for that call alone); view, when not nil, then
// with the whole issue. Without view only the first limit are rendered,
// picked in one pass over the tasks without keeping or sorting them all.
func (s *State) BeadsList(p Policy, now time.Time, admit func(t *Task, status string) bool, view func(TaskJSON) bool, limit int) []ListItemJSON {
	picked, counts := s.beadsPicked(p, now, admit, view == nil, limit)
	out := s.beadsRendered(picked, p, now, view, limit)
	if counts == nil {
		ids := make([]string, len(out))
		for i, it := range out {
			ids[i] = it.ID
		}
		counts = s.dependentCountsOf(ids)
	}
	for i := range out {
		out[i].DependentCount = counts[out[i].ID]
	}
	return out
}

// BeadsChildren is BeadsList of the tasks whose parent is parent (bd list
// --parent, bd children). With a table it reads only the tasks that named
// parent when it was saved and those decoded or changed since, where a
// list decodes every task.
func (s *State) BeadsChildren(p Policy, now time.Time, parent string, admit func(t *Task, status string) bool, view func(TaskJSON) bool, limit int) []ListItemJSON {
	child := func(t *Task) bool { return t != nil && t.Parent == parent && admit(t, s.BeadsStatus(t, p, now)) }
	tt, x := s.listed()
	if tt == nil {
		return s.BeadsList(p, now, func(t *Task, _ string) bool { return child(t) }, view, limit)
	}
	var picked []*Task
	named := map[string]bool{}
	for _, id := range s.baseRefs(parent) {
		named[id] = true
		if t := s.Task(id); child(t) {
			picked = append(picked, t)
		}
	}
	for id, t := range s.trk.m { // those changed or decoded since the save: Task just put the named ones here too
		if !named[id] && child(t) {
			picked = append(picked, t)
		}
	}
	c := s.sinceSave(tt, x)
	out := s.beadsRendered(topK(picked, 0, beadsListLess), p, now, view, limit)
	for i := range out {
		out[i].DependentCount = c.dependents(out[i].ID)
	}
	return out
}

// beadsRendered is picked, in order, as bd list --json's items: those view
// passes (when not nil), at most limit (0: all). Their dependent counts
// are the caller's to fill in.
func (s *State) beadsRendered(picked []*Task, p Policy, now time.Time, view func(TaskJSON) bool, limit int) []ListItemJSON {
	n := len(picked)
	if limit > 0 {
		n = min(n, limit)
	}
	out := make([]ListItemJSON, 0, n) // each item is large: grown by appends, the copies cost more than the rest
	for _, t := range picked {
		v := Beads(s.View(t, p, now))
		if view != nil && !view(v) {
			continue
		}
		out = append(out, beadsListItem(t, v, 0))
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// beadsListItem is bd list --json's item of t, v being t as bd shows it.
func beadsListItem(t *Task, v TaskJSON, dependents int) ListItemJSON {
	v.Dependencies = t.deps()
	return ListItemJSON{TaskJSON: v, DependencyCount: len(v.Dependencies), DependentCount: dependents}
}

// BeadsEach calls fn with every task, in id order, and its status as bd
// shows it (bd count). A task the table holds is decoded for the call
// alone: fn must not keep it or its strings.
func (s *State) BeadsEach(p Policy, now time.Time, fn func(t *Task, status string)) {
	for t := range s.eachTask(s.decodedIDs()) {
		if t != nil {
			fn(t, s.BeadsStatus(t, p, now))
		}
	}
}

// BeadsListJSON is BeadsList without a view filter, for cliout.WriteJSON:
// each item from the task's saved listing where it holds (ViewsJSON).
func (s *State) BeadsListJSON(p Policy, now time.Time, admit func(t *Task, status string) bool, limit int) []any {
	picked, counts := s.beadsPicked(p, now, admit, true, limit)
	if limit > 0 && len(picked) > limit {
		picked = picked[:limit]
	}
	if counts == nil {
		ids := make([]string, len(picked))
		for i, t := range picked {
			ids[i] = t.ID
		}
		counts = s.dependentCountsOf(ids)
	}
	return s.beadsItems(picked, counts, p, now)
}

// BeadsOpenListJSON is BeadsListJSON for bd list's default: the first limit
// (> 0) issues not closed. With a snapshot, they are picked by the keys its
// index keeps of the tasks open at the save (priority, creation, id) and by
// the tasks changed since, and only those shown are decoded: 100,000 tasks
// were each decoded to pick 50.
func (s *State) BeadsOpenListJSON(p Policy, now time.Time, limit int) []any {
	if picked, counts, ok := s.topOpen(p, now, limit); ok {
		return s.beadsItems(picked, counts, p, now)
	}
	return s.BeadsListJSON(p, now, func(_ *Task, status string) bool { return status != StatusClosed }, limit)
}

// BeadsOpenList is BeadsOpenListJSON's issues as BeadsList has them (bd
// list's lines): the first limit (> 0) issues not closed, picked from the
// snapshot's index where there is one.
func (s *State) BeadsOpenList(p Policy, now time.Time, limit int) []ListItemJSON {
	picked, counts, ok := s.topOpen(p, now, limit)
	if !ok {
		return s.BeadsList(p, now, func(_ *Task, status string) bool { return status != StatusClosed }, nil, limit)
	}
	out := s.beadsRendered(picked, p, now, nil, limit)
	for i := range out {
		out[i].DependentCount = counts[out[i].ID]
	}
	return out
}

// topOpen picks BeadsOpenListJSON's tasks from the snapshot's index, with
// their dependent counts; false without a snapshot.
func (s *State) topOpen(p Policy, now time.Time, limit int) ([]*Task, map[string]int, bool) {
	tt := s.trk.table()
	if tt == nil || limit <= 0 {
		return nil, nil, false
	}
	x, err := tt.listIndex()
	if err != nil {
		return nil, nil, false
	}
	c := s.sinceSave(tt, x)
	type pick struct {
		key beadsKey
		pos int   // in the table; -1 for a task changed since the save
		t   *Task // that task
	}
	less := func(a, b pick) bool { return a.key.less(b.key) }
	var top []pick
	for k, i := range tt.open {
		if !c.changed(i) {
			top = insertTop(top, pick{tt.beadsKeyAt(x, k), int(i), nil}, limit, less)
		}
	}
	for _, t := range s.trk.m {
		if t != nil && s.BeadsStatus(t, p, now) != StatusClosed {
			top = insertTop(top, pick{beadsKeyOf(t), -1, t}, limit, less)
		}
	}
	out, counts := make([]*Task, len(top)), make(map[string]int, len(top))
	for k, it := range top {
		if it.t == nil {
			out[k], counts[it.key.id] = s.taskAt(it.pos), c.dependentsAt(uint32(it.pos))
		} else {
			out[k], counts[it.key.id] = it.t, c.dependents(it.key.id)
		}
	}
	return out, counts, true
}

// timeKey is t as the index orders times (table.Enc.Time).
func timeKey(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

// beadsItems is bd list --json's items of picked, in order.
func (s *State) beadsItems(picked []*Task, counts map[string]int, p Policy, now time.Time) []any {
	out := make([]any, len(picked))
	for i, t := range picked {
		out[i] = s.beadsItem(t, p, now, counts[t.ID])
	}
	return out
}

// beadsItem is bd list --json's item of t: its saved listing where it holds.
func (s *State) beadsItem(t *Task, p Policy, now time.Time, dependents int) any {
	if v, ok := s.saved(t, now, true); ok {
		v.tail, v.item, v.dependents = t.listTail, true, dependents
		return v
	}
	return beadsListItem(t, Beads(s.View(t, p, now)), dependents)
}

// beadsPicked returns the tasks admit passes in bd list's order: only the
// first limit (limit > 0) when first is set, with every task's dependent
// count (counts; nil when not counted).
func (s *State) beadsPicked(p Policy, now time.Time, admit func(t *Task, status string) bool, first bool, limit int) (picked []*Task, counts map[string]int) {
	if first && limit > 0 {
		return s.topListed(p, now, admit, limit)
	}
	for _, t := range s.allTasks() {
		if admit(t, s.BeadsStatus(t, p, now)) {
			picked = append(picked, t)
		}
	}
	return topK(picked, 0, beadsListLess), nil
}

// topListed streams every task once: it keeps the first limit that admit
// passes, in bd list's order, and counts the dependency records naming
// each task, returning the counts of those it keeps. A 10,000-task list decodes each task for the pass alone and
// keeps neither the tasks nor a map of them.
func (s *State) topListed(p Policy, now time.Time, admit func(t *Task, status string) bool, limit int) ([]*Task, map[string]int) {
	less := func(a, b beadsKey) bool { return a.less(b) }
	var top []beadsKey // what it keeps of a task it passes over
	// Counted by pointer: assigning to a key that exists stores the new
	// key string, and id is the scan's, which the next record overwrites.
	byID := map[string]*int{}
	count := func(id string) {
		if n := byID[id]; n != nil {
			*n++
		} else {
			one := 1
			byID[strings.Clone(id)] = &one
		}
	}
	for t := range s.eachTaskOf(s.decodedIDs(), false) {
		for id := range t.dependsOnIDs() {
			count(id)
		}
		it := beadsKeyOf(t)
		if len(top) == limit && !less(it, top[limit-1]) || !admit(t, s.BeadsStatus(t, p, now)) {
			continue
		}
		it.id = strings.Clone(it.id)
		top = insertTop(top, it, limit, less)
	}
	out := make([]*Task, 0, len(top))
	for _, it := range top {
		out = append(out, s.Task(it.id))
	}
	counts := make(map[string]int, len(top)) // the picked tasks' alone: all the callers ask
	for _, it := range top {
		if n := byID[it.id]; n != nil {
			counts[it.id] = *n
		}
	}
	return out, counts
}

// beadsListLess is bd list's order: by priority, newest first.
func beadsListLess(a, b *Task) bool { return beadsKeyOf(a).less(beadsKeyOf(b)) }

// beadsKey is what bd list orders issues by: priority, then creation, the
// newest first, then id.
type beadsKey struct {
	priority int
	created  int64 // as the index orders times (timeKey)
	id       string
}

func beadsKeyOf(t *Task) beadsKey { return beadsKey{t.Priority, timeKey(t.CreatedAt), t.ID} }

// beadsKeyAt is the key of open[k] as the table saved it.
func (t *taskTable) beadsKeyAt(x *listIndex, k int) beadsKey {
	i := t.open[k]
	return beadsKey{int(x.at[i].priority), t.createdAt(k), t.IDs[i]}
}

func (a beadsKey) less(b beadsKey) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.created != b.created {
		return a.created > b.created
	}
	return a.id < b.id
}

// dependentCountsOf is DependentCounts for these tasks alone.
func (s *State) dependentCountsOf(ids []string) map[string]int {
	n := make(map[string]int, len(ids))
	for _, id := range ids {
		n[id] = 0
	}
	count := func(id string) {
		if _, ok := n[id]; ok {
			n[id]++
		}
	}
	for _, t := range s.allTasks() {
		for id := range t.dependsOnIDs() {
			count(id)
		}
	}
	return n
}
