package workqueue

import (
	"fmt"
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
// out with time: those are left out of the counts and read each time.
//
//	section := counts | lead | a bit set per task |
//	           the tasks in progress (position, span) |
//	           the open epics (id, children, closed children)

// What a task adds to bd stats.
const (
	bsOpen = 1 << iota
	bsInProgress
	bsClosed
	bsDeferred
	bsWaits    // not closed, with a blocker not closed: bd's blocked
	bsReady    // open and not waiting
	bsLead     // closed at some time: its lead time counts
	bsVolatile // in progress when saved: not in the counts
)

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
	if !t.Detail().ClosedAt.IsZero() {
		b |= bsLead
	}
	return b
}

// leadTime is what a task with bsLead adds to the total lead time.
func leadTime(t *Task) time.Duration { return t.Detail().ClosedAt.Sub(t.CreatedAt) }

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
	bits := s.beadsBits(t, s.BeadsStatus(t, Policy{}, now))
	var lead time.Duration
	if bits&bsLead != 0 {
		lead = leadTime(t)
	}
	b.count(bits, lead, 1)
}

// beadsStatsWriter gathers the section as WriteState writes the records.
type beadsStatsWriter struct {
	tally    beadsTally
	bits     []byte
	volatile []other
	children map[string]*[2]int // by parent id: children, closed children
	epics    []string           // the open epics
}

func newBeadsStatsWriter(n int) *beadsStatsWriter {
	return &beadsStatsWriter{bits: make([]byte, 0, n), children: map[string]*[2]int{}}
}

// add records t, at position i with id id, just written to tw (t is the
// scan's: its strings are kept only cloned).
func (w *beadsStatsWriter) add(s *State, i int, id string, t *Task, tw *table.Writer) {
	var b byte
	if t.Status == StatusInProgress {
		b = bsVolatile
		from, to := tw.Span()
		w.volatile = append(w.volatile, other{i, from, to})
	} else {
		b = s.beadsBits(t, s.BeadsStatus(t, Policy{}, time.Time{})) // no lease to run out
		var lead time.Duration
		if b&bsLead != 0 {
			lead = leadTime(t)
		}
		w.tally.count(b, lead, 1)
	}
	w.bits = append(w.bits, b)
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
	if t.Type == "epic" && t.Status != StatusClosed {
		w.epics = append(w.epics, id)
	}
}

