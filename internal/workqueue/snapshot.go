package workqueue

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/table"
	"github.com/spoolhq/spool/projections"
)

// The snapshots are tables (internal/table) of compact binary records, not JSON:
// a command opens the index and decodes only the tasks it touches.

const (
	tasksMagic = "spool-tasks-27\n"
	queueMagic = "spool-history-10\n"
)

// encodeDetail writes a task's detail as one string (w.Str's form), so
// that decoding a task can keep it as a substring. It is encoded in
// place, its length put before it after: a save writes 100,000 of them.
func encodeDetail(w *table.Enc, x *TaskDetail) {
	start := len(w.Buf)
	encodeDetailFields(w, x) // fields_gen.go
	w.Uint(uint64(x.numComments))
	w.Buf = append(w.Buf, x.comments...) // as AddComment encoded them
	var n [binary.MaxVarintLen64]byte
	w.Buf = slices.Insert(w.Buf, start, binary.AppendUvarint(n[:0], uint64(len(w.Buf)-start))...)
}

// decodeDetail reads what encodeDetail wrote; the record it came from
// passed its checksum, so damage here is a crafted file or a bug.
func decodeDetail(id, raw string) *TaskDetail {
	r := table.NewDec(raw)
	x := &TaskDetail{}
	decodeDetailFields(r, x) // fields_gen.go
	// The comments stay encoded; they are checked, not decoded.
	x.numComments = r.Count()
	rest := r.RestBytes()
	if x.numComments > 0 {
		x.comments = rest
	}
	c := table.NewDec(raw[len(raw)-len(rest):])
	for range x.numComments {
		readComment(c)
	}
	if err := cmp.Or(r.End(), c.End()); err != nil {
		panic(table.Corrupt(id, err))
	}
	return x
}

// MarshalState is what WriteState writes.
func (p *TasksProjection) MarshalState() ([]byte, error) { return marshal(p) }

