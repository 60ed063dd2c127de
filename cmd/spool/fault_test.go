package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table/tabletest"
)

// A file read through a mapping that something cuts short in place (the
// scheduler's snapshot is read so) faults where it is read: the command
// reports a damaged snapshot, exit 4, rather than dying by SIGBUS.
func TestAMappedFileCutShortIsReported(t *testing.T) {
	data := tabletest.CutShort(t)
	var stderr bytes.Buffer
	code := guarded([]string{"job", "show"}, &stderr, func(context.Context) int {
		sink += data[2<<12] // a read past the file's new end
		return 0
	})
	if code != int(fault.Environment) || !strings.Contains(stderr.String(), "cut short") {
		t.Fatalf("exit %d, %q; want %d and the snapshot named", code, stderr.String(), fault.Environment)
	}
}

var sink byte
