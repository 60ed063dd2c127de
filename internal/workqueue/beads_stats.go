package workqueue

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/spoolhq/spool/internal/table"
)

// bd stats from a section of the tasks' table, as stats reads the
// summary: the counts as the save left them, corrected by the tasks that
// can have changed since. A task's part in bd stats is fixed while neither
// it nor a blocker changes, but for a task in progress, whose lease runs
// out with time: the section keeps its part both ways, and its lease.
//
//	section := counts | lead | a bit set per task |
//	           the tasks in progress (position, lease, parts, lead) |
//	           the open epics (id, children, closed children) |
//	           the labels (label, tasks) | no dependency cycle |
//	           a task named as a blocker or parent that does not exist
//
// A task made since that a saved task names (an import can leave a
// dependency dangling, and a later one make the task) changes what the
// namer adds, and nothing in the table leads to the namer: the last flag
// says whether that can happen, and a task made since then sends the
// readers to every task.
//
// bd epic status, bd label list-all and bd dep cycles read it too.

// What a task adds to bd stats.
const (
	bsOpen = 1 << iota
	bsInProgress
	bsClosed
	bsDeferred
	bsWaits    // not closed, with a blocker not closed: bd's blocked
	bsReady    // open and not waiting
	bsLead     // closed at some time: its lead time counts
	bsVolatile // in progress when saved: not in the counts, but in claimed
)

// claimed is a task in progress when saved: what it adds to bd stats
// while its lease holds, and once the lease ran out (open again).
type claimed struct {
	pos           int
	lease         time.Time // zero: none to run out
	live, expired byte
	lead          time.Duration
}

// bits is what it adds at now.
func (c claimed) bits(now time.Time) byte {
	if (&Task{Status: StatusInProgress, LeaseUntil: c.lease}).leaseExpired(now) {
		return c.expired
	}
	return c.live
}

// beadsBits is what t adds to bd stats, its status being status.
func (s *State) beadsBits(t *Task, status string) byte {
	var b byte
	switch status {
	case StatusOpen:
		b |= bsOpen
	case StatusInProgress:
		b |= bsInProgress
	case StatusClosed:
		b |= bsClosed
	case StatusDeferred:
		b |= bsDeferred
	}
	waits := status != StatusClosed && s.blocksOpen(t)
	if waits {
		b |= bsWaits
	}
	if status == StatusOpen && !waits {
		b |= bsReady
	}
	if !closedAt(t).IsZero() {
		b |= bsLead
	}
	return b
}

// leadTime is what a task with bsLead adds to the total lead time.
func leadTime(t *Task) time.Duration { return closedAt(t).Sub(t.CreatedAt) }

// closedAt is t's detail's ClosedAt, read from the detail still encoded
// without decoding it (and checking its comments): a save asks it of
// every task.
func closedAt(t *Task) time.Time {
	if t.detail != nil || t.rawDetail == "" {
		return t.Detail().ClosedAt
	}
	r := table.NewDec(t.rawDetail)
	for range detailStrings {
		r.Str()
	}
	r.Time() // UpdatedAt
	at := r.Time()
	if r.Err() != nil {
		return t.Detail().ClosedAt // which says what is wrong
	}
	return at
}

// detailStrings is how many strings encodeDetailFields writes before its
// times (fields_gen.go): Description to ExternalRef.
const detailStrings = 10

// beadsPart is what t adds to bd stats at now: its bits, and its lead
// time with bsLead.
func (s *State) beadsPart(t *Task, now time.Time) (byte, time.Duration) {
	bits := s.beadsBits(t, s.BeadsStatus(t, Policy{}, now))
	var lead time.Duration
	if bits&bsLead != 0 {
		lead = leadTime(t)
	}
	return bits, lead
}

// beadsTally adds up tasks' parts in bd stats; a part taken out is k -1.
type beadsTally struct {
	st     Statistics
	lead   time.Duration // wraps as the sum of Durations does: the same sum whatever the order
	closed int           // the tasks whose lead counts
}

func (b *beadsTally) count(bits byte, lead time.Duration, k int) {
	b.st.TotalIssues += k
	for _, c := range []struct {
		bit byte
		n   *int
	}{{bsOpen, &b.st.OpenIssues}, {bsInProgress, &b.st.InProgressIssues}, {bsClosed, &b.st.ClosedIssues},
		{bsDeferred, &b.st.DeferredIssues}, {bsWaits, &b.st.BlockedIssues}, {bsReady, &b.st.ReadyIssues}} {
		if bits&c.bit != 0 {
			*c.n += k
		}
	}
	if bits&bsLead != 0 {
		b.lead += time.Duration(k) * lead
		b.closed += k
	}
}

