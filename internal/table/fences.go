package table

import (
	"hash/crc32"
	"slices"
	"sort"
	"unsafe"
)

// A table with a summary finds one record without its index: a command
// about one task at 100,000 read and decoded 100,000 ids and offsets
// (about 4 ms) to find it. The ids are cut into groups of fenceSize; the
// fences section names each group's first id and where the group lies in
// the groups section, with the group's checksum. A lookup reads the
// fences (about 20 bytes a group) and one group: its ids, and the offsets
// of its records and of the record after the last.
//
//	fences := uvarint groups | (Str(first id) | uvarint off | uvarint len | uvarint crc32)…
//	group  := uvarint n | Str(id)… | uvarint offset (absolute) | uvarint delta…
const fenceSize = 64

// writeFences writes the fences and groups sections of the records
// written so far.
func (t *Writer) writeFences() (fences, groups Section) {
	var f, g Enc
	n := (len(t.ids) + fenceSize - 1) / fenceSize
	f.Uint(uint64(n))
	end := t.n // the records' end, before any section
	if t.end >= 0 {
		end = t.end
	}
	for lo := 0; lo < len(t.ids); lo += fenceSize {
		hi := min(lo+fenceSize, len(t.ids))
		at := len(g.Buf)
		g.Uint(uint64(hi - lo))
		for _, id := range t.ids[lo:hi] {
			g.Str(id)
		}
		g.Uint(uint64(t.offs[lo]))
		for i := lo + 1; i <= hi; i++ {
			next := end
			if i < len(t.offs) {
				next = t.offs[i]
			}
			prev := t.offs[i-1]
			g.Uint(uint64(next - prev))
		}
		f.Str(t.ids[lo])
		f.Uint(uint64(at))
		f.Uint(uint64(len(g.Buf) - at))
		f.Uint(uint64(crc32.ChecksumIEEE(g.Buf[at:])))
	}
	return t.Section(f.Buf), t.Section(g.Buf)
}

// fence is a group as the fences name it.
type fence struct {
	first    string
	off, len int64
	sum      uint32
}

// Find returns the position of record id and where it lies, [from, to),
// reading the fences (once) and one group, not the index; i is -1 when
// the table has no such record. A section that does not read is
// ErrDamaged.
func (s *Summary) Find(id string) (i int, from, to int64, err error) {
	fs, err := s.fencesRead()
	if err != nil {
		return -1, 0, 0, err
	}
	k := sort.Search(len(fs), func(k int) bool { return fs[k].first > id }) - 1
	if k < 0 {
		return -1, 0, 0, nil
	}
	g, err := s.group(fs, k)
	if err != nil {
		return -1, 0, 0, err
	}
	j, found := slices.BinarySearch(g.ids, id)
	if !found {
		return -1, 0, 0, nil
	}
	return k*fenceSize + j, g.offs[j], g.offs[j+1], nil
}

// At returns the id of record i and where it lies, [from, to), reading
// the fences (once) and the record's group (once): for a walk over
// positions taken from elsewhere than the index.
func (s *Summary) At(i int) (id string, from, to int64, err error) {
	fs, err := s.fencesRead()
	if err != nil {
		return "", 0, 0, err
	}
	k := i / fenceSize
	if i < 0 || k >= len(fs) {
		return "", 0, 0, ErrDamaged
	}
	g, err := s.group(fs, k)
	if err != nil {
		return "", 0, 0, err
	}
	j := i - k*fenceSize
	if j >= len(g.ids) {
		return "", 0, 0, ErrDamaged
	}
	return g.ids[j], g.offs[j], g.offs[j+1], nil
}

// group is fence k's group, read once (while at most maxSeen are kept).
func (s *Summary) group(fs []fence, k int) (idGroup, error) {
	s.mu.Lock()
	g, ok := s.seen[k]
	s.mu.Unlock()
	if ok {
		return g, nil
	}
	ids, offs, err := s.readGroup(fs[k])
	if err != nil {
		return idGroup{}, err
	}
	g = idGroup{ids, offs}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil || len(s.seen) >= maxSeen {
		s.seen = map[int]idGroup{}
	}
	s.seen[k] = g
	return g, nil
}

// maxSeen bounds the groups a summary keeps: 1,024 is 65,536 ids, about
// 2 MB, past which a reader is better served by the index.
const maxSeen = 1024

// readGroup reads and checks the group a fence names: its ids, and the
// offsets of its records and of the one after.
func (s *Summary) readGroup(fc fence) (ids []string, offs []int64, err error) {
	if fc.off < 0 || fc.len < 0 || fc.off+fc.len > s.groups.Len {
		return nil, nil, ErrDamaged
	}
	b := make([]byte, fc.len)
	if _, err := s.r.ReadAt(b, s.groups.Off+fc.off); err != nil || crc32.ChecksumIEEE(b) != fc.sum {
		return nil, nil, ErrDamaged
	}
	d := &Dec{s: unsafe.String(unsafe.SliceData(b), len(b))}
	ids = make([]string, d.Count())
	for x := range ids {
		ids[x] = d.Str()
	}
	offs = make([]int64, len(ids)+1)
	offs[0] = int64(d.Uint())
	for x := range ids {
		offs[x+1] = offs[x] + int64(d.Uint())
	}
	return ids, offs, d.End()
}

// ReadSection reads a section the summary names, checked; ErrDamaged for
// one outside the space before the index, or changed.
func (s *Summary) ReadSection(sec Section) ([]byte, error) {
	if sec.Off < 0 || sec.Len < 0 || sec.Off > s.idsAt || sec.Len > s.idsAt-sec.Off { // no sum to overflow
		return nil, ErrDamaged
	}
	b := make([]byte, sec.Len)
	if _, err := s.r.ReadAt(b, sec.Off); err != nil || crc32.ChecksumIEEE(b) != sec.Sum {
		return nil, ErrDamaged
	}
	return b, nil
}

// fencesRead is the fences, read and checked once.
func (s *Summary) fencesRead() ([]fence, error) {
	s.fenceOnce.Do(func() { s.fenceList, s.fenceErr = s.readFences() })
	return s.fenceList, s.fenceErr
}

// readFences reads and checks the fences section.
func (s *Summary) readFences() ([]fence, error) {
	f, g := s.fences, s.groups
	if f.Off < 0 || f.Len <= 0 || f.Off+f.Len > s.idsAt || g.Off < 0 || g.Len < 0 || g.Off+g.Len > s.idsAt {
		return nil, ErrDamaged
	}
	b := make([]byte, f.Len)
	if _, err := s.r.ReadAt(b, f.Off); err != nil || crc32.ChecksumIEEE(b) != f.Sum {
		return nil, ErrDamaged
	}
	d := &Dec{s: unsafe.String(unsafe.SliceData(b), len(b))}
	n := d.Count()
	fs := make([]fence, n)
	for k := range fs {
		fs[k] = fence{first: d.Str(), off: int64(d.Uint()), len: int64(d.Uint()), sum: uint32(d.Uint())}
		if k > 0 && fs[k].first <= fs[k-1].first {
			d.Fail()
		}
	}
	return fs, d.End()
}
