package workqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sort"
	"time"
	"unsafe"

	"github.com/spoolhq/spool/internal/fault"
)

// The snapshot is a compact binary encoding, not JSON: a command that opens
// 10,000 tasks must decode them in about a millisecond. Strings are sliced out
// of one string holding the whole body, so decoding allocates little.

const (
	tasksMagic = "spool-tasks-7\n"
	queueMagic = "spool-history-3\n"
)

var errSnapshot = errors.New("tasks snapshot is damaged")

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

// decodeDetail reads what encodeDetail wrote. The blob passed the
// snapshot's checksum, so damage is a bug.
func decodeDetail(raw string) *TaskDetail {
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
		panic(fmt.Sprintf("task detail: %v", err))
	}
	return x
}

// MarshalState encodes the sorted ids, then the tasks in that order.
func (p *TasksProjection) MarshalState() ([]byte, error) {
	s := p.State()
	w := &writer{buf: make([]byte, 0, 256*len(s.Tasks)+64)}
	w.buf = append(w.buf, tasksMagic...)
	w.int(s.CommentSeq)
	ids := s.SortedIDs()
	w.strs(ids)
	crcAt := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0) // crc32c of the records, filled in below
	for _, id := range ids {
		t := s.Tasks[id]
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
		if t.detail == nil {
			w.str(t.rawDetail) // never decoded: copy it as it was
		} else {
			w.str(encodeDetail(t.detail))
		}
	}
	binary.LittleEndian.PutUint32(w.buf[crcAt:], crc32.Checksum(w.buf[crcAt+4:], castagnoli))
	return w.buf, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalState encodes the history in id order.
func (p *QueueProjection) MarshalState() ([]byte, error) {
	s := p.State()
	w := &writer{buf: make([]byte, 0, 96*len(s.History)+64)}
	w.buf = append(w.buf, queueMagic...)
	crcAt := len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0) // crc32c of the entries, filled in below
	hids := make([]string, 0, len(s.History))
	for id := range s.History {
		hids = append(hids, id)
	}
	sort.Strings(hids)
	w.uint(uint64(len(hids)))
	for _, id := range hids {
		h := s.History[id]
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
	binary.LittleEndian.PutUint32(w.buf[crcAt:], crc32.Checksum(w.buf[crcAt+4:], castagnoli))
	return w.buf, nil
}

// newReader checks the magic line. The state keeps substrings of b, which
// the engine never reuses, so b is not copied.
func newReader(b []byte, magic string) (*reader, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, errSnapshot
	}
	return &reader{s: unsafe.String(&b[0], len(b)), pos: len(magic)}, nil
}

// UnmarshalState reads the id list and keeps the tasks encoded until State
// is called.
func (p *TasksProjection) UnmarshalState(b []byte) error {
	r, err := newReader(b, tasksMagic)
	if err != nil {
		return err
	}
	seq := r.int()
	ids := r.strs()
	if r.err != nil || !slices.IsSorted(ids) || len(r.s)-r.pos < 4 {
		return errSnapshot
	}
	// The checksum lets the records be decoded later, on demand, knowing
	// they are what MarshalState wrote.
	crc := binary.LittleEndian.Uint32(b[r.pos:])
	records := b[r.pos+4:]
	if crc32.Checksum(records, castagnoli) != crc {
		return errSnapshot
	}
	st := p.s
	if st == nil {
		st = NewState()
	}
	*p = TasksProjection{s: st}
	st.CommentSeq = seq
	if len(ids) == 0 {
		if len(records) != 0 {
			return errSnapshot
		}
		st.Tasks = map[string]*Task{}
		return nil
	}
	done := make(chan decodedTasks, 1)
	p.ids, p.decoding = ids, done
	raw, n := r.s[r.pos+4:], len(ids)
	fault.Go(func() {
		d := NewState()
		err := d.decodeTasks(&reader{s: raw}, n)
		done <- decodedTasks{d.Tasks, err}
	})
	return nil
}

// decodeTasks reads n task records, which must fill r exactly.
func (s *State) decodeTasks(r *reader, n int) error {
	s.Tasks = make(map[string]*Task, n)
	tasks := make([]Task, n)
	r.pool = make([]string, 0, n) // labels of every task share one array
	for i := range tasks {
		t := &tasks[i]
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
		t.rawDetail = r.str() // decoded by Detail, if ever

		if r.err != nil {
			return r.err
		}
		s.Tasks[t.ID] = t
	}
	return r.end()
}

func (r *reader) end() error {
	if r.err == nil && r.pos != len(r.s) {
		return errSnapshot
	}
	return r.err
}

// UnmarshalState checks the history's checksum and decodes it in the background.
func (p *QueueProjection) UnmarshalState(b []byte) error {
	r, err := newReader(b, queueMagic)
	if err != nil {
		return err
	}
	if len(r.s)-r.pos < 4 {
		return errSnapshot
	}
	crc := binary.LittleEndian.Uint32(b[r.pos:])
	if crc32.Checksum(b[r.pos+4:], castagnoli) != crc {
		return errSnapshot
	}
	st := p.s
	if st == nil {
		st = NewState()
	}
	done := make(chan decodedHistory, 1)
	*p = QueueProjection{s: st, decoding: done}
	hr := &reader{s: r.s, pos: r.pos + 4}
	fault.Go(func() {
		d := NewState()
		err := d.decodeHistory(hr)
		done <- decodedHistory{d.History, err}
	})
	return nil
}

func (s *State) decodeHistory(r *reader) error {
	n := r.count()
	s.History = make(map[string]*Entry, n)
	entries := make([]Entry, n)
	for i := range entries {
		h := &entries[i]
		for _, p := range []*string{&h.ID, &h.Status, &h.LastError, &h.Worker, &h.Actor, &h.BlockReason} {
			*p = r.str()
		}
		h.Attempts, h.Failures, h.Priority = int(r.int()), int(r.int()), int(r.int())
		h.LastAttempt, h.LastFailureAt, h.LeaseUntil, h.QueuedAt = r.time(), r.time(), r.time(), r.time()
		h.Blocked = r.bool()
		h.Pending, h.SyncFailed = r.syncs(), r.syncs()
		if r.err != nil {
			return r.err
		}
		s.History[h.ID] = h
	}
	return r.end()
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
	pool []string
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
	if cap(r.pool)-len(r.pool) < n {
		r.pool = make([]string, 0, max(n, 1024))
	}
	start := len(r.pool)
	for range n {
		r.pool = append(r.pool, r.str())
	}
	return r.pool[start:len(r.pool):len(r.pool)] // full slice: appends copy
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
