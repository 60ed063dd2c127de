package workqueue

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spoolhq/spool/internal/table"
)

// The tasks' table ends its index with a summary (table.FinishSummary):
// the counts spool stats starts from and a byte per task, so that stats
// reads neither the index (megabytes at 100,000 tasks) nor a task whose
// answer cannot have changed since the save.
//
//	summary := comment counter | tasks | open | labelled | plain |
//	           a flag byte per task | the others' positions and spans

// A task's flags in the summary.
const (
	sumOpen     = 1 << iota // not closed
	sumLabelled             // the blocked label
	sumPlain                // plainReady: ready unless its history holds it back
)

// other is an open task neither plain nor waiting by itself (claimed, or
// with a parent): stats reads it, at its span in the file.
type other struct {
	pos      int
	from, to int64
}

// summaryWriter gathers the summary as WriteState writes the records.
type summaryWriter struct {
	flags                    []byte
	nOpen, nLabelled, nPlain int
	others                   []other
	openOrder                table.Section // where the open tasks' order is (openorder.go)
	beads                    table.Section // bd stats' section (beads_stats.go)
	gate                     table.Section // the open tasks' labels and types (gate.go)
}

func newSummaryWriter(n int) *summaryWriter { return &summaryWriter{flags: make([]byte, 0, n)} }

// open records the task at i, just written to tw, as open.
func (w *summaryWriter) open(i int, labelled, plain, waits bool, tw *table.Writer) {
	f := byte(sumOpen)
	w.nOpen++
	if labelled {
		f |= sumLabelled
		w.nLabelled++
	}
	if plain {
		f |= sumPlain
		w.nPlain++
	}
	w.flags = append(w.flags, make([]byte, i+1-len(w.flags))...)
	w.flags[i] = f
	if !plain && !waits {
		from, to := tw.Span()
		w.others = append(w.others, other{i, from, to})
	}
}

// encode writes the summary of a table of n tasks.
func (w *summaryWriter) encode(seq int64, n int) func(*table.Enc) {
	return func(e *table.Enc) {
		e.Int(seq)
		for _, v := range []int{n, w.nOpen, w.nLabelled, w.nPlain} {
			e.Uint(uint64(v))
		}
		e.Buf = append(e.Buf, w.flags...)
		e.Buf = append(e.Buf, make([]byte, n-len(w.flags))...) // closed tasks last
		e.Uint(uint64(len(w.others)))
		for _, o := range w.others {
			e.Uint(uint64(o.pos))
			e.Uint(uint64(o.from))
			e.Uint(uint64(o.to - o.from))
		}
		w.openOrder.Encode(e)
		w.beads.Encode(e)
		w.gate.Encode(e)
	}
}

// taskSummary is the summary as read.
type taskSummary struct {
	*table.Summary
	seq                         int64
	n, nOpen, nLabelled, nPlain int
	flags                       string
	others                      []other
	openOrder, beads, gate      table.Section
}

// lazyTasks is a tasks' table opened in two steps: its summary when the
// snapshot is opened, its index when a command first needs it.
type lazyTasks struct {
	sum  *taskSummary
	r    io.ReaderAt
	size int64
	once sync.Once
	t    *taskTable
	err  error

	orderOnce sync.Once
	order     *openOrder // the open tasks' order, read without the index
	orderErr  error

	loaded atomic.Pointer[taskTable] // t, once read

	beadsLazy
}

