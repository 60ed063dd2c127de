package workqueue

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// A replay of 100,000 tasks holds their texts, details and half a million
// comments: as Go values, most of its heap, which the collector then
// doubles. No step of the fold reads them; only the save writes them out.
// So while a rebuild or verify folds the log (projections.Spiller), the
// title and the detail of each task go to a file field by field as events
// set them, and the save reads them back, a window of tasks at a time, in
// the id order it writes. Between events a spilled task has no detail.
//
// The file holds records in log order: the task's ordinal, a kind, the
// bytes. An ordinal names a Task value, not an id: an import that replaces
// a task gets a new one, and the old one's records are dropped unread.

// Record kinds: the strings, in spillStrings' order, the times, in
// spillTimes', then comments (a count, then the comments as AddComment
// encodes them). The lists and their lengths are generated from the
// field table (fields_gen.go): every field of TaskDetail, and Title.
const spillComments = spillNumStrings + spillNumTimes

// spillWindow bounds the bytes of records a save holds at a time (a
// task's own records may be more). A variable for tests.
var spillWindow int64 = 1 << 20

// unchanged marks the fields of a task before an event is applied to it:
// one that still holds it afterwards was not set.
var (
	unchanged     = string([]byte("\x00unchanged"))
	unchangedZone = time.FixedZone("unchanged", 0)
	unchangedTime = time.Date(1, 1, 1, 0, 0, 0, 1, unchangedZone)
)

func isUnchanged(s string) bool {
	return len(s) == len(unchanged) && unsafe.StringData(s) == unsafe.StringData(unchanged)
}

type spill struct {
	dir     string
	files   *spillFiles
	w       *bufio.Writer // to files.log, until sealed
	err     error         // the first write error
	size    []int64       // bytes of records, by ordinal
	detail  TaskDetail    // the detail an event is applied to
	scratch []byte        // what its comments are encoded into
	buf     []byte        // a record's bytes, as they are put together
	head    [2*binary.MaxVarintLen64 + 1]byte

	sealed sync.Once
	rank   []int32 // by ordinal: the task's place in id order; -1: replaced
	ranked int     // tasks in rank
	most   int64   // the longest window's bytes
	wins   []window
}

// spillFiles are closed when the spill is collected: both are unlinked.
type spillFiles struct{ log, sorted *os.File }

// window is a run of tasks, by rank, and where their records lie in the
// sorted file.
type window struct {
	first, end int
	off, len   int64
}

// Spill makes the fold of an empty state keep titles and details in an
// unlinked file in dir (projections.Spiller). Only a fold nobody decides
// on may spill: a spilled task's title reads empty, and its detail is nil,
// except as the save streams it.
func (p *TasksProjection) Spill(dir string) error {
	if len(p.s.trk.m) > 0 || p.s.trk.lazy != nil {
		return errors.New("spill: the state is not empty") // its tasks' fields are not in the file
	}
	f, err := tempFile(dir, "spill-*")
	if err != nil {
		return err
	}
	files := &spillFiles{log: f}
	sp := &spill{dir: dir, files: files, w: bufio.NewWriterSize(f, 1<<20)}
	runtime.AddCleanup(sp, func(f *spillFiles) {
		for _, x := range []*os.File{f.log, f.sorted} {
			if x != nil {
				x.Close()
			}
		}
	}, files)
	p.s.trk.spill = sp
	return nil
}

// tempFile creates an unlinked file in dir, named by pattern while it is
// created.
func tempFile(dir, pattern string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // held open: freed when closed, and never left behind
	return f, nil
}

// apply folds e and moves what it set to the file.
func (sp *spill) apply(s *State, e *eventlog.Event) error {
	if sp.err != nil || !isTaskEvent(e) {
		return sp.err
	}
	old := s.trk.m[e.Subject]
	if old != nil {
		x := &sp.detail
		*x = TaskDetail{comments: sp.scratch[:0]} // a comment is encoded there, then copied out
		old.detail = x
		for _, p := range spillStrings(old, x) {
			*p = unchanged
		}
		for _, p := range spillTimes(x) {
			*p = unchangedTime
		}
	}
	s.applyTaskTo(e, old)
	t := old
	if e.Type == TypeCreated || e.Type == TypeImported { // the events that make a task
		t = s.trk.m[e.Subject]
	}
	if t == nil {
		return nil
	}
	fresh := t != old
	if fresh {
		t.ord = int32(len(sp.size))
		sp.size = append(sp.size, 0)
	}
	x := t.detail // sp.detail, or a new task's own
	for k, p := range spillStrings(t, x) {
		switch {
		case isUnchanged(*p):
		case *p != "" || !fresh: // a new task's fields start empty
			sp.put(t.ord, byte(k), *p)
		}
		*p = ""
	}
	b := sp.buf[:0]
	for k, p := range spillTimes(x) {
		switch {
		case p.Location() == unchangedZone:
		case !p.IsZero() || !fresh:
			// As the event had it, offset and all: the fold in memory
			// writes tasks.json from the time itself.
			var err error
			if b, err = p.AppendBinary(b[:0]); err != nil && sp.err == nil {
				sp.err = fmt.Errorf("spill: %w", err)
			}
			sp.put(t.ord, byte(spillNumStrings+k), unsafe.String(unsafe.SliceData(b), len(b)))
		}
	}
	if x.numComments > 0 {
		b = binary.AppendUvarint(b[:0], uint64(x.numComments))
		b = append(b, x.comments...)
		sp.put(t.ord, spillComments, unsafe.String(unsafe.SliceData(b), len(b)))
	}
	if cap(x.comments) > cap(sp.scratch) {
		sp.scratch = x.comments[:0]
	}
	sp.buf = b[:0]
	t.detail = nil
	return sp.err
}

