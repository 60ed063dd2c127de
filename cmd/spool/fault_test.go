package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table"
)

// A file read through a mapping that something cuts short in place (the
// scheduler's snapshot is read so) faults where it is read: the command
// reports a damaged snapshot, exit 4, rather than dying by SIGBUS.
func TestAMappedFileCutShortIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.snap")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 3<<12), 0o644); err != nil {
		t.Fatal(err)
	}
	readCut := func() {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		data, unmap := table.MapFile(f, 0, 3<<12)
		if data == nil {
			t.Skip("no mappings on this system")
		}
		defer unmap()
		if err := os.Truncate(path, 0); err != nil {
			t.Error(err)
			return
		}
		sink += data[2<<12] // a read past the file's new end
	}
	var stderr bytes.Buffer
	code := guarded([]string{"job", "show"}, &stderr, func(context.Context) int {
		readCut()
		return 0
	})
	if code != int(fault.Environment) || !strings.Contains(stderr.String(), "cut short") {
		t.Fatalf("exit %d, %q; want %d and the snapshot named", code, stderr.String(), fault.Environment)
	}
}

var sink byte
