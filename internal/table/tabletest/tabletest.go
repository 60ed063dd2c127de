// Package tabletest helps tests of what reads snapshots through mappings.
package tabletest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/internal/table"
)

// CutShort maps a file of three pages with table.MapFile, then cuts the
// file to nothing under the mapping, as something other than spool might
// cut a snapshot: a read of the bytes it returns faults (SIGBUS) where the
// file no longer reaches. It skips t where nothing is mapped; the mapping
// is undone when t ends.
func CutShort(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.snap")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 3<<12), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	data, unmap := table.MapFile(f, 0, 3<<12)
	if data == nil {
		t.Skip("no mappings on this system")
	}
	t.Cleanup(unmap)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	return data
}
