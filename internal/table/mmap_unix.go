//go:build unix

package table

import "syscall"

// mmap maps the table's part of its file read-only; nil when it was not
// opened on a file or the system refuses.
func (t *Table) mmap() ([]byte, func()) {
	if t.file == nil {
		return nil, nil
	}
	end := t.off + t.offs[len(t.IDs)]
	m, err := syscall.Mmap(int(t.file.Fd()), 0, int(end), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	return m[t.off:end], func() { syscall.Munmap(m) }
}
