package workqueue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/spoolhq/spool/projections"
)

// The snapshots are tables (table.go) of compact binary records, not JSON:
// a command opens the index and decodes only the tasks it touches.

const (
	tasksMagic = "spool-tasks-9\n"
	queueMagic = "spool-history-5\n"
)

var (
	errSnapshot = errors.New("snapshot is damaged")
	errChecksum = errors.New("its checksum does not match")
)

// encodeDetail writes a task's detail as one blob, so that decoding a task
// can keep it as a substring.
func encodeDetail(x *TaskDetail) string {
	w := &writer{}
	for _, s := range []string{x.Description, x.Design, x.Acceptance, x.Notes, x.Assignee, x.CreatedBy, x.Owner, x.CloseReason, x.ParentBy} {
		w.str(s)
	}
	w.time(x.UpdatedAt)
	w.time(x.ClosedAt)
	w.time(x.ParentAt)
	w.uint(uint64(len(x.Comments)))
	for _, c := range x.Comments {
		w.int(c.ID)
		w.str(c.Author)
		w.str(c.Text)
		w.time(c.At)
	}
	return string(w.buf)
}

// decodeDetail reads what encodeDetail wrote; the record it came from
// passed its checksum, so damage here is a crafted file or a bug.
func decodeDetail(id, raw string) *TaskDetail {
	r := &reader{s: raw}
	x := &TaskDetail{Description: r.str(), Design: r.str(), Acceptance: r.str(), Notes: r.str(), Assignee: r.str(),
		CreatedBy: r.str(), Owner: r.str(), CloseReason: r.str(), ParentBy: r.str()}
	x.UpdatedAt, x.ClosedAt, x.ParentAt = r.time(), r.time(), r.time()
	if n := r.count(); n > 0 {
		x.Comments = make([]Comment, n)
		for i := range x.Comments {
			x.Comments[i] = Comment{ID: r.int(), Author: r.str(), Text: r.str(), At: r.time()}
		}
	}
	if err := r.end(); err != nil {
		panic(corruptSnapshot(id, err))
	}
	return x
}

// MarshalState is what WriteState writes.
func (p *TasksProjection) MarshalState() ([]byte, error) { return marshal(p) }