// WriteState writes the tasks as a table (internal/table): a record per task, in
// id order, holding the ids of the tasks that name it (as parent, blocker
// or link); the index adds the comment counter and the tasks not closed,
// in ready's order, which ready and next walk from the top, and names the
// listing index (listfast.go), a section of its own; the summary stats
// reads ends it. Tasks are streamed (eachTask), twice: first for who
// names whom.
func (p *TasksProjection) WriteState(out io.Writer) error {
	s := p.State()
	// The lists are held by pointer: assigning to a map key that exists
	// stores the new key string, and t's strings are the scan's.
	type naming struct {
		ids []string // the tasks naming it
		n   int      // the records naming it: DependentCounts, for the listing index
	}
	refs := map[string]*naming{}
	n := 0
	more := s.decodedIDs()
	for t := range s.eachTaskOf(more, false) { // in id order, so each list is sorted
		n++
		var id string // cloned once, if t names any task: t is the scan's
		name := func(to string) {
			if id == "" {
				id = strings.Clone(t.ID)
			}
			if l := refs[to]; l == nil {
				refs[strings.Clone(to)] = &naming{[]string{id}, 1}
			} else if l.n++; l.ids[len(l.ids)-1] != id {
				l.ids = append(l.ids, id)
			}
		}
		if t.Parent != "" {
			name(t.Parent)
		}
		for _, d := range t.Blockers {
			name(d.ID)
		}
		for _, l := range t.Links {
			name(l.ID)
		}
	}
	if err := s.trk.spill.seal(s, more); err != nil {
		return err
	}
	lst := newListingSpool(p.scratchDir(), n)
	defer lst.close()
	tw := table.NewWriter(out, tasksMagic, n)
	sum := newSummaryWriter(n)      // what stats reads (stats_summary.go)
	beads := newBeadsStatsWriter(n) // what bd stats reads (beads_stats.go)
	gate := newGateWriter()         // each open task's labels and type (gate.go)
	type key struct {
		pos       uint32
		priority  int
		createdAt time.Time
		id        string
		waits     bool
		labelled  bool // the blocked label
		plain     bool // plainReady
		gate      gateSpan
	}
	var open []key
	var closed []key     // with open, every task: the listing index's order
	var listed table.Enc // the listing index's per-task part (listIndex)
	i := 0
	for t := range s.eachTask(more) {
		id := strings.Clone(t.ID) // the writer keeps it for the index
		var named naming
		if l := refs[id]; l != nil {
			named = *l
		}
		var size int
		tw.Record(id, func(w *table.Enc) {
			from, to := encodeTask(w, t, named.ids)
			lst.add(w.Buf[from:to])
			size = to - from
		})
		beads.add(s, i, id, t)
		listed.Str(t.Status)
		listed.Int(int64(t.Priority))
		listed.Uint(uint64(named.n))
		listed.Uint(uint64(size))
		if t.Status == StatusClosed {
			closed = append(closed, key{pos: uint32(i), priority: t.Priority, createdAt: t.CreatedAt, id: id})
		} else {
			// Which of them wait by themselves (the blocked label, a
			// blocker not closed), a bit each: ready and next pass them unread.
			open = append(open, key{uint32(i), t.Priority, t.CreatedAt, id, waitsItself(t, s), t.HasLabel(BlockedLabel), plainReady(t, s), gate.add(t)})
			sum.open(i, open[len(open)-1].labelled, open[len(open)-1].plain, open[len(open)-1].waits, tw)
		}
		i++
	}
	byTaskLess := func(a, b key) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), a.createdAt.Compare(b.createdAt), strings.Compare(a.id, b.id))
	}
	slices.SortFunc(open, byTaskLess)
	slices.SortFunc(closed, byTaskLess)
	order := make([]uint32, 0, n)
	for o, c := 0, 0; o < len(open) || c < len(closed); { // the two sorted lists merged
		if c == len(closed) || o < len(open) && byTaskLess(open[o], closed[c]) < 0 {
			order = append(order, open[o].pos)
			o++
		} else {
			order = append(order, closed[c].pos)
			c++
		}
	}
	listings, err := lst.inOrder(order)
	if err != nil {
		return err
	}
	listingsAt := tw.SectionOf(listings)
	if lst.err != nil {
		return lst.err
	}
	index := table.Enc{Buf: make([]byte, 0, 3*n+len(listed.Buf))}
	for _, i := range order {
		index.Uint(uint64(i))
	}
	listing := tw.Section(append(index.Buf, listed.Buf...)) // read by the lists alone (listIndex)
	sum.beads = tw.Section(beads.encode(tw.IDs()))
	sum.openOrder = tw.Section(encodeOpenOrder(len(open), func(k int) uint32 { return open[k].pos }, func(k int) bool { return open[k].waits }))
	sum.gate = tw.Section(gate.encode(len(open), func(k int) gateSpan { return open[k].gate }))
	return tw.FinishSummary(func(w *table.Enc) {
		w.Int(s.trk.commentSeq)
		w.Uint(uint64(len(open)))
		for _, k := range open {
			w.Uint(uint64(k.pos))
		}
		for _, bit := range []func(key) bool{
			func(k key) bool { return k.waits },
			func(k key) bool { return k.labelled }, // stats counts them without a record read
			func(k key) bool { return k.plain },
		} {
			bits := make([]byte, (len(open)+7)/8)
			for j, k := range open {
				if bit(k) {
					bits[j/8] |= 1 << (j % 8)
				}
			}
			w.Buf = append(w.Buf, bits...)
		}
		for _, k := range open { // bd ready's orders by age, without a record read
			w.Time(k.createdAt)
		}
		listing.Encode(w)
		listingsAt.Encode(w)
	}, sum.encode(s.trk.commentSeq, i))
}

// plainReady reports whether t is ready by itself, for as long as neither it
// nor one of its blockers changes: open, with no parent, no blocked label,
// and every blocker a task that is closed (a blocker that is not a task
// yet may become one).
func plainReady(t *Task, s *State) bool {
	if t.Status != StatusOpen || t.Parent != "" || t.HasLabel(BlockedLabel) {
		return false
	}
	for _, d := range t.Blockers {
		if !s.closedTask(d.ID) {
			return false
		}
	}
	return true
}

