//go:build unix

package table

import (
	"os"
	"syscall"
)

// MapFile maps bytes [off, end) of f read-only; nil when the system
// refuses (an empty range among others). unmap undoes it: nothing may
// read the bytes after.
func MapFile(f *os.File, off, end int64) (b []byte, unmap func()) {
	if f == nil || end <= off || off < 0 {
		return nil, nil
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(end), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	span := mapped.add(m)
	return m[off:end], func() {
		st, err := f.Stat() // cut short under the mapping? (a fault in it then is that)
		mapped.remove(span, err == nil && st.Size() < end)
		syscall.Munmap(m)
	}
}