func (sp *spill) put(ord int32, kind byte, b string) {
	h := binary.AppendUvarint(sp.head[:0], uint64(ord))
	h = append(h, kind)
	h = binary.AppendUvarint(h, uint64(len(b)))
	n := len(h)
	if _, err := sp.w.Write(h); err != nil && sp.err == nil {
		sp.err = fmt.Errorf("spill: %w", err)
	}
	if _, err := sp.w.WriteString(b); err != nil && sp.err == nil {
		sp.err = fmt.Errorf("spill: %w", err)
	}
	sp.size[ord] += int64(n + len(b))
}

// seal groups the records by window of ids, in the order ids (every task,
// sorted) gives, so that a save reads each window once. The first writer
// that needs the tasks whole does it; the table's writer meanwhile reads
// who names whom, which needs no record.
func (sp *spill) seal(s *State, ids []string) error {
	if sp == nil {
		return nil
	}
	sp.sealed.Do(func() {
		if sp.err == nil {
			sp.err = sp.sort(s, ids)
		}
	})
	return sp.err
}

func (sp *spill) sort(s *State, ids []string) error {
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	sp.w = nil
	sp.rank = make([]int32, len(sp.size))
	for i := range sp.rank {
		sp.rank[i] = -1
	}
	sp.ranked = len(ids)
	winOf := make([]int32, len(ids)) // by rank
	var off int64
	for r, id := range ids {
		ord := s.trk.m[id].ord
		sp.rank[ord] = int32(r)
		n := sp.size[ord]
		if k := len(sp.wins) - 1; k < 0 || sp.wins[k].len > 0 && sp.wins[k].len+n > spillWindow {
			sp.wins = append(sp.wins, window{first: r, off: off})
		}
		k := len(sp.wins) - 1
		sp.wins[k].end, sp.wins[k].len = r+1, sp.wins[k].len+n
		winOf[r] = int32(k)
		off += n
	}
	for _, w := range sp.wins {
		sp.most = max(sp.most, w.len)
	}
	f, err := tempFile(sp.dir, "spill-*")
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	sp.files.sorted = f
	// A buffer per window, 4 MiB in all: the windows grow in number with the tasks.
	out := make([]*bufio.Writer, len(sp.wins))
	size := max(4<<10, min(64<<10, (4<<20)/max(1, len(sp.wins))))
	for k, w := range sp.wins {
		out[k] = bufio.NewWriterSize(io.NewOffsetWriter(f, w.off), size)
	}
	var scratch [2*binary.MaxVarintLen64 + 1]byte
	in := bufio.NewReaderSize(io.NewSectionReader(sp.files.log, 0, 1<<62), 1<<20)
	for {
		ord, n, h, err := readHeader(in, scratch[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("spill: %w", err)
		}
		var w io.Writer = io.Discard // a replaced task's
		if ord < uint64(len(sp.rank)) && sp.rank[ord] >= 0 {
			w = out[winOf[sp.rank[ord]]]
			w.Write(h)
		}
		for n > 0 {
			b, err := in.Peek(int(min(n, uint64(in.Size()))))
			if err != nil {
				return fmt.Errorf("spill: %w", io.ErrUnexpectedEOF)
			}
			w.Write(b)
			in.Discard(len(b))
			n -= uint64(len(b))
		}
	}
	for _, w := range out {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("spill: %w", err)
		}
	}
	sp.files.log.Close() // read: free its space now
	sp.files.log = nil
	return nil
}

// readHeader reads a record's header: its ordinal, its body's length, and
// the header's bytes, appended to h.
func readHeader(in *bufio.Reader, h []byte) (ord, n uint64, _ []byte, err error) {
	if ord, err = binary.ReadUvarint(in); err != nil {
		return 0, 0, nil, err // io.EOF at the end
	}
	kind, err := in.ReadByte()
	if err == nil {
		n, err = binary.ReadUvarint(in)
	}
	if err != nil {
		return 0, 0, nil, io.ErrUnexpectedEOF
	}
	h = binary.AppendUvarint(h, ord)
	h = append(h, kind)
	return ord, n, binary.AppendUvarint(h, n), nil
}