// waitsItself reports whether t is blocked by its label or a blocker of
// its own, not only through a parent: such a task stays blocked until it
// changes or one of its blockers does.
func waitsItself(t *Task, s *State) bool {
	if t.HasLabel(BlockedLabel) {
		return true
	}
	for _, d := range t.Blockers {
		if s.notClosed(d.ID) {
			return true
		}
	}
	return false
}

// encodeTask writes a task's record: its listing (listing.go), checked
// alone, then the table's fields (fields_gen.go), the dependencies, the
// ids of the tasks naming it, and the detail. It returns where in w.Buf
// the listing lies, checksum and length included, for the section of
// listings (listorder.go).
func encodeTask(w *table.Enc, t *Task, refs []string) (from, to int) {
	at := w.BeginChecked() // first, and checked alone: lists read it alone
	if t.listCore != "" {
		w.Str(t.listCore)
		w.Buf = append(w.Buf, t.listTail...)
	} else {
		appendListing(w, t)
	}
	w.EndChecked(at)
	from, to = at-4, len(w.Buf)
	encodeTaskFields(w, t)
	w.Uint(uint64(len(t.Blockers)))
	for _, d := range t.Blockers {
		w.Str(d.ID)
		w.Time(d.At)
		w.Str(d.By)
	}
	w.Uint(uint64(len(t.Links)))
	for _, l := range t.Links {
		w.Str(l.ID)
		w.Str(l.Type)
		w.Time(l.At)
		w.Str(l.By)
	}
	w.Strs(refs)
	if t.detail == nil {
		w.Str(t.rawDetail) // never decoded: copy it as it was
	} else {
		encodeDetail(w, t.detail)
	}
	return from, to
}

// decodeTask reads what encodeTask wrote, leaving the detail encoded.
func decodeTask(r *table.Dec) *Task {
	t, refs := decodeRecord(r)
	t.baseRefs = refs
	return t
}

// decodeRecord reads what encodeTask wrote: the task, and the ids of the
// tasks that name it (baseRefs).
func decodeRecord(r *table.Dec) (*Task, []string) {
	t := &Task{}
	// The record was checked whole: its listing's own checksum is for
	// the lists, which read the listing alone (listingAt).
	listing := r.Part()
	var ok bool
	t.listCore, t.listTail, ok = splitListing(listing, r.Err() == nil)
	decodeTaskFields(r, t) // fields_gen.go
	if !ok {
		panic(table.Corrupt(t.ID, table.ErrDamaged))
	}
	if k := r.Count(); k > 0 {
		t.Blockers = make([]Dep, k)
		for j := range t.Blockers {
			t.Blockers[j] = Dep{ID: r.Str(), At: r.Time(), By: r.Str()}
		}
	}
	if k := r.Count(); k > 0 {
		t.Links = make([]Link, k)
		for j := range t.Links {
			t.Links[j] = Link{ID: r.Str(), Type: r.Str(), At: r.Time(), By: r.Str()}
		}
	}
	refs := r.Strs()
	t.rawDetail = r.Str() // decoded by Detail, if ever
	if err := r.End(); err != nil {
		panic(table.Corrupt(t.ID, err))
	}
	return t, refs
}

// MarshalState is what WriteState writes.
func (p *QueueProjection) MarshalState() ([]byte, error) { return marshal(p) }

// marshal returns what p writes.
func marshal(p projections.StateWriter) ([]byte, error) {
	var b bytes.Buffer
	err := p.WriteState(&b)
	return b.Bytes(), err
}