// stats is the tally with its mean lead time, in hours.
func (b *beadsTally) stats() Statistics {
	st := b.st
	if b.closed > 0 {
		st.AverageLeadTime = b.lead.Hours() / float64(b.closed)
	}
	return st
}

// add counts t as it is at now.
func (b *beadsTally) add(s *State, t *Task, now time.Time) {
	bits, lead := s.beadsPart(t, now)
	b.count(bits, lead, 1)
}

// beadsStatsWriter gathers the section as WriteState writes the records.
type beadsStatsWriter struct {
	tally    beadsTally
	bits     []byte
	claimed  []claimed
	children map[string]*[2]int // by parent id: children, closed children
	epics    []string           // the open epics
	labels   map[string]*int    // tasks by label
	edgeAt   []int32            // by position: where its cycleEdges start in edgeTo
	edgeTo   []string
	dangling bool // a blocker or parent named that is not a task
}

func newBeadsStatsWriter(n int) *beadsStatsWriter {
	return &beadsStatsWriter{bits: make([]byte, 0, n), children: map[string]*[2]int{}, labels: map[string]*int{}}
}

// add records t, at position i with id id (t is the scan's: its strings
// are kept only cloned).
func (w *beadsStatsWriter) add(s *State, i int, id string, t *Task) {
	b, lead := s.beadsPart(t, time.Time{}) // a lease runs out at its time, not before
	if t.Status == StatusInProgress {
		c := claimed{pos: i, lease: t.LeaseUntil, live: b, lead: lead}
		c.expired, _ = s.beadsPart(t, t.LeaseUntil)
		w.claimed = append(w.claimed, c)
		b = bsVolatile
	} else {
		w.tally.count(b, lead, 1)
	}
	w.bits = append(w.bits, b)
	if !w.dangling {
		w.dangling = t.Parent != "" && !s.exists(t.Parent) || slices.ContainsFunc(t.Blockers, func(d Dep) bool { return !s.exists(d.ID) })
	}
	if t.Parent != "" {
		c := w.children[t.Parent]
		if c == nil {
			c = new([2]int)
			w.children[strings.Clone(t.Parent)] = c
		}
		c[0]++
		if t.Status == StatusClosed {
			c[1]++
		}
	}
	if openEpic(t) {
		w.epics = append(w.epics, id)
	}
	w.edgeAt = append(w.edgeAt, int32(len(w.edgeTo)))
	for _, e := range t.cycleEdges() {
		w.edgeTo = append(w.edgeTo, strings.Clone(e))
	}
	for _, l := range t.Labels {
		if l == BlockedLabel {
			continue
		}
		if c := w.labels[l]; c != nil {
			*c++ // by pointer: assigning to the key would store the scan's string
		} else {
			w.labels[strings.Clone(l)] = new(int)
			*w.labels[l]++
		}
	}
}

// openEpic reports whether t is an epic not closed: bd epic status's.
func openEpic(t *Task) bool { return t.Type == "epic" && t.Status != StatusClosed }

// countLabels adds k to the count of each of t's labels but the blocked
// label (bd's blocked status); a count that reaches 0 goes.
func countLabels(n map[string]int, t *Task, k int) {
	for _, l := range t.Labels {
		if l == BlockedLabel {
			continue
		}
		if c := n[l] + k; c == 0 {
			delete(n, l)
		} else {
			n[l] = c
		}
	}
}

