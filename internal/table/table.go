// Package table is the file format of the snapshots read in part: records
// sorted by id, each with its own checksum, then an index (the ids, where
// each record starts, and what the snapshot's kind adds), then the index's
// offset. Opening reads the index alone; a record is read and checked when
// a command first asks for it, so a command about a few items costs the
// same at 100,000 items as at 1,000.
//
//	magic | record… | index | crc32(index) | uint64 index offset
//
// A record is crc32(payload) then the payload. The file is never changed
// in place (a save renames a new one over it), so what an open table reads
// stays what it indexed.
package table

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"github.com/spoolhq/spool/internal/fault"
)

var (
	// ErrDamaged is the error of a table or an index that does not read:
	// the projection is rebuilt from the log.
	ErrDamaged  = errors.New("snapshot is damaged")
	errChecksum = errors.New("its checksum does not match")

	// CodeCorruptSnapshot is the error of a record that fails its checksum
	// when read (Corrupt).
	CodeCorruptSnapshot = fault.Register(fault.Environment, "corrupt_snapshot")
)

// Corrupt is the panic of a record that fails its checksum when read: the
// table's index checked out when it was opened, so the file changed under
// spool (it is only ever replaced) or the disk failed. A panic, because
// the lookups that meet it return no error; the command reports it as
// this error.
func Corrupt(id string, err error) *fault.Error {
	return fault.New(CodeCorruptSnapshot, err, fmt.Sprintf("the snapshot's record of %s is damaged (%v): run spool replay", id, err), "id", id)
}

// CorruptSection is Corrupt for a section, named by what it holds.
func CorruptSection(what string, err error) *fault.Error {
	return fault.New(CodeCorruptSnapshot, err, fmt.Sprintf("the snapshot's %s is damaged (%v): run spool replay", what, err))
}

// Table is an open table.
type Table struct {
	r     io.ReaderAt
	IDs   []string
	offs  []int64  // len(IDs)+1: record i is [offs[i], offs[i+1])
	pre   []*Dec   // every record, once Preload read them
	file  *os.File // what OpenOn opened it on, and where in it the table starts
	off   int64
	index int64 // where the index starts: sections lie between offs's end and it
	// Name, if set, names record id in errors (a merge queue entry
	// rather than its record id).
	Name func(id string) string
}

// corrupt is the Corrupt error of record i.
func (t *Table) corrupt(i int, err error) error {
	if t.Name != nil {
		return Corrupt(t.Name(t.IDs[i]), err)
	}
	return Corrupt(t.IDs[i], err)
}

// Writer writes a table to out as it goes: only the record being encoded
// and the index are held, not the table.
type Writer struct {
	out  io.Writer
	n    int64 // bytes written
	rec  Enc   // the record (or, last, the index) being encoded
	ids  []string
	offs []int64
	end  int64 // where the records end, once a section follows them; else -1
	err  error
}

// NewWriter starts a table of about n records.
func NewWriter(out io.Writer, magic string, n int) *Writer {
	t := &Writer{out: out, ids: make([]string, 0, n), offs: make([]int64, 0, n+1), end: -1}
	t.write([]byte(magic))
	return t
}

func (t *Writer) write(b []byte) {
	if t.err == nil {
		_, t.err = t.out.Write(b)
		t.n += int64(len(b))
	}
}

// IDs is the ids of the records written so far, in order; the caller
// keeps them as they are.
func (t *Writer) IDs() []string { return t.ids }

// Record writes id's record, which enc encodes; ids come in sorted order.
func (t *Writer) Record(id string, enc func(w *Enc)) {
	t.ids = append(t.ids, id)
	t.offs = append(t.offs, t.n)
	t.rec.Buf = append(t.rec.Buf[:0], 0, 0, 0, 0)
	enc(&t.rec)
	binary.LittleEndian.PutUint32(t.rec.Buf, crc32.ChecksumIEEE(t.rec.Buf[4:]))
	t.write(t.rec.Buf)
}