// WriteState writes the history as a table; the index adds the entries
// holding a claim or failed (waiting for a lease or a backoff to end), which
// next's expiry and its wake-up time look at.
func (p *QueueProjection) WriteState(out io.Writer) error {
	s := p.State()
	all := s.allHistory()
	hids := make([]string, 0, len(all))
	for id := range all {
		hids = append(hids, id)
	}
	sort.Strings(hids)
	tw := table.NewWriter(out, queueMagic, len(hids))
	var waiting, hooks []uint32
	for i, id := range hids {
		h := all[id]
		tw.Record(id, func(w *table.Enc) { encodeEntry(w, h) })
		if h.Status == HistWorking || h.Status == HistFailed {
			waiting = append(waiting, uint32(i))
		}
		if len(h.Hooks) > 0 {
			hooks = append(hooks, uint32(i))
		}
	}
	return tw.Finish(func(w *table.Enc) {
		w.Uint(uint64(len(waiting)))
		for _, i := range waiting {
			w.Uint(uint64(i))
		}
		for _, i := range waiting { // what next's expiry asks, without a record read
			h := all[hids[i]]
			w.Bool(h.Status == HistWorking)
			w.Time(h.LeaseUntil)
		}
		w.Uint(uint64(len(hooks))) // what a command asks after its append: any hook left to run?
		for _, i := range hooks {
			w.Uint(uint64(i))
		}
		encodeStatsIndex(w, all, hids, waiting) // stats_summary.go
	})
}

func encodeEntry(w *table.Enc, h *Entry) {
	for _, str := range []string{h.ID, string(h.Status), h.LastError, h.Worker, h.Actor, h.BlockReason} {
		w.Str(str)
	}
	w.Int(int64(h.Attempts))
	w.Int(int64(h.Failures))
	w.Int(int64(h.Priority))
	w.Time(h.LastAttempt)
	w.Time(h.LastEndedAt)
	w.Time(h.LastFailureAt)
	w.Time(h.LeaseUntil)
	w.Time(h.QueuedAt)
	w.Bool(h.Blocked)
	encodeSyncs(w, h.Pending)
	encodeSyncs(w, h.SyncFailed)
	w.Uint(uint64(len(h.Hooks)))
	for _, p := range h.Hooks {
		for _, str := range []string{p.Request, p.Writer, p.Hook, p.Event, p.Data, p.Actor} {
			w.Str(str)
		}
		w.Time(p.At)
		w.Bool(p.Started)
	}
	w.Bool(h.Demoted)
	w.Int(int64(h.PriorityBefore))
	w.Int(int64(h.DemotedTo))
}

func decodeEntry(r *table.Dec) *Entry { return decodeEntryInto(r, &Entry{}) }

// decodeEntryInto is decodeEntry into h, for a reader that keeps none.
func decodeEntryInto(r *table.Dec, h *Entry) *Entry {
	*h = Entry{}
	for _, p := range []*string{&h.ID, (*string)(&h.Status), &h.LastError, &h.Worker, &h.Actor, &h.BlockReason} {
		*p = r.Str()
	}
	h.Attempts, h.Failures, h.Priority = int(r.Int()), int(r.Int()), int(r.Int())
	h.LastAttempt, h.LastEndedAt, h.LastFailureAt, h.LeaseUntil, h.QueuedAt = r.Time(), r.Time(), r.Time(), r.Time(), r.Time()
	h.Blocked = r.Bool()
	h.Pending, h.SyncFailed = decodeSyncs(r), decodeSyncs(r)
	if n := r.Count(); n > 0 {
		h.Hooks = make([]PendingHook, n)
		for i := range h.Hooks {
			p := &h.Hooks[i]
			p.Request, p.Writer, p.Hook, p.Event, p.Data, p.Actor = r.Str(), r.Str(), r.Str(), r.Str(), r.Str(), r.Str()
			p.At, p.Started = r.Time(), r.Bool()
		}
	}
	h.Demoted, h.PriorityBefore, h.DemotedTo = r.Bool(), int(r.Int()), int(r.Int())
	if err := r.End(); err != nil {
		panic(table.Corrupt(h.ID, err))
	}
	return h
}

// positions reads a list of record positions below n.
func positions(r *table.Dec, n int) ([]uint32, error) {
	k := r.Count()
	out := make([]uint32, k)
	for i := range out {
		v := r.Uint()
		if v >= uint64(n) {
			return nil, table.ErrDamaged
		}
		out[i] = uint32(v)
	}
	return out, r.Err()
}

