package workqueue

import (
	"bufio"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"slices"
	"unsafe"
)

// A table is a snapshot read in part: records sorted by id, each with its
// own checksum, then an index (the ids, where each record starts, and what
// the table's kind adds), then the index's offset. Opening reads the index
// alone; a record is read and checked when a command first asks for it, so
// a command about a few tasks costs the same at 100,000 tasks as at 1,000.
//
//	magic | record… | index | crc32c(index) | uint64 index offset
//
// A record is crc32c(payload) then the payload. The file is never changed
// in place (a save renames a new one over it), so what an open table reads
// stays what it indexed.
type table struct {
	r    io.ReaderAt
	ids  []string
	offs []int64 // len(ids)+1: record i is [offs[i], offs[i+1])
}

// tableWriter writes a table to out as it goes: only the record being
// encoded and the index are held, not the table.
type tableWriter struct {
	out  io.Writer
	n    int64  // bytes written
	rec  writer // the record (or, last, the index) being encoded
	ids  []string
	offs []int64
	err  error
}

func newTableWriter(out io.Writer, magic string, n int) *tableWriter {
	t := &tableWriter{out: out, ids: make([]string, 0, n), offs: make([]int64, 0, n+1)}
	t.write([]byte(magic))
	return t
}

func (t *tableWriter) write(b []byte) {
	if t.err == nil {
		_, t.err = t.out.Write(b)
		t.n += int64(len(b))
	}
}

// record writes id's record, which enc encodes; ids come in sorted order.
func (t *tableWriter) record(id string, enc func(w *writer)) {
	t.ids = append(t.ids, id)
	t.offs = append(t.offs, t.n)
	t.rec.buf = append(t.rec.buf[:0], 0, 0, 0, 0)
	enc(&t.rec)
	binary.LittleEndian.PutUint32(t.rec.buf, crc32.Checksum(t.rec.buf[4:], castagnoli))
	t.write(t.rec.buf)
}

// finish writes the index, with extra's fields after the ids and offsets.
func (t *tableWriter) finish(extra func(w *writer)) error {
	index := t.n
	t.offs = append(t.offs, index)
	w := &t.rec
	w.buf = w.buf[:0]
	w.strs(t.ids)
	prev := int64(0)
	for _, o := range t.offs {
		w.uint(uint64(o - prev))
		prev = o
	}
	if extra != nil {
		extra(w)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, crc32.Checksum(w.buf, castagnoli))
	w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(index))
	t.write(w.buf)
	return t.err
}

// openTable reads a table's index from r (size bytes, beginning with
// magic) and hands extra a reader positioned at the kind's own fields.
func openTable(r io.ReaderAt, size int64, magic string, extra func(r *reader, n int) error) (*table, error) {
	head := make([]byte, len(magic))
	if size < int64(len(magic))+12 {
		return nil, errSnapshot
	}
	if _, err := r.ReadAt(head, 0); err != nil || string(head) != magic {
		return nil, errSnapshot
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, errSnapshot
	}
	index := int64(binary.LittleEndian.Uint64(tail[:]))
	if index < int64(len(magic)) || index > size-12 {
		return nil, errSnapshot
	}
	b := make([]byte, size-8-index)
	if _, err := r.ReadAt(b, index); err != nil {
		return nil, errSnapshot
	}
	body := b[:len(b)-4]
	if len(body) == 0 || crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, errSnapshot
	}
	rd := &reader{s: unsafe.String(&body[0], len(body))}
	t := &table{r: r, ids: rd.strs()}
	t.offs = make([]int64, 0, len(t.ids)+1)
	at := int64(0)
	for range len(t.ids) + 1 {
		at += int64(rd.uint())
		t.offs = append(t.offs, at)
	}
	if rd.err != nil || !slices.IsSorted(t.ids) || t.offs[0] != int64(len(magic)) || t.offs[len(t.ids)] != index ||
		!slices.IsSorted(t.offs) {
		return nil, errSnapshot
	}
	if extra != nil {
		if err := extra(rd, len(t.ids)); err != nil {
			return nil, err
		}
	}
	if err := rd.end(); err != nil {
		return nil, err
	}
	return t, nil
}

// keepOpen closes f once t is no longer used: t reads its records from f.
func keepOpen(t *table, f *os.File) {
	runtime.AddCleanup(t, func(f *os.File) { f.Close() }, f)
}

func (t *table) len() int { return len(t.ids) }

// find returns the position of id, or -1.
func (t *table) find(id string) int {
	if i, ok := slices.BinarySearch(t.ids, id); ok {
		return i
	}
	return -1
}

// record reads and checks record i's payload; one that fails its checksum
// panics with corruptSnapshot rather than lose a task.
func (t *table) record(i int) *reader {
	b := make([]byte, t.offs[i+1]-t.offs[i])
	if _, err := t.r.ReadAt(b, t.offs[i]); err != nil {
		panic(corruptSnapshot(t.ids[i], err))
	}
	t.checkRecord(i, b)
	return &reader{s: unsafe.String(unsafe.SliceData(b), len(b)), pos: 4}
}

// check reads every record in file order and checks its checksum, decoding
// nothing; a damaged one panics with corruptSnapshot, as reading it would.
func (t *table) check() {
	br := bufio.NewReaderSize(io.NewSectionReader(t.r, t.offs[0], t.offs[len(t.ids)]-t.offs[0]), 256<<10)
	var b []byte
	for i := range t.ids {
		b = slices.Grow(b[:0], int(t.offs[i+1]-t.offs[i]))[:t.offs[i+1]-t.offs[i]]
		if _, err := io.ReadFull(br, b); err != nil {
			panic(corruptSnapshot(t.ids[i], err))
		}
		t.checkRecord(i, b)
	}
}

// checkRecord panics with corruptSnapshot unless b, record i, passes its
// checksum.
func (t *table) checkRecord(i int, b []byte) {
	if len(b) < 4 || crc32.Checksum(b[4:], castagnoli) != binary.LittleEndian.Uint32(b) {
		panic(corruptSnapshot(t.ids[i], errChecksum))
	}
}

// all reads every record at once, for a command that needs them all.
func (t *table) all() []*reader {
	if len(t.ids) == 0 {
		return nil
	}
	start := t.offs[0]
	b := make([]byte, t.offs[len(t.ids)]-start)
	if _, err := t.r.ReadAt(b, start); err != nil {
		panic(corruptSnapshot(t.ids[0], err))
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	out := make([]*reader, len(t.ids))
	rs := make([]reader, len(t.ids))
	pool := new([]string) // labels of every record share one array
	for i := range t.ids {
		lo, hi := t.offs[i]-start, t.offs[i+1]-start
		t.checkRecord(i, b[lo:hi])
		rs[i] = reader{s: s[:hi], pos: int(lo) + 4, pool: pool}
		out[i] = &rs[i]
	}
	return out
}