// Section writes b after the records, outside the index: bytes that one
// command reads (Table.ReadSection) and opening the table does not. The
// index must name it (Section.Encode). Records come before any section.
func (t *Writer) Section(b []byte) Section {
	if t.end < 0 {
		t.end = t.n
	}
	sec := Section{Off: t.n, Len: int64(len(b)), Sum: crc32.ChecksumIEEE(b)}
	t.write(b)
	return sec
}

// SectionOf is Section of the parts next yields, concatenated: a section
// too large to hold whole, written as it is gathered.
func (t *Writer) SectionOf(parts iter.Seq[[]byte]) Section {
	if t.end < 0 {
		t.end = t.n
	}
	sec := Section{Off: t.n}
	for b := range parts {
		sec.Sum = crc32.Update(sec.Sum, crc32.IEEETable, b)
		t.write(b)
	}
	sec.Len = t.n - sec.Off
	return sec
}

// Section is where a section lies and its checksum.
type Section struct {
	Off, Len int64
	Sum      uint32
}

// Encode writes the section's place, for the index.
func (s Section) Encode(w *Enc) {
	w.Uint(uint64(s.Off))
	w.Uint(uint64(s.Len))
	w.Uint(uint64(s.Sum))
}

// DecodeSection reads what Section.Encode wrote.
func DecodeSection(r *Dec) Section {
	return Section{Off: int64(r.Uint()), Len: int64(r.Uint()), Sum: uint32(r.Uint())}
}

// ReadSection reads a section the index names, checked; ErrDamaged for
// one outside the space between the records and the index, or changed.
func (t *Table) ReadSection(s Section) ([]byte, error) {
	if !t.inSections(s) {
		return nil, ErrDamaged
	}
	b := make([]byte, s.Len)
	if _, err := t.r.ReadAt(b, s.Off); err != nil || crc32.ChecksumIEEE(b) != s.Sum {
		return nil, ErrDamaged
	}
	return b, nil
}

// CheckSection checks a section the index names, as ReadSection does,
// without holding it.
func (t *Table) CheckSection(s Section) error {
	if !t.inSections(s) {
		return ErrDamaged
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(t.r, s.Off, s.Len)); err != nil || h.Sum32() != s.Sum {
		return ErrDamaged
	}
	return nil
}

// inSections reports whether s lies between the records and the index.
func (t *Table) inSections(s Section) bool {
	return s.Off >= t.offs[len(t.IDs)] && s.Off <= t.index && s.Len >= 0 && s.Len <= t.index-s.Off // no sum to overflow
}

// Finish writes the index, with extra's fields after the ids and offsets.
func (t *Writer) Finish(extra func(w *Enc)) error { return t.FinishSummary(extra, nil) }

// Span is where the last record written lies, [from, to): what a summary
// names a record by, read without the offsets.
func (t *Writer) Span() (from, to int64) { return t.offs[len(t.offs)-1], t.n }

// FinishSummary is Finish with a summary after extra's fields (unless nil):
// what a command needs of the whole table in a few bytes, read by
// OpenSummary without the index, which at 100,000 records is megabytes.
//
//	index   := ids | offsets | extra | Str(summary) | crc32(summary) | uint32 len(summary)
//	summary := uvarint len(ids) | crc32(ids) | fences | groups | summary's fields
//
// fences and groups are sections (fences.go): where one record is, found
// without the index.
//
// A kind that writes one skips it when it reads the index (SkipSummary).
func (t *Writer) FinishSummary(extra, summary func(w *Enc)) error {
	var fences, groups Section
	if summary != nil {
		fences, groups = t.writeFences()
	}
	index := t.n
	if t.end < 0 {
		t.end = index
	}
	t.offs = append(t.offs, t.end)
	w := &t.rec
	w.Buf = w.Buf[:0]
	w.Strs(t.ids)
	ids := len(w.Buf)
	prev := int64(0)
	for _, o := range t.offs {
		w.Uint(uint64(o - prev))
		prev = o
	}
	if extra != nil {
		extra(w)
	}
	if summary != nil {
		var s Enc
		s.Uint(uint64(ids))
		s.Buf = binary.LittleEndian.AppendUint32(s.Buf, crc32.ChecksumIEEE(w.Buf[:ids]))
		fences.Encode(&s)
		groups.Encode(&s)
		summary(&s)
		w.Uint(uint64(len(s.Buf)))
		w.Buf = append(w.Buf, s.Buf...)
		w.Buf = binary.LittleEndian.AppendUint32(w.Buf, crc32.ChecksumIEEE(s.Buf))
		w.Buf = binary.LittleEndian.AppendUint32(w.Buf, uint32(len(s.Buf)))
	}
	w.Buf = binary.LittleEndian.AppendUint32(w.Buf, crc32.ChecksumIEEE(w.Buf))
	w.Buf = binary.LittleEndian.AppendUint64(w.Buf, uint64(index))
	t.write(w.Buf)
	return t.err
}