// taskTable is the tasks' snapshot: the table, and the tasks not closed in
// ready's order (positions in the table).
type taskTable struct {
	*table.Table
	open     []uint32
	waits    string        // a bit per open task: waitsItself when saved
	labelled string        // a bit per open task: the blocked label
	plain    string        // a bit per open task: plainReady when saved
	created  string        // each open task's creation time, 8 bytes each (table.Enc.Time)
	listing  table.Section // the listing index, outside the index (listIndex)
	listings table.Section // every listing again, in list order (listorder.go)
	openBits []uint64      // open as a set, built on first use

	keep *lazyTasks // what keeps the file open while the table reads it
}

// createdAt is open[k]'s creation time, as an int64 that orders as the
// times do (the zero time first); it is read only by the orders that need it.
func (t *taskTable) createdAt(k int) int64 {
	return int64(binary.LittleEndian.Uint64([]byte(t.created[8*k : 8*k+8])))
}

// waitsAt reports whether open[k] waited by itself when the table was saved.
func (t *taskTable) waitsAt(k int) bool { return t.waits[k/8]&(1<<(k%8)) != 0 }

// labelledAt reports whether open[k] had the blocked label when saved.
func (t *taskTable) labelledAt(k int) bool { return t.labelled[k/8]&(1<<(k%8)) != 0 }

// plainAt reports whether open[k] was plainReady when saved.
func (t *taskTable) plainAt(k int) bool { return t.plain[k/8]&(1<<(k%8)) != 0 }

// isOpen reports whether the task at position i was not closed when the
// table was saved.
func (t *taskTable) isOpen(i int) bool {
	if t.openBits == nil {
		t.openBits = make([]uint64, (t.Len()+63)/64)
		for _, p := range t.open {
			t.openBits[p/64] |= 1 << (p % 64)
		}
	}
	return t.openBits[i/64]&(1<<(i%64)) != 0
}

// historyTable is the history's snapshot: the table, and the entries that
// held a claim or had failed.
type historyTable struct {
	*table.Table
	waiting []uint32
	working []bool      // waiting[k] held a claim
	leases  []time.Time // until when
	hooks   []uint32    // the entries with hook requests not finished

	class string   // stats's: a byte per entry (histClass)
	whole []string // stats's: the waiting entries' records
}

