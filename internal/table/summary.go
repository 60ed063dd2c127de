package table

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"unsafe"

	"github.com/spoolhq/spool/internal/fault"
)

// SkipSummary reads past the summary FinishSummary wrote, for a kind's
// extra reading the whole index.
func SkipSummary(rd *Dec) {
	rd.Str()
	rd.Raw(8)
}

// Summary is a table's summary, read without its index (FinishSummary).
type Summary struct {
	*Dec   // at the summary's own fields
	r      io.ReaderAt
	size   int64
	idsAt  int64 // where the ids are (the index's start), and their length
	idsLen int64
	idsSum uint32

	fences, groups Section // fences.go
	fenceOnce      sync.Once
	fenceList      []fence // read on the first Find or At
	fenceErr       error
	mu             sync.Mutex      // over groups: states share a summary
	seen           map[int]idGroup // the groups Find and At read, by fence: a catch-up finds many tasks of few groups
}

// idGroup is a group's ids and the offsets of its records and of the one after.
type idGroup struct {
	ids  []string
	offs []int64
}

// OpenSummary reads the summary of a table written by FinishSummary,
// checked by its own checksum; the index is neither read nor checked.
func OpenSummary(r io.ReaderAt, size int64, magic string) (*Summary, error) {
	const tail = 20 // crc32(summary) | len(summary) | crc32(index) | index offset
	if size < int64(len(magic))+tail {
		return nil, ErrDamaged
	}
	head := make([]byte, len(magic))
	if _, err := r.ReadAt(head, 0); err != nil || string(head) != magic {
		return nil, ErrDamaged
	}
	var t [tail]byte
	if _, err := r.ReadAt(t[:], size-tail); err != nil {
		return nil, ErrDamaged
	}
	index := int64(binary.LittleEndian.Uint64(t[12:]))
	n := int64(binary.LittleEndian.Uint32(t[4:]))
	at := size - tail - n
	if index < int64(len(magic)) || n == 0 || at < index {
		return nil, ErrDamaged
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, at); err != nil || crc32.ChecksumIEEE(b) != binary.LittleEndian.Uint32(t[:]) {
		return nil, ErrDamaged
	}
	d := &Dec{s: unsafe.String(&b[0], len(b))}
	s := &Summary{Dec: d, r: r, size: size, idsAt: index, idsLen: int64(d.Uint())}
	sum := d.Raw(4)
	if d.err != nil || s.idsLen > at-index {
		return nil, ErrDamaged
	}
	s.idsSum = binary.LittleEndian.Uint32([]byte(sum))
	s.fences, s.groups = DecodeSection(d), DecodeSection(d)
	if d.err != nil {
		return nil, ErrDamaged
	}
	return s, nil
}

// Record reads and checks the record at [from, to), a span the summary
// names (Writer.Span); one that fails its checksum is ErrDamaged.
func (s *Summary) Record(from, to int64) (*Dec, error) {
	if from < 0 || to < from+4 || to > s.idsAt {
		return nil, ErrDamaged
	}
	b := make([]byte, to-from)
	if _, err := s.r.ReadAt(b, from); err != nil || !checksumOK(b) {
		return nil, ErrDamaged
	}
	return &Dec{s: unsafe.String(unsafe.SliceData(b), len(b)), pos: 4}, nil
}

// IDs streams the table's ids in order through a small buffer, for a
// command that merges them with other sorted ids rather than read the
// index. Their checksum is checked by Done, which reads the rest.
func (s *Summary) IDs() *IDStream {
	st := &IDStream{r: io.NewSectionReader(s.r, s.idsAt, s.idsLen), left: s.idsLen, want: s.idsSum, buf: make([]byte, 64<<10)}
	st.fill()
	st.n, st.err = st.uint()
	return st
}

// IDStream is IDs's stream.
type IDStream struct {
	r      io.Reader
	buf    []byte
	lo, hi int
	left   int64 // bytes not read yet
	sum    uint32
	want   uint32
	n, i   int    // ids, and the position of the next
	cur    string // the id last read, in buf; "" before the first
	end    bool   // every id read
	err    error
}

// fill moves what is left to the front of the buffer and reads more.
func (st *IDStream) fill() {
	st.hi = copy(st.buf, st.buf[st.lo:st.hi])
	st.lo = 0
	for st.left > 0 && st.hi < len(st.buf) {
		k, err := st.r.Read(st.buf[st.hi:min(int64(len(st.buf)), int64(st.hi)+st.left)])
		st.sum = crc32.Update(st.sum, crc32.IEEETable, st.buf[st.hi:st.hi+k])
		st.hi += k
		st.left -= int64(k)
		if err != nil && st.left > 0 {
			st.left, st.err = 0, ErrDamaged
		}
	}
}