// WriteState writes the tasks as a table (table.go): a record per task, in
// id order, holding the ids of the tasks that name it (as parent, blocker
// or link); the index adds the comment counter and the tasks not closed,
// in ready's order, which ready and next walk from the top.
func (p *TasksProjection) WriteState(out io.Writer) error {
	s := p.State()
	all := s.AllTasks()
	ids := s.SortedIDs()
	refs := map[string][]string{}
	for _, id := range ids { // in id order, so each list is sorted
		t := all[id]
		name := func(to string) {
			if l := refs[to]; len(l) == 0 || l[len(l)-1] != id {
				refs[to] = append(l, id)
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
	tw := newTableWriter(out, tasksMagic, len(ids))
	type key struct {
		pos uint32
		t   *Task
	}
	var open []key
	for i, id := range ids {
		t := all[id]
		tw.record(id, func(w *writer) { encodeTask(w, t, refs[id]) })
		if t.Status != StatusClosed {
			open = append(open, key{uint32(i), t})
		}
	}
	slices.SortFunc(open, func(a, b key) int {
		if taskLess(a.t, b.t) {
			return -1
		}
		return 1
	})
	return tw.finish(func(w *writer) {
		w.int(s.CommentSeq)
		w.uint(uint64(len(open)))
		for _, k := range open {
			w.uint(uint64(k.pos))
		}
		// Which of them wait by themselves (the blocked label, a blocker
		// not closed), a bit each: ready and next pass them unread.
		bits := make([]byte, (len(open)+7)/8)
		for j, k := range open {
			if waitsItself(k.t, all) {
				bits[j/8] |= 1 << (j % 8)
			}
		}
		w.buf = append(w.buf, bits...)
	})
}

// waitsItself reports whether t is blocked by its label or a blocker of
// its own, not only through a parent: such a task stays blocked until it
// changes or one of its blockers does.
func waitsItself(t *Task, all map[string]*Task) bool {
	if t.HasLabel(BlockedLabel) {
		return true
	}
	for _, d := range t.Blockers {
		if b := all[d.ID]; b != nil && b.Status != StatusClosed {
			return true
		}
	}
	return false
}

func encodeTask(w *writer, t *Task, refs []string) {
	for _, str := range []string{t.ID, t.Title, t.Status, t.Type, t.Parent} {
		w.str(str)
	}
	w.int(int64(t.Priority))
	w.time(t.CreatedAt)
	w.time(t.LeaseUntil)
	w.strs(t.Labels)
	w.uint(uint64(len(t.Blockers)))
	for _, d := range t.Blockers {
		w.str(d.ID)
		w.time(d.At)
		w.str(d.By)
	}
	w.uint(uint64(len(t.Links)))
	for _, l := range t.Links {
		w.str(l.ID)
		w.str(l.Type)
		w.time(l.At)
		w.str(l.By)
	}
	w.strs(refs)
	if t.detail == nil {
		w.str(t.rawDetail) // never decoded: copy it as it was
	} else {
		w.str(encodeDetail(t.detail))
	}
}

// decodeTask reads what encodeTask wrote, leaving the detail encoded.
func decodeTask(r *reader) *Task {
	t, refs := decodeRecord(r)
	t.baseRefs = refs
	return t
}

// decodeRecord reads what encodeTask wrote: the task, and the ids of the
// tasks that name it (baseRefs).
func decodeRecord(r *reader) (*Task, []string) {
	t := &Task{}
	t.ID, t.Title, t.Status, t.Type, t.Parent = r.str(), r.str(), r.str(), r.str(), r.str()
	t.Priority = int(r.int())
	t.CreatedAt, t.LeaseUntil = r.time(), r.time()
	t.Labels = r.strs()
	if k := r.count(); k > 0 {
		t.Blockers = make([]Dep, k)
		for j := range t.Blockers {
			t.Blockers[j] = Dep{ID: r.str(), At: r.time(), By: r.str()}
		}
	}
	if k := r.count(); k > 0 {
		t.Links = make([]Link, k)
		for j := range t.Links {
			t.Links[j] = Link{ID: r.str(), Type: r.str(), At: r.time(), By: r.str()}
		}
	}
	refs := r.strs()
	t.rawDetail = r.str() // decoded by Detail, if ever
	if err := r.end(); err != nil {
		panic(corruptSnapshot(t.ID, err))
	}
	return t, refs
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
	all := s.AllHistory()
	hids := make([]string, 0, len(all))
	for id := range all {
		hids = append(hids, id)
	}
	sort.Strings(hids)
	tw := newTableWriter(out, queueMagic, len(hids))
	var waiting []uint32
	for i, id := range hids {
		h := all[id]
		tw.record(id, func(w *writer) { encodeEntry(w, h) })
		if h.Status == HistWorking || h.Status == HistFailed {
			waiting = append(waiting, uint32(i))
		}
	}
	return tw.finish(func(w *writer) {
		w.uint(uint64(len(waiting)))
		for _, i := range waiting {
			w.uint(uint64(i))
		}
		for _, i := range waiting { // what next's expiry asks, without a record read
			h := all[hids[i]]
			w.bool(h.Status == HistWorking)
			w.time(h.LeaseUntil)
		}
	})
}

func encodeEntry(w *writer, h *Entry) {
	for _, str := range []string{h.ID, h.Status, h.LastError, h.Worker, h.Actor, h.BlockReason} {
		w.str(str)
	}
	w.int(int64(h.Attempts))
	w.int(int64(h.Failures))
	w.int(int64(h.Priority))
	w.time(h.LastAttempt)
	w.time(h.LastFailureAt)
	w.time(h.LeaseUntil)
	w.time(h.QueuedAt)
	w.bool(h.Blocked)
	w.syncs(h.Pending)
	w.syncs(h.SyncFailed)
}

func decodeEntry(r *reader) *Entry {
	h := &Entry{}
	for _, p := range []*string{&h.ID, &h.Status, &h.LastError, &h.Worker, &h.Actor, &h.BlockReason} {
		*p = r.str()
	}
	h.Attempts, h.Failures, h.Priority = int(r.int()), int(r.int()), int(r.int())
	h.LastAttempt, h.LastFailureAt, h.LeaseUntil, h.QueuedAt = r.time(), r.time(), r.time(), r.time()
	h.Blocked = r.bool()
	h.Pending, h.SyncFailed = r.syncs(), r.syncs()
	if err := r.end(); err != nil {
		panic(corruptSnapshot(h.ID, err))
	}
	return h
}

// positions reads a list of record positions below n.
func positions(r *reader, n int) ([]uint32, error) {
	k := r.count()
	out := make([]uint32, k)
	for i := range out {
		v := r.uint()
		if v >= uint64(n) {
			return nil, errSnapshot
		}
		out[i] = uint32(v)
	}
	return out, r.err
}

// taskTable is the tasks' snapshot: the table, and the tasks not closed in
// ready's order (positions in the table).
type taskTable struct {
	*table
	open     []uint32
	waits    string   // a bit per open task: waitsItself when saved
	openBits []uint64 // open as a set, built on first use
}

// waitsAt reports whether open[k] waited by itself when the table was saved.
func (t *taskTable) waitsAt(k int) bool { return t.waits[k/8]&(1<<(k%8)) != 0 }

// isOpen reports whether the task at position i was not closed when the
// table was saved.
func (t *taskTable) isOpen(i int) bool {
	if t.openBits == nil {
		t.openBits = make([]uint64, (t.len()+63)/64)
		for _, p := range t.open {
			t.openBits[p/64] |= 1 << (p % 64)
		}
	}
	return t.openBits[i/64]&(1<<(i%64)) != 0
}

// historyTable is the history's snapshot: the table, and the entries that
// held a claim or had failed.
type historyTable struct {
	*table
	waiting []uint32
	working []bool      // waiting[k] held a claim
	leases  []time.Time // until when
}

func openTasks(r io.ReaderAt, size int64) (*taskTable, int64, error) {
	var seq int64
	var open []uint32
	var waits string
	t, err := openTable(r, size, tasksMagic, func(rd *reader, n int) error {
		seq = rd.int()
		var err error
		if open, err = positions(rd, n); err != nil {
			return err
		}
		waits = rd.raw((len(open) + 7) / 8)
		return rd.err
	})
	if err != nil {
		return nil, 0, err
	}
	return &taskTable{table: t, open: open, waits: waits}, seq, nil
}

func openHistory(r io.ReaderAt, size int64) (*historyTable, error) {
	h := &historyTable{}
	t, err := openTable(r, size, queueMagic, func(rd *reader, n int) error {
		var err error
		if h.waiting, err = positions(rd, n); err != nil {
			return err
		}
		h.working = make([]bool, len(h.waiting))
		h.leases = make([]time.Time, len(h.waiting))
		for k := range h.waiting {
			h.working[k], h.leases[k] = rd.bool(), rd.time()
		}
		return rd.err
	})
	if err != nil {
		return nil, err
	}
	h.table = t
	return h, nil
}

// UnmarshalState opens the tasks' table on b; nothing is decoded yet.
func (p *TasksProjection) UnmarshalState(b []byte) error {
	_, err := p.open(bytes.NewReader(b), int64(len(b)))
	return err
}

// OpenState opens the tasks' table on the snapshot file, reading its index alone.
func (p *TasksProjection) OpenState(f *os.File, off, size int64) error {
	return openOn(f, off, size, p.open)
}

// open opens the table and returns it, nil when it is empty.
func (p *TasksProjection) open(r io.ReaderAt, size int64) (*table, error) {
	t, seq, err := openTasks(r, size)
	if err != nil {
		return nil, err
	}
	if p.s == nil {
		p.s = NewState()
	}
	p.s.Tasks, p.s.CommentSeq, p.s.tasks = map[string]*Task{}, seq, nil
	if t.len() == 0 {
		return nil, nil
	}
	p.s.tasks = t
	return t.table, nil
}

// CheckRecords checks the checksum of every task the table holds
// (projections.RecordChecker).
func (p *TasksProjection) CheckRecords() {
	if p.s != nil && p.s.tasks != nil {
		p.s.tasks.check()
	}
}

// CheckRecords checks every entry the table holds.
func (p *QueueProjection) CheckRecords() {
	if p.s != nil && p.s.history != nil {
		p.s.history.check()
	}
}

// UnmarshalState opens the history's table on b.
func (p *QueueProjection) UnmarshalState(b []byte) error {
	_, err := p.open(bytes.NewReader(b), int64(len(b)))
	return err
}

// OpenState opens the history's table on the snapshot file.
func (p *QueueProjection) OpenState(f *os.File, off, size int64) error {
	return openOn(f, off, size, p.open)
}

func (p *QueueProjection) open(r io.ReaderAt, size int64) (*table, error) {
	t, err := openHistory(r, size)
	if err != nil {
		return nil, err
	}
	if p.s == nil {
		p.s = NewState()
	}
	p.s.History, p.s.history = map[string]*Entry{}, nil
	if t.len() == 0 {
		return nil, nil
	}
	p.s.history = t
	return t.table, nil
}

// openOn opens a table with open on a snapshot file whose state starts at
// off, and keeps the file open while the table reads from it.
func openOn(f *os.File, off, size int64, open func(io.ReaderAt, int64) (*table, error)) error {
	t, err := open(io.NewSectionReader(f, off, size-off), size-off)
	if err != nil {
		return err
	}
	if t == nil {
		return f.Close() // empty: nothing to read later
	}
	keepOpen(t, f)
	return nil
}

func (r *reader) end() error {
	if r.err == nil && r.pos != len(r.s) {
		return errSnapshot
	}
	return r.err
}

type writer struct{ buf []byte }

func (w *writer) uint(v uint64) { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *writer) int(v int64)   { w.buf = binary.AppendVarint(w.buf, v) }
func (w *writer) str(s string)  { w.uint(uint64(len(s))); w.buf = append(w.buf, s...) }
func (w *writer) bool(b bool) {
	if b {
		w.buf = append(w.buf, 1)
	} else {
		w.buf = append(w.buf, 0)
	}
}
func (w *writer) strs(ss []string) {
	w.uint(uint64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}

// time keeps the instant in 8 fixed bytes (faster to read than a varint);
// every time in the state is UTC.
func (w *writer) time(t time.Time) {
	v := int64(math.MinInt64)
	if !t.IsZero() {
		v = t.UnixNano()
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(v))
}

type reader struct {
	s    string
	pos  int
	err  error
	pool *[]string // shared by the readers of one table's records
}

func (r *reader) fail() { r.err, r.pos = errSnapshot, len(r.s) }

func (r *reader) uint() uint64 {
	if r.pos < len(r.s) && r.s[r.pos] < 0x80 { // most lengths fit one byte
		r.pos++
		return uint64(r.s[r.pos-1])
	}
	var v uint64
	for shift := uint(0); r.pos < len(r.s) && shift < 64; shift += 7 {
		c := r.s[r.pos]
		r.pos++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.fail()
	return 0
}

func (r *reader) int() int64 {
	u := r.uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// count reads a length and checks it against the bytes left.
func (r *reader) count() int {
	n := r.uint()
	if n > uint64(len(r.s)-r.pos) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.count()
	s := r.s[r.pos : r.pos+n]
	r.pos += n
	return s
}

// strs reads a list of strings, carved out of r.pool when it has room.
func (r *reader) strs() []string {
	n := r.count()
	if n == 0 {
		return nil
	}
	if r.pool == nil {
		out := make([]string, n)
		for i := range out {
			out[i] = r.str()
		}
		return out
	}
	pool := *r.pool
	if cap(pool)-len(pool) < n {
		pool = make([]string, 0, max(n, 1024))
	}
	start := len(pool)
	for range n {
		pool = append(pool, r.str())
	}
	*r.pool = pool
	return pool[start:len(pool):len(pool)] // full slice: appends copy
}

// raw reads n bytes as they are.
func (r *reader) raw(n int) string {
	if len(r.s)-r.pos < n {
		r.fail()
		return ""
	}
	r.pos += n
	return r.s[r.pos-n : r.pos]
}

func (r *reader) bool() bool {
	if r.pos >= len(r.s) {
		r.fail()
		return false
	}
	r.pos++
	return r.s[r.pos-1] == 1
}

func (r *reader) time() time.Time {
	if len(r.s)-r.pos < 8 {
		r.fail()
		return time.Time{}
	}
	b := r.s[r.pos : r.pos+8]
	r.pos += 8
	v := int64(uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56)
	if v == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

func (w *writer) syncs(list []PendingSync) {
	w.uint(uint64(len(list)))
	for _, p := range list {
		for _, str := range []string{p.Request, p.Op, p.Reason, p.Label, p.LastError} {
			w.str(str)
		}
		w.int(int64(p.Failures))
		w.bool(p.Priority != nil)
		if p.Priority != nil {
			w.int(int64(*p.Priority))
		}
	}
}

func (r *reader) syncs() []PendingSync {
	n := r.count()
	if n == 0 {
		return nil
	}
	list := make([]PendingSync, n)
	for i := range list {
		p := &list[i]
		p.Request, p.Op, p.Reason, p.Label, p.LastError = r.str(), r.str(), r.str(), r.str(), r.str()
		p.Failures = int(r.int())
		if r.bool() {
			prio := int(r.int())
			p.Priority = &prio
		}
	}
	return list
}