// encode writes the section; ids are the tasks', by position.
func (w *beadsStatsWriter) encode(ids []string) []byte {
	var e table.Enc
	st := w.tally.st
	for _, v := range []int{st.TotalIssues, st.OpenIssues, st.ClosedIssues, st.DeferredIssues, st.BlockedIssues, st.ReadyIssues, w.tally.closed} {
		e.Uint(uint64(v))
	}
	e.Int(int64(w.tally.lead))
	e.Uint(uint64(len(w.bits)))
	e.Buf = append(e.Buf, w.bits...)
	e.Uint(uint64(len(w.claimed)))
	for _, c := range w.claimed {
		e.Uint(uint64(c.pos))
		e.Time(c.lease)
		e.Buf = append(e.Buf, c.live, c.expired)
		e.Int(int64(c.lead))
	}
	e.Uint(uint64(len(w.epics)))
	for _, id := range w.epics {
		var c [2]int
		if p := w.children[id]; p != nil {
			c = *p
		}
		e.Str(id)
		e.Uint(uint64(c[0]))
		e.Uint(uint64(c[1]))
	}
	e.Uint(uint64(len(w.labels)))
	for _, l := range slices.Sorted(maps.Keys(w.labels)) {
		e.Str(l)
		e.Uint(uint64(*w.labels[l]))
	}
	e.Bool(w.acyclic(ids))
	e.Bool(w.dangling)
	return e.Buf
}

// acyclic reports whether the tasks written, ids, have no cycle through
// the edges Cycles follows (to tasks the table holds): a depth-first
// search with three colours, without recursion.
func (w *beadsStatsWriter) acyclic(ids []string) bool {
	const (
		white = iota
		grey
		black
	)
	colour := make([]byte, len(ids))
	edgeAt := append(w.edgeAt, int32(len(w.edgeTo))) // and where the last one's end
	type frame struct{ at, next int32 }
	var stack []frame
	for root := range int32(len(ids)) {
		if colour[root] != white {
			continue
		}
		colour[root] = grey
		stack = append(stack[:0], frame{root, edgeAt[root]})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == edgeAt[f.at+1] {
				colour[f.at] = black
				stack = stack[:len(stack)-1]
				continue
			}
			to := w.edgeTo[f.next]
			f.next++
			k, found := slices.BinarySearch(ids, to) // in id order: the table's
			j := int32(k)
			switch {
			case !found:
			case colour[j] == grey:
				return false
			case colour[j] == white:
				colour[j] = grey
				stack = append(stack, frame{j, edgeAt[j]})
			}
		}
	}
	return true
}

// cycleFrom reports whether a cycle runs through a task reachable from
// ids, by their edges as they are now (Cycles', decoding tasks as the
// search reaches them); true as well once the search has read a tenth of
// the tasks, when reading them all costs little more.
func (s *State) cycleFrom(ids []string) bool {
	grey, black := map[string]bool{}, map[string]bool{}
	limit := max(s.trk.lazy.sum.n/10, 64)
	type frame struct {
		edges []string
		id    string
	}
	var stack []frame
	for _, root := range ids {
		t := s.Task(root)
		if t == nil || black[root] {
			continue
		}
		grey[root] = true
		stack = append(stack[:0], frame{t.cycleEdges(), root})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if len(f.edges) == 0 {
				delete(grey, f.id)
				black[f.id] = true
				stack = stack[:len(stack)-1]
				continue
			}
			to := f.edges[0]
			f.edges = f.edges[1:]
			if grey[to] {
				return true
			}
			if black[to] {
				continue
			}
			if len(black)+len(stack) > limit {
				return true
			}
			if n := s.Task(to); n != nil {
				grey[to] = true
				stack = append(stack, frame{n.cycleEdges(), to})
			}
		}
	}
	return false
}

// beadsSection is the section as read.
type beadsSection struct {
	tally    beadsTally
	bits     string
	claimed  []claimed
	epics    map[string][2]int
	labels   map[string]int
	acyclic  bool // no dependency cycle when saved
	dangling bool // a saved task named a blocker or parent that was not a task
}