func openTasks(r io.ReaderAt, size int64) (*taskTable, int64, error) {
	var seq int64
	var open []uint32
	var waits, labelled, plain, created string
	var listing, listings table.Section
	t, err := table.Open(r, size, tasksMagic, func(rd *table.Dec, n int) error {
		seq = rd.Int()
		var err error
		if open, err = positions(rd, n); err != nil {
			return err
		}
		waits = rd.Raw((len(open) + 7) / 8)
		labelled = rd.Raw((len(open) + 7) / 8)
		plain = rd.Raw((len(open) + 7) / 8)
		created = rd.Raw(8 * len(open))
		listing = table.DecodeSection(rd)
		listings = table.DecodeSection(rd)
		table.SkipSummary(rd)
		return rd.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return &taskTable{Table: t, open: open, waits: waits, labelled: labelled, plain: plain, created: created, listing: listing, listings: listings}, seq, nil
}

func openHistory(r io.ReaderAt, size int64) (*historyTable, error) {
	h := &historyTable{}
	t, err := table.Open(r, size, queueMagic, func(rd *table.Dec, n int) error {
		var err error
		if h.waiting, err = positions(rd, n); err != nil {
			return err
		}
		h.working = make([]bool, len(h.waiting))
		h.leases = make([]time.Time, len(h.waiting))
		for k := range h.waiting {
			h.working[k], h.leases[k] = rd.Bool(), rd.Time()
		}
		if h.hooks, err = positions(rd, n); err != nil {
			return err
		}
		if err := h.readStatsIndex(rd, n); err != nil {
			return err
		}
		return rd.Err()
	})
	if err != nil {
		return nil, err
	}
	h.Table = t
	return h, nil
}

// UnmarshalState opens the tasks' table on b, its index checked; nothing
// is decoded yet.
func (p *TasksProjection) UnmarshalState(b []byte) error {
	return table.OpenBytes(b, func(r io.ReaderAt, size int64) (*lazyTasks, error) { return p.open(r, size, true) })
}

// OpenState opens the tasks' table on the snapshot file, reading its
// summary alone: the index is read when a command first needs it.
func (p *TasksProjection) OpenState(f projections.SnapshotFile, off, size int64) error {
	return table.OpenOn(f, off, size, func(r io.ReaderAt, size int64) (*lazyTasks, error) { return p.open(r, size, false) })
}

// open opens the table, its index read now if eager, and returns it, nil
// when it is empty.
func (p *TasksProjection) open(r io.ReaderAt, size int64, eager bool) (*lazyTasks, error) {
	l, err := openLazyTasks(r, size, eager)
	if err != nil {
		return nil, err
	}
	if p.s == nil {
		p.s = NewState()
	}
	p.s.trk.m, p.s.trk.commentSeq, p.s.trk.lazy = map[string]*Task{}, l.sum.seq, nil
	p.changed.reset()
	if l.sum.n == 0 {
		return nil, nil
	}
	p.s.trk.lazy = l
	return l, nil
}

// CheckRecords checks the checksum of every task the table holds, and of
// the lists' sections (projections.RecordChecker).
func (p *TasksProjection) CheckRecords() {
	if p.s != nil && p.s.trk.lazy != nil {
		tt := p.s.trk.table()
		tt.Check()
		if err := tt.CheckSection(tt.listing); err != nil {
			panic(table.CorruptSection("listing index", err))
		}
		if err := tt.CheckSection(tt.listings); err != nil {
			panic(table.CorruptSection("section of listings", err))
		}
		if _, err := p.s.trk.lazy.beadsStats(); err != nil {
			panic(table.CorruptSection("bd stats' section", err))
		}
		if a, ok := p.s.trk.lazy.admits(Gate{}, ReadyFilter{}); !ok || !a.whole() {
			panic(table.CorruptSection("section of labels and types", table.ErrDamaged))
		}
	}
}

// CheckRecords checks every entry the table holds.
func (p *QueueProjection) CheckRecords() {
	if p.s != nil && p.s.hst.table != nil {
		p.s.hst.table.Check()
	}
}

// UnmarshalState opens the history's table on b.
func (p *QueueProjection) UnmarshalState(b []byte) error {
	return table.OpenBytes(b, p.open)
}

// OpenState opens the history's table on the snapshot file.
func (p *QueueProjection) OpenState(f projections.SnapshotFile, off, size int64) error {
	return table.OpenOn(f, off, size, p.open)
}

func (p *QueueProjection) open(r io.ReaderAt, size int64) (*table.Table, error) {
	t, err := openHistory(r, size)
	if err != nil {
		return nil, err
	}
	if p.s == nil {
		p.s = NewState()
	}
	p.s.hst.m, p.s.hst.table = map[string]*Entry{}, nil
	p.changed.reset()
	if t.Len() == 0 {
		return nil, nil
	}
	p.s.hst.table = t
	return t.Table, nil
}

func encodeSyncs(w *table.Enc, list []PendingSync) {
	w.Uint(uint64(len(list)))
	for _, p := range list {
		for _, str := range []string{p.Request, p.Op, p.Reason, p.Label, p.LastError} {
			w.Str(str)
		}
		w.Int(int64(p.Failures))
		w.Time(p.LastFailedAt)
		w.Bool(p.Priority != nil)
		if p.Priority != nil {
			w.Int(int64(*p.Priority))
		}
	}
}

func decodeSyncs(r *table.Dec) []PendingSync {
	n := r.Count()
	if n == 0 {
		return nil
	}
	list := make([]PendingSync, n)
	for i := range list {
		p := &list[i]
		p.Request, p.Op, p.Reason, p.Label, p.LastError = r.Str(), r.Str(), r.Str(), r.Str(), r.Str()
		p.Failures = int(r.Int())
		p.LastFailedAt = r.Time()
		if r.Bool() {
			prio := int(r.Int())
			p.Priority = &prio
		}
	}
	return list
}
