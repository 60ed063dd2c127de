package table

import (
	"unsafe"
)

// Mapped calls fn with rec, which returns record i checked, as Record
// does. The records are mapped from the file where the system allows it
// rather than read into memory: for a command that copies most of a large
// table to its output, the read and the page faults of a fresh buffer
// cost more than the rest. What rec returns, and every string decoded
// from it, is valid only until fn returns.
func (t *Table) Mapped(fn func(rec func(i int) *Dec) error) error {
	if len(t.IDs) == 0 {
		return fn(nil)
	}
	data, unmap := t.mmap()
	if data == nil {
		t.Preload()
		return fn(t.Record)
	}
	defer unmap()
	return fn(func(i int) *Dec {
		b := data[t.offs[i]:t.offs[i+1]]
		t.checkRecord(i, b)
		return &Dec{s: unsafe.String(unsafe.SliceData(b), len(b)), pos: 4}
	})
}