func openLazyTasks(r io.ReaderAt, size int64, eager bool) (*lazyTasks, error) {
	ts, err := table.OpenSummary(r, size, tasksMagic)
	if err != nil {
		return nil, err
	}
	sum := &taskSummary{Summary: ts, seq: ts.Int()}
	for _, v := range []*int{&sum.n, &sum.nOpen, &sum.nLabelled, &sum.nPlain} {
		*v = ts.Count()
	}
	sum.flags = ts.Raw(sum.n)
	sum.others = make([]other, ts.Count())
	for k := range sum.others {
		o := &sum.others[k]
		o.pos, o.from = int(ts.Uint()), int64(ts.Uint())
		o.to = o.from + int64(ts.Uint())
		if o.pos >= sum.n {
			ts.Fail()
		}
	}
	sum.openOrder = table.DecodeSection(ts.Dec)
	sum.beads = table.DecodeSection(ts.Dec)
	sum.gate = table.DecodeSection(ts.Dec)
	if err := ts.End(); err != nil || sum.nOpen > sum.n || sum.nLabelled > sum.nOpen || sum.nPlain > sum.nOpen {
		return nil, table.ErrDamaged
	}
	l := &lazyTasks{sum: sum, r: r, size: size}
	if eager {
		if _, err := l.load(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// load reads the index, once.
func (l *lazyTasks) load() (*taskTable, error) {
	l.once.Do(func() {
		t, seq, err := openTasks(l.r, l.size)
		if err == nil && (t.Len() != l.sum.n || seq != l.sum.seq || len(t.open) != l.sum.nOpen) {
			err = table.ErrDamaged
		}
		if err == nil {
			t.keep = l
			l.loaded.Store(t)
		}
		l.t, l.err = t, err
	})
	return l.t, l.err
}

// find is where task id's record is in the snapshot: its position, and
// a reader of the record; -1 when the snapshot has none. Until a command
// reads the index, the summary's fences find it (table.Summary.Find): a
// few KB rather than the index's megabytes.
func (k *trackerSide) find(id string) (int, func() *table.Dec) {
	if t := k.lazy.loaded.Load(); t != nil {
		i := t.Find(id)
		return i, func() *table.Dec { return t.Record(i) }
	}
	i, from, to, err := k.lazy.sum.Find(id)
	if err != nil {
		panic(table.CorruptIndex("the tasks", err))
	}
	return i, k.lazy.record(id, from, to)
}

// record reads task id's record at [from, to), which the summary's groups
// name; a damaged one panics with Corrupt, as Table.Record does.
func (l *lazyTasks) record(id string, from, to int64) func() *table.Dec {
	return func() *table.Dec {
		d, err := l.sum.Record(from, to)
		if err != nil {
			panic(table.Corrupt(id, err))
		}
		return d
	}
}

// isOpen reports whether the task at position i was not closed when the
// snapshot was saved, from the summary's flags.
func (k *trackerSide) isOpen(i int) bool { return k.lazy.sum.flags[i]&sumOpen != 0 }

// table is the snapshot's tasks table, its index read on first use; nil
// when m is whole. An index that does not read is corrupt_snapshot, as a
// record that does not is.
func (k *trackerSide) table() *taskTable {
	if k.lazy == nil {
		return nil
	}
	t, err := k.lazy.load()
	if err != nil {
		panic(table.CorruptIndex("the tasks", err))
	}
	return t
}

// summaryStats is NativeStats when no task was decoded or changed since
// the table was saved: the summary's counts, corrected by what they cannot
// answer for: the others, read, and the open tasks with a history, whose
// status can change with time. The history's ids are found among the
// table's by one pass over them in order (1 MB at 100,000 tasks, through a
// small buffer), not by the index. Under a gate, adm holds the positions
// of the open tasks it admits (nil: every task).
func (s *State) summaryStats(p Policy, g Gate, now time.Time, adm bitset) Stats {
	sum := s.trk.lazy.sum
	st := Stats{TotalSeen: sum.n, Completed: sum.n - sum.nOpen, Blocked: sum.nLabelled, Pending: sum.nOpen - sum.nLabelled}
	admitted := func(i int) bool { return adm == nil || adm.has(i) }
	ready := sum.nPlain
	if adm != nil {
		ready = 0
		for i := range sum.n {
			if sum.flags[i]&sumPlain != 0 && adm.has(i) {
				ready++
			}
		}
	}
	memo := map[string]bool{}
	// The tasks decoded or changed since the save, and those whose saved
	// records name one closed or reopened since: taken out of the counts
	// by their saved flags, counted below as they are.
	fresh := make(map[string]bool, len(s.trk.m))
	for id := range s.trk.m {
		fresh[id] = true
	}
	if len(fresh) > 0 {
		for id := range s.namedByClosing(nil, true) {
			fresh[id] = true
		}
	}
	freshAt := newBitset(sum.n) // fresh, by position: visit asks of every entry
	for id := range fresh {
		i := s.position(id)
		if i < 0 {
			continue // new since the save
		}
		freshAt.set(i)
		st.TotalSeen--
		switch f := sum.flags[i]; {
		case f&sumOpen == 0:
			st.Completed--
		case f&sumLabelled != 0:
			st.Blocked--
		default:
			st.Pending--
		}
		if sum.flags[i]&sumPlain != 0 && admitted(i) {
			ready--
		}
	}
	for _, o := range sum.others {
		if freshAt.has(o.pos) {
			continue
		}
		d, err := sum.Record(o.from, o.to)
		if err != nil {
			panic(table.Corrupt(fmt.Sprintf("the task at %d", o.pos), err))
		}
		if s.readyNow(p, g, decodeTask(d), memo, now) {
			ready++
		}
	}
	ids := sum.IDs()
	if ids.Len() != sum.n {
		panic(table.CorruptIndex("the tasks", table.ErrDamaged))
	}
	var stub Entry
	open, labelled := Task{Status: StatusOpen}, Task{Status: StatusOpen, Labels: []string{BlockedLabel}}
	visit := func(id string, h *Entry, j int) {
		i := ids.Seek(id)
		if i >= 0 && freshAt.has(i) || i < 0 && fresh[id] {
			return // counted below, as it is now
		}
		if i >= 0 && sum.flags[i]&sumOpen == 0 {
			return // closed: completed whatever its history says, and counted so
		}
		if h == nil {
			h = s.hst.table.statsEntry(j, &stub)
		}
		if i < 0 {
			p.count(&st, nil, h, now) // no such task
			return
		}
		f := sum.flags[i]
		st.TotalSeen--
		t := &open // as it counts: open, with the blocked label or not
		if f&sumLabelled != 0 {
			st.Blocked--
			t = &labelled
		} else {
			st.Pending--
		}
		p.count(&st, t, h, now)
		if f&sumPlain != 0 && admitted(i) && p.Skip(Candidate{}, h, Gate{}, now) != "" {
			ready-- // plain and admitted, but its history holds it back
		}
	}
	changed := slices.Sorted(maps.Keys(s.hst.m)) // entries decoded or changed since the history's table
	k := 0
	if ht := s.hst.table; ht != nil {
		for j, id := range ht.IDs {
			for ; k < len(changed) && changed[k] < id; k++ {
				visit(changed[k], s.hst.m[changed[k]], -1)
			}
			if k == len(changed) || changed[k] != id { // else visited from the map
				visit(id, nil, j)
			}
		}
	}
	for ; k < len(changed); k++ {
		visit(changed[k], s.hst.m[changed[k]], -1)
	}
	if err := ids.Done(); err != nil {
		panic(table.CorruptIndex("the tasks", err))
	}
	for id := range fresh {
		if t := s.Task(id); t != nil {
			p.count(&st, t, s.Entry(id), now)
			if s.readyNow(p, g, t, memo, now) {
				ready++
			}
		}
	}
	st.CurrentlyReady = ready
	return st
}

// bitset is a set of positions in a table.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// The history's index adds what stats needs of every entry, so that it
// reads no record: its class (histClass), and the waiting entries whole.

// classStatuses are the statuses a class names, by its number less one:
// the snapshot's format, so only ever appended to.
var classStatuses = []HistStatus{HistPending, HistCompleted, HistAbandoned, HistBlocked}

// histClass is what stats needs of an entry whose answer depends neither
// on the time nor on the policy (it neither holds a claim nor failed): its
// status (1 + its place in classStatuses) and, in the top bit, its
// Blocked. 0: read the entry.
func histClass(h *Entry) byte {
	i := slices.Index(classStatuses, h.Status)
	if i < 0 {
		return 0
	}
	c := byte(1 + i)
	if h.Blocked {
		c |= 0x80
	}
	return c
}

// encodeStatsIndex writes the history's part for stats: every entry's
// class, then the waiting entries' records.
func encodeStatsIndex(w *table.Enc, all map[string]*Entry, ids []string, waiting []uint32) {
	for _, id := range ids {
		w.Buf = append(w.Buf, histClass(all[id]))
	}
	var e table.Enc
	for _, i := range waiting {
		e.Buf = e.Buf[:0]
		encodeEntry(&e, all[ids[i]])
		w.Uint(uint64(len(e.Buf)))
		w.Buf = append(w.Buf, e.Buf...)
	}
}

// readStatsIndex reads what encodeStatsIndex wrote, for n entries.
func (h *historyTable) readStatsIndex(rd *table.Dec, n int) error {
	h.class = rd.Raw(n)
	for i := range len(h.class) {
		if c := h.class[i] &^ 0x80; h.class[i] != 0 && (c == 0 || int(c) > len(classStatuses)) {
			return table.ErrDamaged
		}
	}
	h.whole = make([]string, len(h.waiting))
	for k := range h.whole {
		h.whole[k] = rd.Str()
	}
	return rd.Err()
}

// statsEntry is entry j of the table as stats needs it, in e (not kept):
// for a settled class, an entry holding only its status, else the whole
// entry.
func (h *historyTable) statsEntry(j int, e *Entry) *Entry {
	if h.class[j] != 0 {
		e = h.statsEntryClass(j, e)
		e.ID = h.IDs[j]
		return e
	}
	if k, ok := slices.BinarySearch(h.waiting, uint32(j)); ok {
		return decodeEntryInto(table.NewDec(h.whole[k]), e)
	}
	return decodeEntry(h.Record(j))
}

// statsEntryClass is the entry of class h.class[j] (not 0), in e.
func (h *historyTable) statsEntryClass(j int, e *Entry) *Entry {
	c := h.class[j]
	*e = Entry{Status: classStatuses[c&^0x80-1], Blocked: c&0x80 != 0}
	return e
}