func (st *IDStream) uint() (int, error) {
	if st.hi-st.lo < binary.MaxVarintLen64 {
		st.fill()
	}
	v, k := binary.Uvarint(st.buf[st.lo:st.hi])
	if k <= 0 || v > uint64(st.idsLeft()) {
		return 0, ErrDamaged
	}
	st.lo += k
	return int(v), nil
}

// idsLeft bounds any length read: the bytes not read yet.
func (st *IDStream) idsLeft() int64 { return int64(st.hi-st.lo) + st.left }

// Seek reads on to id, which sorts after every id sought before, and
// returns its position, or -1 when the table has no such id.
func (st *IDStream) Seek(id string) int {
	if st.err != nil || st.end {
		return -1
	}
	if st.cur >= id && st.i > 0 {
		return st.found(id)
	}
	// The loop runs over every id of the table: its state is held in
	// locals, and an id is first compared by its first 8 bytes as a number.
	buf, lo, hi, i := st.buf, st.lo, st.hi, st.i
	want := prefix([]byte(id[:min(len(id), 8)]), len(id))
	for {
		if i == st.n {
			st.lo, st.i, st.end = lo, i, true
			return -1
		}
		if hi-lo < 1+0x7f && st.left > 0 { // maybe not a whole id: read on
			st.lo = lo
			st.fill()
			buf, lo, hi = st.buf, st.lo, st.hi
		}
		if lo == hi || buf[lo] >= 0x80 { // a long id: the slow way
			st.lo, st.i = lo, i
			return st.seekLong(id)
		}
		l := int(buf[lo])
		lo++
		if hi-lo < l {
			st.err = ErrDamaged
			return -1
		}
		if hi-lo >= 8 {
			if p := prefix(buf[lo:lo+8], l); p < want {
				lo += l
				i++
				continue
			}
		}
		cur := unsafe.String(unsafe.SliceData(buf[lo:]), l)
		lo += l
		i++
		if cur >= id {
			st.lo, st.i, st.cur = lo, i, cur
			return st.found(id)
		}
	}
}

// prefix is the first 8 bytes of an id n bytes long, b (8 bytes, or the
// id when shorter), as a number that orders as the ids do where it differs.
func prefix(b []byte, n int) uint64 {
	if len(b) < 8 {
		b = append(b, make([]byte, 8-len(b))...)
	}
	v := binary.BigEndian.Uint64(b)
	if n < 8 {
		v &^= 1<<(8*(8-n)) - 1
	}
	return v
}

// found is Seek's answer once the id last read sorts at or after id.
func (st *IDStream) found(id string) int {
	if st.cur == id {
		return st.i - 1
	}
	return -1
}

// seekLong is Seek where an id is longer than 127 bytes.
func (st *IDStream) seekLong(id string) int {
	for st.err == nil && !st.end && (st.i == 0 || st.cur < id) {
		if st.i == st.n {
			st.end = true
			break
		}
		var l int
		if l, st.err = st.uint(); st.err != nil {
			break
		}
		if st.hi-st.lo < l {
			if l > len(st.buf)/2 {
				b := make([]byte, 2*l+len(st.buf))
				st.hi, st.lo, st.buf = copy(b, st.buf[st.lo:st.hi]), 0, b
			}
			st.fill()
			if st.hi-st.lo < l {
				st.err = ErrDamaged
				break
			}
		}
		st.cur = unsafe.String(unsafe.SliceData(st.buf[st.lo:]), l)
		st.lo += l
		st.i++
	}
	if st.err == nil && !st.end {
		return st.found(id)
	}
	return -1
}

// Done reads the ids not sought and checks them all against their
// checksum: a result from a stream is trusted only then.
func (st *IDStream) Done() error {
	for st.err == nil && st.left > 0 {
		st.lo = st.hi
		st.fill()
	}
	if st.err != nil || st.sum != st.want {
		return ErrDamaged
	}
	return nil
}

// Len is the number of ids, as the stream says.
func (st *IDStream) Len() int { return st.n }

// CorruptIndex is the error of a table's index that fails its checks
// when first read, after its summary was opened.
func CorruptIndex(what string, err error) *fault.Error {
	return fault.New(CodeCorruptSnapshot, err, fmt.Sprintf("the snapshot's index of %s is damaged (%v): run spool replay", what, err), "table", strings.TrimSpace(what))
}
