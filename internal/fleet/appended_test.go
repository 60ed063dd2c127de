package fleet

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// appended reads as the file's first base bytes then the claim's lines,
// from any offset and in reads of any size.
func TestAppendedReadsAsOne(t *testing.T) {
	file := []byte("0123456789")
	for _, tc := range []struct {
		base  int64
		extra string
	}{{0, ""}, {0, "abc\n"}, {10, ""}, {10, "abc\n"}, {4, "xy\n"}} {
		want := append(bytes.Clone(file[:tc.base]), tc.extra...)
		a := appended{bytes.NewReader(file), tc.base, []byte(tc.extra)}
		for off := range len(want) + 2 {
			for size := 1; size <= len(want)+2; size++ {
				p := make([]byte, size)
				n, err := a.ReadAt(p, int64(off))
				start := min(off, len(want))
				end := max(min(off+size, len(want)), start)
				if got, wantPart := p[:n], want[start:end]; !bytes.Equal(got, wantPart) {
					t.Fatalf("base %d extra %q: ReadAt(%d bytes, %d) = %q, want %q", tc.base, tc.extra, size, off, got, wantPart)
				}
				if short := off+size > len(want); short != (err == io.EOF) {
					t.Fatalf("base %d extra %q: ReadAt(%d bytes, %d): %v", tc.base, tc.extra, size, off, err)
				}
			}
		}
	}
	// A file shorter than base is an error, not a short read.
	a := appended{bytes.NewReader(file[:3]), 10, nil}
	if _, err := a.ReadAt(make([]byte, 8), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a file cut short: %v", err)
	}
}