// Open reads a table's index from r (size bytes, beginning with magic) and
// hands extra a decoder positioned at the kind's own fields, with the
// number of records.
func Open(r io.ReaderAt, size int64, magic string, extra func(d *Dec, n int) error) (*Table, error) {
	head := make([]byte, len(magic))
	if size < int64(len(magic))+12 {
		return nil, ErrDamaged
	}
	if _, err := r.ReadAt(head, 0); err != nil || string(head) != magic {
		return nil, ErrDamaged
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, ErrDamaged
	}
	index := int64(binary.LittleEndian.Uint64(tail[:]))
	if index < int64(len(magic)) || index > size-12 {
		return nil, ErrDamaged
	}
	b := make([]byte, size-8-index)
	if _, err := r.ReadAt(b, index); err != nil {
		return nil, ErrDamaged
	}
	body := b[:len(b)-4]
	if len(body) == 0 || crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, ErrDamaged
	}
	rd := &Dec{s: unsafe.String(&body[0], len(body))}
	t := &Table{r: r, IDs: rd.Strs()}
	if sr, ok := r.(*io.SectionReader); ok { // a snapshot file's (OpenOn): Mapped maps it
		if outer, off, _ := sr.Outer(); outer != nil {
			if file, ok := outer.(*os.File); ok {
				t.file, t.off = file, off
			}
		}
	}
	t.offs = make([]int64, 0, len(t.IDs)+1)
	at := int64(0)
	for range len(t.IDs) + 1 {
		at += int64(rd.Uint())
		t.offs = append(t.offs, at)
	}
	t.index = index
	if rd.err != nil || !slices.IsSorted(t.IDs) || t.offs[0] != int64(len(magic)) || t.offs[len(t.IDs)] > index ||
		!slices.IsSorted(t.offs) {
		return nil, ErrDamaged
	}
	if extra != nil {
		if err := extra(rd, len(t.IDs)); err != nil {
			return nil, err
		}
	}
	if err := rd.End(); err != nil {
		return nil, err
	}
	return t, nil
}

// OpenOn opens a table with open on a snapshot file whose state starts at
// off, and keeps the file open while what open returned reads from it;
// open returns nil for an empty table, which reads nothing later.
func OpenOn[T any](f interface {
	io.ReaderAt
	io.Closer
}, off, size int64, open func(io.ReaderAt, int64) (*T, error)) error {
	t, err := open(io.NewSectionReader(f, off, size-off), size-off)
	if err != nil {
		return err
	}
	if t == nil {
		return f.Close()
	}
	runtime.AddCleanup(t, func(f io.Closer) { f.Close() }, io.Closer(f))
	return nil
}

// OpenBytes opens a table with open on a whole snapshot held in memory.
func OpenBytes[T any](b []byte, open func(io.ReaderAt, int64) (*T, error)) error {
	_, err := open(bytes.NewReader(b), int64(len(b)))
	return err
}

// Len is the number of records.
func (t *Table) Len() int { return len(t.IDs) }