// each is eachTask for a spilled state: more is every task, sorted. The
// writers seal first, so that an error is theirs to return; a read that
// fails later panics, as a damaged table record does.
func (sp *spill) each(s *State, more []string, texts bool) iter.Seq[*Task] {
	return func(yield func(*Task) bool) {
		var h *hydrator
		if texts {
			if err := sp.seal(s, more); err != nil {
				panic(fault.New(fault.CodeStorage, err, "replay: "+err.Error()))
			}
			if len(more) != sp.ranked {
				panic(fmt.Sprintf("spill: %d tasks, %d sealed", len(more), sp.ranked))
			}
			h = &hydrator{sp: sp, k: -1}
		}
		for r, id := range more {
			t := s.trk.m[id]
			if h != nil {
				t = h.task(t, r)
			}
			if !yield(t) {
				return
			}
		}
	}
}

// hydrator gives a streaming save its tasks whole, a window at a time.
// Each save writer has its own; a task it gives and the task's strings are
// good until the next one.
type hydrator struct {
	sp  *spill
	t   Task // the task given, and its detail
	x   TaskDetail
	k   int // the window loaded; -1: none
	buf []byte
	got []hydrated // by rank - first
	com []byte
}

// hydrated is what a window's records say of a task.
type hydrated struct {
	strs        [spillNumStrings]string
	times       [spillNumTimes]time.Time
	comments    int // where its comments end in com
	numComments int
}

// task returns t, the task of rank r, with its title and detail.
func (h *hydrator) task(t *Task, r int) *Task {
	for h.k < 0 || r >= h.sp.wins[h.k].end {
		h.k++
		if err := h.load(); err != nil {
			panic(fault.New(fault.CodeStorage, err, "replay: reading back the tasks' details: "+err.Error()))
		}
	}
	i := r - h.sp.wins[h.k].first
	g := &h.got[i]
	h.t, h.x = *t, TaskDetail{numComments: g.numComments}
	h.t.detail = &h.x
	for k, p := range spillStrings(&h.t, &h.x) {
		*p = g.strs[k]
	}
	for k, p := range spillTimes(&h.x) {
		*p = g.times[k]
	}
	a := 0
	if i > 0 {
		a = h.got[i-1].comments
	}
	if b := g.comments; b > a {
		h.x.comments = h.com[a:b:b]
	}
	return &h.t
}

// load reads window h.k and files its records by rank.
func (h *hydrator) load() error {
	w := h.sp.wins[h.k]
	if h.buf == nil {
		h.buf = make([]byte, h.sp.most)
	}
	h.buf = h.buf[:w.len]
	if _, err := h.sp.files.sorted.ReadAt(h.buf, w.off); err != nil {
		return err
	}
	n := w.end - w.first
	h.got = grow(h.got, n)
	clear(h.got)
	// Twice over the records: the fields and the comments' sizes, then
	// the comments, each task's together.
	for pass := range 2 {
		for b := h.buf; len(b) > 0; {
			ord, kind, body, rest, err := parseRecord(b)
			if err != nil {
				return err
			}
			b = rest
			if ord >= uint64(len(h.sp.rank)) || kind > spillComments {
				return errors.New("a damaged record")
			}
			r := int(h.sp.rank[ord]) - w.first
			if r < 0 || r >= n {
				return errors.New("a record out of its window")
			}
			g := &h.got[r]
			switch {
			case pass == 1 && kind == spillComments:
				g.comments += copy(h.com[g.comments:], body[uvarintLen(body):])
			case pass == 1:
			case kind < spillNumStrings:
				g.strs[kind] = unsafe.String(unsafe.SliceData(body), len(body))
			case kind < spillComments:
				if err := g.times[kind-spillNumStrings].UnmarshalBinary(body); err != nil {
					return err
				}
			default:
				c, k := binary.Uvarint(body)
				if k <= 0 {
					return errors.New("a damaged record")
				}
				g.numComments += int(c)
				g.comments += len(body) - k
			}
		}
		if pass == 0 { // sizes to where each task's comments start
			total := 0
			for i := range h.got {
				size := h.got[i].comments
				h.got[i].comments = total
				total += size
			}
			if cap(h.com) < total {
				h.com = make([]byte, total, max(total, int(spillWindow)))
			}
			h.com = h.com[:total]
		}
	}
	return nil // h.got[i].comments is where task i's comments end
}

func uvarintLen(b []byte) int {
	_, k := binary.Uvarint(b)
	return k
}

func parseRecord(b []byte) (ord uint64, kind byte, body, rest []byte, err error) {
	ord, k := binary.Uvarint(b)
	if k <= 0 || k >= len(b) || ord >= 1<<31 {
		return 0, 0, nil, nil, errors.New("a damaged record")
	}
	kind = b[k]
	n, j := binary.Uvarint(b[k+1:])
	if j <= 0 || n > uint64(len(b)-k-1-j) {
		return 0, 0, nil, nil, errors.New("a damaged record")
	}
	b = b[k+1+j:]
	return ord, kind, b[:n], b[n:], nil
}

// grow returns b with length n, reusing its array when it is large enough.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}
