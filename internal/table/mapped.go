package table

import (
	"runtime"
	"runtime/debug"
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
// read of mapped memory that faulted (debug.SetPanicOnFault): a file
// mapped for reading was cut short in place. spool only ever replaces
// its snapshots, so something else changed one under it.
func MappedFault(p any) (*fault.Error, bool) {
	re, ok := p.(interface {
		runtime.Error
		Addr() uintptr
	})
	if !ok {
		return nil, false
	}
	return fault.New(CodeCorruptSnapshot, re, "a snapshot spool was reading was cut short under it (spool only ever replaces them): run spool replay"), true
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