// Find returns the position of id, or -1.
func (t *Table) Find(id string) int {
	if i, ok := slices.BinarySearch(t.IDs, id); ok {
		return i
	}
	return -1
}

// Preload reads every record with one read (each checked), so that Record
// reads none again: for a command that reads most records, in another
// order than the file's.
func (t *Table) Preload() {
	if t.pre == nil {
		t.pre = t.All()
	}
}

// Record reads and checks record i's payload; one that fails its checksum
// panics with Corrupt rather than lose an item.
func (t *Table) Record(i int) *Dec {
	if t.pre != nil {
		d := *t.pre[i]
		d.pool = nil // the shared pool is All's caller's
		return &d
	}
	b := make([]byte, t.offs[i+1]-t.offs[i])
	if _, err := t.r.ReadAt(b, t.offs[i]); err != nil {
		panic(t.corrupt(i, err))
	}
	t.checkRecord(i, b)
	return &Dec{s: unsafe.String(unsafe.SliceData(b), len(b)), pos: 4}
}

// Check reads every record in file order and checks its checksum, decoding
// nothing; a damaged one panics with Corrupt, as reading it would.
func (t *Table) Check() { t.Scan(func(int, *Dec) bool { return true }) }

// Scan reads the records in file order through one buffer, checks each
// and hands it to fn until fn returns false. The decoder and the strings
// it returns are valid only during the call. A damaged record panics with
// Corrupt.
func (t *Table) Scan(fn func(i int, d *Dec) bool) {
	br := bufio.NewReaderSize(io.NewSectionReader(t.r, t.offs[0], t.offs[len(t.IDs)]-t.offs[0]), 256<<10)
	var b []byte
	d := new(Dec) // one for every record: fn may not keep it
	for i := range t.IDs {
		b = slices.Grow(b[:0], int(t.offs[i+1]-t.offs[i]))[:t.offs[i+1]-t.offs[i]]
		if _, err := io.ReadFull(br, b); err != nil {
			panic(t.corrupt(i, err))
		}
		t.checkRecord(i, b)
		*d = Dec{s: unsafe.String(unsafe.SliceData(b), len(b)), pos: 4}
		if !fn(i, d) {
			return
		}
	}
}

// checkRecord panics with Corrupt unless b, record i, passes its checksum.
func (t *Table) checkRecord(i int, b []byte) {
	if !checksumOK(b) {
		panic(t.corrupt(i, errChecksum))
	}
}

// checksumOK reports whether b, a record, passes its checksum.
func checksumOK(b []byte) bool {
	return len(b) >= 4 && crc32.ChecksumIEEE(b[4:]) == binary.LittleEndian.Uint32(b)
}

// All reads every record at once, for a command that needs them all.
func (t *Table) All() []*Dec { return t.Range(0, len(t.IDs)) }

// Range reads records lo to hi-1 with one read; a damaged one panics with
// Corrupt.
func (t *Table) Range(lo, hi int) []*Dec {
	out, err := t.ReadRange(lo, hi)
	if err != nil {
		panic(err)
	}
	return out
}

// ReadRange is Range returning the Corrupt error rather than panicking,
// for a reader that can still refuse the table.
func (t *Table) ReadRange(lo, hi int) ([]*Dec, error) {
	if lo >= hi {
		return nil, nil
	}
	start := t.offs[lo]
	b := make([]byte, t.offs[hi]-start)
	hugePages(b)
	if _, err := t.r.ReadAt(b, start); err != nil {
		return nil, t.corrupt(lo, err)
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	out := make([]*Dec, hi-lo)
	rs := make([]Dec, hi-lo)
	pool := new([]string) // string lists of every record share one array
	for i := lo; i < hi; i++ {
		a, z := t.offs[i]-start, t.offs[i+1]-start
		if !checksumOK(b[a:z]) {
			return nil, t.corrupt(i, errChecksum)
		}
		rs[i-lo] = Dec{s: s[:z], pos: int(a) + 4, pool: pool}
		out[i-lo] = &rs[i-lo]
	}
	return out, nil
}
