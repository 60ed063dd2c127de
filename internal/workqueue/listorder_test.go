package workqueue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A save gathers the listings in an unlinked file in its scratch
// directory (Save's, or the spill's): the table is the same bytes as when
// they are gathered in memory, nothing is left in the directory, and a
// directory that cannot be made is the save's error.
func TestListingsGatheredInAFile(t *testing.T) {
	w := newWorld(t)
	for i := range 40 { // list order (priority, then creation) is not id order
		w.add(fmt.Sprintf("task %d %s", i, strings.Repeat("x", i*37)), (i*7)%5, t0.Add(time.Duration(40-i)*time.Minute))
	}
	p := NewTasksProjection(w.s)
	mem, err := p.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p.ScratchIn(dir)
	file, err := p.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, mem) {
		t.Fatalf("gathered in a file: %d bytes, not the %d gathered in memory", len(file), len(mem))
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in the scratch directory: %v", left)
	}
	notADir := filepath.Join(dir, "f")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.ScratchIn(filepath.Join(notADir, "tmp"))
	if _, err := p.MarshalState(); err == nil {
		t.Fatal("a save with no scratch directory to make succeeded")
	}
}
