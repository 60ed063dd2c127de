package workqueue

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"
)

// bd list's first N, picked in one pass without sorting (topListed), are
// the first N of the whole list sorted, with the same dependent counts:
// on a state in memory, and on one read from a snapshot with tasks changed
// and added since.
func TestBeadsListTopEqualsSorted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var ids []string
	for i := range 40 {
		id := w.add(fmt.Sprintf("task %d", i), i%5, t0.Add(time.Duration(i%7)*time.Minute)) // ties of time and priority
		if i%6 == 5 {
			d, _ := AddDep(w.s, id, ids[i-1])
			w.apply("ada", t0, d)
		}
		if i%9 == 8 {
			d, _ := AddDepOf(w.s, id, ids[0], "related")
			w.apply("ada", t0, d)
		}
		ids = append(ids, id)
	}
	cl, _ := CloseTasks(w.s, []string{ids[3], ids[10], ids[21]}, "")
	w.apply("ada", t0, cl...)

	snap, err := NewTasksProjection(w.s).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	read := NewState()
	if err := NewTasksProjection(read).UnmarshalState(bytes.Clone(snap)); err != nil {
		t.Fatal(err)
	}
	later := &world{t: t, s: read, seq: w.seq}
	later.add("added after the snapshot", 0, t0.Add(time.Hour))
	u, _ := UpdateTask(read, ids[7], Update{Priority: ptr(0)})
	later.apply("ada", t0, u...)

	p := DefaultPolicy()
	open := func(_ *Task, status string) bool { return status != StatusClosed }
	p0 := func(t *Task, _ string) bool { return t.Priority == 0 }
	everything := func(TaskJSON) bool { return true } // a view filter: the sorted path
	for _, tc := range []struct {
		name  string
		s     *State
		admit func(*Task, string) bool
	}{
		{"in memory, open", w.s, open},
		{"in memory, P0", w.s, p0},
		{"from a snapshot, open", read, open},
		{"from a snapshot, P0", read, p0},
	} {
		for _, limit := range []int{1, 5, 12, 100} {
			t.Run(fmt.Sprintf("%s, %d", tc.name, limit), func(t *testing.T) {
				got := tc.s.BeadsList(p, t0, tc.admit, nil, limit)
				want := tc.s.BeadsList(p, t0, tc.admit, everything, limit)
				if len(got) == 0 || !slices.EqualFunc(got, want, func(a, b ListItemJSON) bool {
					return a.ID == b.ID && a.DependentCount == b.DependentCount && a.DependencyCount == b.DependencyCount
				}) {
					t.Fatalf("top %d:\n got %v\nwant %v", limit, summary(got), summary(want))
				}
			})
		}
	}
}

func summary(items []ListItemJSON) []string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprintf("%s P%d %d/%d", it.ID, it.Priority, it.DependencyCount, it.DependentCount))
	}
	return out
}

func ptr[T any](v T) *T { return &v }
