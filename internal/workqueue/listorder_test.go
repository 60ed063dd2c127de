package workqueue

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A save gathers the listings in an unlinked file in its scratch
// directory (the engine's, or the spill's): the table is the same bytes as
// when they are gathered in memory, as they are where no file can be made,
// and nothing is left in the directory.
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
	if b, err := p.MarshalState(); err != nil || !bytes.Equal(b, mem) {
		t.Fatalf("with no scratch directory to make: %d bytes, %v", len(b), err)
	}
}

// beadsOpenOrder turns ready's order of the open tasks (priority, the
// oldest first, id) into bd list's (priority, the newest first, id), with
// many tasks sharing a creation time.
func TestBeadsOpenOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 60 {
		type task struct {
			pos      uint32 // in id order
			priority int
			created  int64
		}
		tasks := make([]task, n)
		for i := range tasks {
			tasks[i] = task{uint32(i), r.IntN(3), int64(r.IntN(4))}
		}
		x := &listIndex{at: make([]listEntry, n)}
		for _, k := range tasks {
			x.at[k.pos].priority = int32(k.priority)
		}
		slices.SortFunc(tasks, func(a, b task) int { // ready's order
			return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.created, b.created), cmp.Compare(a.pos, b.pos))
		})
		tt := &taskTable{}
		var created []byte
		for _, k := range tasks {
			tt.open = append(tt.open, k.pos)
			created = binary.LittleEndian.AppendUint64(created, uint64(k.created))
		}
		tt.created = string(created)
		var got []uint32
		for k := range beadsOpenOrder(tt, x) {
			got = append(got, tt.open[k])
		}
		slices.SortFunc(tasks, func(a, b task) int { // bd list's
			return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(b.created, a.created), cmp.Compare(a.pos, b.pos))
		})
		var want []uint32
		for _, k := range tasks {
			want = append(want, k.pos)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d tasks: %v, want %v", n, got, want)
		}
	}
}