// encode writes the section.
func (w *beadsStatsWriter) encode() []byte {
	var e table.Enc
	st := w.tally.st
	for _, v := range []int{st.TotalIssues, st.OpenIssues, st.ClosedIssues, st.DeferredIssues, st.BlockedIssues, st.ReadyIssues, w.tally.closed} {
		e.Uint(uint64(v))
	}
	e.Int(int64(w.tally.lead))
	e.Uint(uint64(len(w.bits)))
	e.Buf = append(e.Buf, w.bits...)
	e.Uint(uint64(len(w.volatile)))
	for _, o := range w.volatile {
		e.Uint(uint64(o.pos))
		e.Uint(uint64(o.from))
		e.Uint(uint64(o.to - o.from))
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
	return e.Buf
}

// beadsSection is the section as read.
type beadsSection struct {
	tally    beadsTally
	bits     string
	volatile []other
	epics    map[string]*[2]int
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
		sec.volatile = make([]other, d.Count())
		for k := range sec.volatile {
			o := &sec.volatile[k]
			o.pos, o.from = int(d.Uint()), int64(d.Uint())
			o.to = o.from + int64(d.Uint())
			if o.pos >= n {
				d.Fail()
			}
		}
		k := d.Count()
		sec.epics = make(map[string]*[2]int, k)
		for range k {
			sec.epics[d.Str()] = &[2]int{count(), count()}
		}
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

// summaryBeadsStats is BeadsStats from the section, when the tasks' table
// is read lazily; false when it cannot serve (a state held whole, a
// section that does not read). It reads the tasks in progress, those
// decoded or changed since the save and those whose saved records name
// one closed or reopened since; for the epics, the records naming an epic
// changed since.
func (s *State) summaryBeadsStats(now time.Time) (Statistics, bool) {
	if s.trk.lazy == nil {
		return Statistics{}, false
	}
	sec, err := s.trk.lazy.beadsStats()
	if err != nil {
		return Statistics{}, false
	}
	tally := sec.tally
	// The tasks decoded or changed since the save, before anything below
	// decodes more; with those whose blockers may have changed, fresh.
	changed := slices.Sorted(maps.Keys(s.trk.m))
	isChanged := make(map[string]bool, len(changed))
	for _, id := range changed {
		isChanged[id] = true
	}
	fresh := maps.Clone(isChanged)
	if len(changed) > 0 {
		maps.Copy(fresh, s.namedByClosing(nil, true))
	}
	saved := map[string]*Task{} // the changed tasks as saved
	freshAt := newBitset(len(sec.bits))
	for id := range fresh {
		i := s.position(id)
		if i < 0 {
			continue // new since the save
		}
		freshAt.set(i)
		b := sec.bits[i]
		// The record as saved, when its lead time or its parent counts:
		// the epics' counts move by a changed task's saved parent, and an
		// epic changed since is counted from who named it then.
		var t *Task
		cur := s.trk.m[id]
		epic := cur != nil && cur.Type == "epic" && cur.Status != StatusClosed
		if isChanged[id] && (len(sec.epics) > 0 || epic) || b&(bsLead|bsVolatile) == bsLead {
			_, rec := s.trk.find(id)
			t = decodeTask(rec())
			if isChanged[id] {
				saved[id] = t
			}
		}
		if b&bsVolatile != 0 {
			continue // not in the counts
		}
		var lead time.Duration
		if b&bsLead != 0 {
			lead = leadTime(t)
		}
		tally.count(b, lead, -1)
	}
	for _, o := range sec.volatile {
		if freshAt.has(o.pos) {
			continue
		}
		d, err := s.trk.lazy.sum.Record(o.from, o.to)
		if err != nil {
			panic(table.Corrupt(fmt.Sprintf("the task at %d", o.pos), err))
		}
		tally.add(s, decodeTask(d), now)
	}
	for id := range fresh {
		if t := s.Task(id); t != nil {
			tally.add(s, t, now)
		}
	}
	st := tally.stats()
	st.EpicsEligibleForClosure = s.epicsEligibleSince(sec.epics, changed, isChanged, saved)
	return st, true
}

// epicsEligibleSince counts the open epics whose children are all closed:
// the saved open epics' counts, moved by the tasks changed since (as
// saved, and as they are), and for an epic changed since, its children
// counted again from the tasks naming it (as saved, or changed since).
func (s *State) epicsEligibleSince(epics map[string]*[2]int, changed []string, isChanged map[string]bool, saved map[string]*Task) int {
	counts := make(map[string][2]int, len(epics))
	for id, c := range epics {
		counts[id] = *c
	}
	move := func(t *Task, k int) {
		if t == nil || t.Parent == "" {
			return
		}
		if c, ok := counts[t.Parent]; ok {
			c[0] += k
			if t.Status == StatusClosed {
				c[1] += k
			}
			counts[t.Parent] = c
		}
	}
	for _, id := range changed {
		move(saved[id], -1)
		move(s.trk.m[id], 1)
	}
	eligible := 0
	for id, c := range counts {
		if !isChanged[id] && c[0] > 0 && c[0] == c[1] {
			eligible++
		}
	}
	for _, id := range changed {
		t := s.trk.m[id]
		if t == nil || t.Type != "epic" || t.Status == StatusClosed {
			continue
		}
		var refs []string // who named it when saved
		if old := saved[id]; old != nil {
			refs = old.baseRefs
		}
		total, closed := 0, 0
		seen := map[string]bool{}
		for _, r := range slices.Concat(refs, changed) {
			if seen[r] {
				continue
			}
			seen[r] = true
			if c := s.Task(r); c != nil && c.Parent == id {
				total++
				if c.Status == StatusClosed {
					closed++
				}
			}
		}
		if total > 0 && total == closed {
			eligible++
		}
	}
	return eligible
}