// beadsStats reads the section once; an error for one that does not read.
func (l *lazyTasks) beadsStats() (*beadsSection, error) {
	l.beadsOnce.Do(func() {
		b, err := l.sum.ReadSection(l.sum.beads)
		if err != nil {
			l.beadsErr = err
			return
		}
		d := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b))) // b is ours, and kept
		sec := &beadsSection{}
		st := &sec.tally.st
		count := func() int { // a number of tasks: at most the table's
			v := d.Uint()
			if v > uint64(l.sum.n) {
				d.Fail()
				return 0
			}
			return int(v)
		}
		for _, v := range []*int{&st.TotalIssues, &st.OpenIssues, &st.ClosedIssues, &st.DeferredIssues, &st.BlockedIssues, &st.ReadyIssues, &sec.tally.closed} {
			*v = count()
		}
		sec.tally.lead = time.Duration(d.Int())
		n := d.Count()
		sec.bits = d.Raw(n)
		sec.claimed = make([]claimed, d.Count())
		for k := range sec.claimed {
			c := &sec.claimed[k]
			c.pos, c.lease = int(d.Uint()), d.Time()
			if b := d.Raw(2); len(b) == 2 {
				c.live, c.expired = b[0], b[1]
			}
			c.lead = time.Duration(d.Int())
			if c.pos >= n {
				d.Fail()
			}
		}
		k := d.Count()
		sec.epics = make(map[string][2]int, k)
		for range k {
			sec.epics[d.Str()] = [2]int{count(), count()}
		}
		k = d.Count()
		sec.labels = make(map[string]int, k)
		for range k {
			sec.labels[d.Str()] = count()
		}
		sec.acyclic = d.Bool()
		sec.dangling = d.Bool()
		err = d.End()
		if err == nil && n != l.sum.n {
			err = table.ErrDamaged
		}
		l.beads, l.beadsErr = sec, err
	})
	return l.beads, l.beadsErr
}

// beadsLazy is lazyTasks' share for bd stats.
type beadsLazy struct {
	beadsOnce sync.Once
	beads     *beadsSection
	beadsErr  error
}

// beadsSince is what the section's readers correct it by: the tasks
// decoded or changed since the save, taken before a reader decodes more,
// and their records as saved.
type beadsSince struct {
	s         *State
	changed   []string
	isChanged map[string]bool
	saved     map[string]*Task
}

// bdSection is the bd section of the tasks' table read lazily, and what
// changed since; false when there is none to read (a state held whole, a
// section that does not read).
func (s *State) bdSection() (*beadsSection, *beadsSince, bool) {
	if s.trk.lazy == nil {
		return nil, nil, false
	}
	sec, err := s.trk.lazy.beadsStats()
	if err != nil {
		return nil, nil, false
	}
	c := &beadsSince{s: s, changed: slices.Sorted(maps.Keys(s.trk.m)), saved: map[string]*Task{}}
	c.isChanged = make(map[string]bool, len(c.changed))
	for _, id := range c.changed {
		c.isChanged[id] = true
		if sec.dangling && s.trk.m[id] != nil && s.position(id) < 0 {
			return nil, nil, false // made since, and perhaps named by a saved task
		}
	}
	return sec, c, true
}

// fresh are the tasks whose part may differ from the section's: those
// decoded or changed since the save, and those whose blockers were closed
// or reopened since.
func (c *beadsSince) fresh() map[string]bool {
	fresh := maps.Clone(c.isChanged)
	if len(c.changed) > 0 {
		maps.Copy(fresh, c.s.namedByClosing(nil, true))
	}
	return fresh
}

// savedTask is task id as the table holds it, decoded once; nil for a
// task made since.
func (c *beadsSince) savedTask(id string) *Task {
	if t, ok := c.saved[id]; ok {
		return t
	}
	var t *Task
	if i, rec := c.s.trk.find(id); i >= 0 {
		t = decodeTask(rec())
	}
	c.saved[id] = t
	return t
}

// summaryBeadsStats is BeadsStats from the section; false when it cannot
// serve. It reads the tasks decoded or changed since the save and those
// whose saved records name one closed or reopened since.
func (s *State) summaryBeadsStats(now time.Time) (Statistics, bool) {
	sec, c, ok := s.bdSection()
	if !ok {
		return Statistics{}, false
	}
	tally := sec.tally
	fresh := c.fresh()
	freshAt := newBitset(len(sec.bits))
	for id := range fresh {
		s.Task(id) // decoded once, here: its place is then known without a second look-up
		i := s.position(id)
		if i < 0 {
			continue // new since the save
		}
		freshAt.set(i)
		b := sec.bits[i]
		if b&bsVolatile != 0 {
			continue // not in the counts
		}
		var lead time.Duration
		if b&bsLead != 0 {
			lead = leadTime(c.savedTask(id))
		}
		tally.count(b, lead, -1)
	}
	for _, cl := range sec.claimed {
		if !freshAt.has(cl.pos) {
			tally.count(cl.bits(now), cl.lead, 1)
		}
	}
	for id := range fresh {
		if t := s.Task(id); t != nil {
			tally.add(s, t, now)
		}
	}
	st := tally.stats()
	for _, n := range s.epicCountsSince(sec, c) {
		if eligibleEpic(n) {
			st.EpicsEligibleForClosure++
		}
	}
	return st, true
}

