package table

import (
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/spoolhq/spool/internal/fault"
)

// Mapped calls fn with the table's records mapped from its file where
// the system allows it, rather than read into memory: for a command that
// copies most of a large table to its output, the read and the page
// faults of a fresh buffer cost more than the rest. Without a mapping the
// records are read at once (Preload). What the Mapping returns, and every
// string decoded from it, is valid only until fn returns.
func (t *Table) Mapped(fn func(m Mapping) error) error {
	if len(t.IDs) == 0 {
		return fn(Mapping{t: t})
	}
	var data []byte
	var unmap func()
	if t.file != nil { // the records and the sections after them
		data, unmap = MapFile(t.file, t.off, t.off+t.index)
	}
	if data == nil {
		t.Preload()
		return fn(Mapping{t: t})
	}
	defer unmap()
	// A file cut short in place under its mapping faults where it is
	// read (SIGBUS): a panic, which MappedFault tells for the damaged
	// snapshot it is, rather than a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return fn(Mapping{t: t, data: data})
}

// MappedFault is the corrupt_snapshot error of p when p is the panic of a
// read that faulted (debug.SetPanicOnFault) inside a file MapFile mapped,
// because the file was cut short in place under it: while the mapping
// lives, or after it was unmapped on the way out of that panic, the file
// then shorter than the mapping. spool only ever replaces its snapshots,
// so something else changed one. A fault anywhere else (a read after an
// unmap, of a file as long as ever: a bug) is not one.
func MappedFault(p any) (*fault.Error, bool) {
	re, ok := p.(interface {
		runtime.Error
		Addr() uintptr
	})
	if !ok || !mapped.holds(re.Addr()) {
		return nil, false
	}
	return fault.New(CodeCorruptSnapshot, re, "a snapshot spool was reading was cut short under it (spool only ever replaces them): run spool replay"), true
}

// mapped is the address ranges MapFile has mapped and not unmapped, and
// those it unmapped after their file was cut short.
var mapped mappings

type mappings struct {
	mu        sync.Mutex
	live, cut map[*byte]uintptr // a mapping's first byte: its length
}

func (m *mappings) add(b []byte) *byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live == nil {
		m.live, m.cut = map[*byte]uintptr{}, map[*byte]uintptr{}
	}
	start, n := uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))
	for first, k := range m.cut { // the system may map the same addresses again
		if at := uintptr(unsafe.Pointer(first)); at < start+n && start < at+k {
			delete(m.cut, first)
		}
	}
	m.live[&b[0]] = n
	return &b[0]
}

// remove forgets a mapping being unmapped; cut says its file is shorter
// now than the mapping, which a fault in it may still be reported as.
func (m *mappings) remove(first *byte, cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cut {
		m.cut[first] = m.live[first]
	}
	delete(m.live, first)
}

func (m *mappings) holds(addr uintptr) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, spans := range []map[*byte]uintptr{m.live, m.cut} {
		for first, n := range spans {
			if start := uintptr(unsafe.Pointer(first)); addr >= start && addr-start < n {
				return true
			}
		}
	}
	return false
}

// Mapping reads the records of a mapped table.
type Mapping struct {
	t    *Table
	data []byte // nil: read with Record
}

// Record returns record i checked, as Table.Record does.
func (m Mapping) Record(i int) *Dec {
	if m.data == nil {
		return m.t.Record(i)
	}
	b := m.data[m.t.offs[i]:m.t.offs[i+1]]
	m.t.checkRecord(i, b)
	return &Dec{s: unsafe.String(unsafe.SliceData(b), len(b)), pos: 4}
}

// Section returns a section the index names, ErrDamaged for one outside
// the sections. From a mapping its checksum is not checked: the reader
// checks the parts it reads, each with a checksum of its own (a section
// of Enc.BeginChecked parts). Without one it is read and checked whole.
func (m Mapping) Section(s Section) ([]byte, error) {
	if m.data == nil {
		return m.t.ReadSection(s)
	}
	if !m.t.inSections(s) {
		return nil, ErrDamaged
	}
	return m.data[s.Off : s.Off+s.Len : s.Off+s.Len], nil
}
