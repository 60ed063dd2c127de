package table

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Enc encodes a record or an index: varints, strings with their length,
// and times in 8 fixed bytes.
type Enc struct{ Buf []byte }

func (w *Enc) Uint(v uint64) { w.Buf = binary.AppendUvarint(w.Buf, v) }
func (w *Enc) Int(v int64)   { w.Buf = binary.AppendVarint(w.Buf, v) }
func (w *Enc) Str(s string)  { w.Uint(uint64(len(s))); w.Buf = append(w.Buf, s...) }
func (w *Enc) Bool(b bool) {
	if b {
		w.Buf = append(w.Buf, 1)
	} else {
		w.Buf = append(w.Buf, 0)
	}
}
func (w *Enc) Strs(ss []string) {
	w.Uint(uint64(len(ss)))
	for _, s := range ss {
		w.Str(s)
	}
}

// Time keeps the instant in 8 fixed bytes (faster to read than a varint);
// the zero time is kept as the smallest int64.
func (w *Enc) Time(t time.Time) {
	v := int64(math.MinInt64)
	if !t.IsZero() {
		v = t.UnixNano()
	}
	w.Buf = binary.LittleEndian.AppendUint64(w.Buf, uint64(v))
}

// Dec decodes what Enc wrote. The strings it returns share its bytes. A
// read past the end, or a length longer than what is left, fails the
// decoder: later reads return zero values and Err returns ErrDamaged.
type Dec struct {
	s    string
	pos  int
	err  error
	pool *[]string // shared by the decoders of one table's records
}

// NewDec decodes s.
func NewDec(s string) *Dec { return &Dec{s: s} }

// Reset has r decode s from its start, its pool (Pooled) kept.
func (r *Dec) Reset(s string) { r.s, r.pos, r.err = s, 0, nil }

// Pooled has Strs carve its lists out of one shared pool, as a table's
// records do: one allocation for many short lists.
func (r *Dec) Pooled() {
	if r.pool == nil {
		r.pool = new([]string)
	}
}

// Err is the decoder's error: ErrDamaged once a read failed.
func (r *Dec) Err() error { return r.err }

// Fail marks what is being decoded as damaged.
func (r *Dec) Fail() { r.err, r.pos = ErrDamaged, len(r.s) }

// End returns ErrDamaged unless every byte was read and none failed.
func (r *Dec) End() error {
	if r.err == nil && r.pos != len(r.s) {
		return ErrDamaged
	}
	return r.err
}

// Unread returns the bytes not read yet, without reading them.
func (r *Dec) Unread() string { return r.s[r.pos:] }

// Rest returns the bytes not read yet and reads them.
func (r *Dec) Rest() string {
	s := r.s[r.pos:]
	r.pos = len(r.s)
	return s
}

// RestBytes is Rest as a byte slice sharing the decoder's bytes, which
// must never be written: its capacity is its length, so an append copies.
func (r *Dec) RestBytes() []byte {
	s := r.Rest()
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func (r *Dec) Uint() uint64 {
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
	r.Fail()
	return 0
}

func (r *Dec) Int() int64 {
	u := r.Uint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// Count reads a length and checks it against the bytes left.
func (r *Dec) Count() int {
	n := r.Uint()
	if n > uint64(len(r.s)-r.pos) {
		r.Fail()
		return 0
	}
	return int(n)
}

func (r *Dec) Str() string {
	n := r.Count()
	s := r.s[r.pos : r.pos+n]
	r.pos += n
	return s
}

// Strs reads a list of strings, carved out of the table's shared pool
// when the decoder has one (Table.All).
func (r *Dec) Strs() []string {
	n := r.Count()
	if n == 0 {
		return nil
	}
	if r.pool == nil {
		out := make([]string, n)
		for i := range out {
			out[i] = r.Str()
		}
		return out
	}
	pool := *r.pool
	if cap(pool)-len(pool) < n {
		pool = make([]string, 0, max(n, 1024))
	}
	start := len(pool)
	for range n {
		pool = append(pool, r.Str())
	}
	*r.pool = pool
	return pool[start:len(pool):len(pool)] // full slice: appends copy
}

// Raw reads n bytes as they are.
func (r *Dec) Raw(n int) string {
	if len(r.s)-r.pos < n {
		r.Fail()
		return ""
	}
	r.pos += n
	return r.s[r.pos-n : r.pos]
}

func (r *Dec) Bool() bool {
	if r.pos >= len(r.s) {
		r.Fail()
		return false
	}
	r.pos++
	return r.s[r.pos-1] == 1
}

func (r *Dec) Time() time.Time {
	if len(r.s)-r.pos < 8 {
		r.Fail()
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

// Clone is a decoder at the same place over a copy of the bytes: what it
// decodes outlives a mapping (Table.Mapped) the original reads.
func (r *Dec) Clone() *Dec { return &Dec{s: strings.Clone(r.s), pos: r.pos, err: r.err} }

// BeginChecked starts a part in Checked's form written in place, by the
// caller's appends to Buf, and returns where it starts for EndChecked.
func (w *Enc) BeginChecked() int {
	w.Buf = append(w.Buf, 0, 0, 0, 0)
	return len(w.Buf)
}

// EndChecked ends the part BeginChecked started: its length goes before
// it, its checksum before that.
func (w *Enc) EndChecked(start int) {
	var n [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(n[:], uint64(len(w.Buf)-start))
	w.Buf = slices.Insert(w.Buf, start, n[:k]...)
	binary.LittleEndian.PutUint32(w.Buf[start-4:], crc32.ChecksumIEEE(w.Buf[start+k:]))
}

// Part reads a part BeginChecked and EndChecked wrote without checking
// it: for a reader of a record already checked whole.
func (r *Dec) Part() string {
	if r.pos+4 > len(r.s) {
		r.Fail()
		return ""
	}
	r.pos += 4
	return r.Str()
}

// Checked reads a part BeginChecked and EndChecked wrote; false when its checksum does not
// match (or the record ends first).
func (r *Dec) Checked() (string, bool) {
	if r.pos+4 > len(r.s) {
		r.Fail()
		return "", false
	}
	b := r.s[r.pos : r.pos+4]
	sum := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	r.pos += 4
	s := r.Str()
	return s, r.err == nil && crc32.ChecksumIEEE(unsafe.Slice(unsafe.StringData(s), len(s))) == sum
}