// blockedCandidates are the tasks bd blocked looks at, from the section:
// those that when saved waited for a blocker, were deferred, had the
// blocked label or were in progress (whose lease runs out with time), and
// those that can have changed since, as summaryBeadsStats reads them. Any
// other task is neither closed-and-reopened nor changed, and its blockers
// are as they were: it is not blocked now either. False when there is no
// section to read.
func (s *State) blockedCandidates() ([]*Task, bool) {
	sec, c, ok := s.bdSection()
	if !ok {
		return nil, false
	}
	fresh := c.fresh()
	tt, flags := s.trk.table(), s.trk.lazy.sum.flags
	var out []*Task
	for i := range len(sec.bits) {
		if sec.bits[i]&(bsWaits|bsDeferred|bsVolatile) != 0 || flags[i]&sumLabelled != 0 {
			if id := tt.IDs[i]; !fresh[id] {
				out = append(out, s.Task(id))
			}
		}
	}
	for id := range fresh {
		if t := s.Task(id); t != nil {
			out = append(out, t)
		}
	}
	return out, true
}

// eligibleEpic reports whether an epic's children, n[0], all closed (n[1]),
// one at least: bd epic close-eligible's rule.
func eligibleEpic(n [2]int) bool { return n[0] > 0 && n[0] == n[1] }

// epicCounts is every open epic's children and closed children, by id.
func (s *State) epicCounts() map[string][2]int {
	if sec, c, ok := s.bdSection(); ok {
		return s.epicCountsSince(sec, c)
	}
	children := map[string][2]int{}
	all := s.allTasks()
	for _, t := range all {
		if t.Parent != "" {
			n := children[t.Parent]
			n[0]++
			if t.Status == StatusClosed {
				n[1]++
			}
			children[t.Parent] = n
		}
	}
	out := map[string][2]int{}
	for id, t := range all {
		if openEpic(t) {
			out[id] = children[id]
		}
	}
	return out
}

// epicCountsSince is epicCounts from the section: the saved open epics'
// counts moved by the tasks changed since (as saved, and as they are);
// an epic changed since is counted again from the tasks that named it
// when saved and those changed since.
func (s *State) epicCountsSince(sec *beadsSection, c *beadsSince) map[string][2]int {
	counts := maps.Clone(sec.epics)
	move := func(t *Task, k int) {
		if t == nil || t.Parent == "" {
			return
		}
		if n, ok := counts[t.Parent]; ok {
			n[0] += k
			if t.Status == StatusClosed {
				n[1] += k
			}
			counts[t.Parent] = n
		}
	}
	for _, id := range c.changed {
		if len(sec.epics) > 0 {
			move(c.savedTask(id), -1)
		}
		move(s.trk.m[id], 1)
	}
	for _, id := range c.changed {
		delete(counts, id)
	}
	for _, id := range c.changed {
		t := s.trk.m[id]
		if t == nil || !openEpic(t) {
			continue
		}
		var refs []string // who named it when saved
		if old := c.savedTask(id); old != nil {
			refs = old.baseRefs
		}
		var n [2]int
		seen := map[string]bool{}
		for _, r := range slices.Concat(refs, c.changed) {
			if seen[r] {
				continue
			}
			seen[r] = true
			if child := s.Task(r); child != nil && child.Parent == id {
				n[0]++
				if child.Status == StatusClosed {
					n[1]++
				}
			}
		}
		counts[id] = n
	}
	return counts
}

// LabelCounts counts each label's issues, by label; the blocked label is
// bd's blocked status, not a label.
func (s *State) LabelCounts() []LabelCount {
	var n map[string]int
	if sec, c, ok := s.bdSection(); ok {
		n = maps.Clone(sec.labels)
		for _, id := range c.changed {
			if t := c.savedTask(id); t != nil {
				countLabels(n, t, -1)
			}
			if t := s.trk.m[id]; t != nil {
				countLabels(n, t, 1)
			}
		}
	} else {
		n = map[string]int{}
		for _, t := range s.allTasks() {
			countLabels(n, t, 1)
		}
	}
	out := make([]LabelCount, 0, len(n))
	for _, l := range slices.Sorted(maps.Keys(n)) {
		out = append(out, LabelCount{l, n[l]})
	}
	return out
}
