package workqueue

import (
	"io"
	"iter"
	"sort"
	"time"

	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/table"
)

// task list --json prints every task. From a snapshot it does so without
// decoding the table's tasks: the index keeps every task's place in
// taskLess order and, by position, its status, priority and dependent
// count when saved (listIndex), and each record starts with the task's
// listing. Only the tasks changed since the save (the state's map) are
// rendered as values, merged in at their places.

// listIndex is the listing index, parsed.
type listIndex struct {
	order      []uint32 // every position, in taskLess order
	status     []string // by position
	priority   []int
	dependents []int
}

// listIndex parses the listing index; an error for one that does not
// parse (it passed the index's checksum: a crafted file or a bug).
func (t *taskTable) listIndex() (*listIndex, error) {
	n := t.Len()
	rd := table.NewDec(t.listing)
	x := &listIndex{order: make([]uint32, n), status: make([]string, n), priority: make([]int, n), dependents: make([]int, n)}
	for k := range x.order {
		v := rd.Uint()
		if v >= uint64(n) {
			return nil, table.ErrDamaged
		}
		x.order[k] = uint32(v)
	}
	for i := range n {
		x.status[i], x.priority[i], x.dependents[i] = rd.Str(), int(rd.Int()), int(rd.Uint())
	}
	return x, rd.End()
}

// WriteListJSON writes what cliout.WriteJSON writes of ListItemsJSON of
// List(p, f, now), from the snapshot's listings. It reports false, having
// written nothing, when it cannot: no snapshot, or a label to filter by
// (the caller then lists the tasks as values).
func (s *State) WriteListJSON(w io.Writer, p Policy, f ListFilter, now time.Time) (bool, error) {
	tt := s.trk.table
	if tt == nil || f.Label != "" {
		return false, nil
	}
	x, err := tt.listIndex()
	if err != nil {
		return false, nil
	}
	admit := func(t *Task) bool {
		return (f.Status == "" || s.EffectiveStatus(t, now) == f.Status) && (f.Priority == nil || t.Priority == *f.Priority)
	}
	// The tasks decoded or changed since the save, and what they change
	// in the dependent counts: their saved records' links out, taken
	// back, and their own.
	var changed []*Task
	adjust := map[string]int{}
	count := func(t *Task, by int) {
		if t.Parent != "" {
			adjust[t.Parent] += by
		}
		for _, d := range t.Blockers {
			adjust[d.ID] += by
		}
		for _, l := range t.Links {
			adjust[l.ID] += by
		}
	}
	for id, t := range s.trk.m {
		if i := tt.Find(id); i >= 0 {
			base, _ := decodeRecord(tt.Record(i))
			count(base, -1)
		}
		if t == nil {
			continue
		}
		count(t, 1)
		if admit(t) {
			changed = append(changed, t)
		}
	}
	sortTasks(changed)
	dependents := func(id string) int {
		n := adjust[id]
		if i := tt.Find(id); i >= 0 {
			n += x.dependents[i]
		}
		return n
	}
	item := func(t *Task) any {
		n := dependents(t.ID)
		if v, ok := s.saved(t, now, false); ok {
			v.tail, v.item, v.dependents = t.listTail, true, n
			return v
		}
		return s.listItem(t, p, now, n)
	}
	return true, tt.Mapped(func(rec func(i int) *table.Dec) error {
		// Where each changed task goes among the saved ones: their keys
		// are read from their records, a binary search's worth.
		at := make([]int, len(changed))
		for k, c := range changed {
			at[k] = sort.Search(len(x.order), func(j int) bool {
				base, _ := decodeRecord(rec(int(x.order[j])))
				return taskLess(c, base)
			})
		}
		var items iter.Seq[any] = func(yield func(any) bool) {
			k := 0
			for j, i := range x.order {
				for ; k < len(changed) && at[k] <= j; k++ {
					if !yield(item(changed[k])) {
						return
					}
				}
				id := tt.IDs[i]
				if _, ok := s.trk.m[id]; ok {
					continue // listed with the changed ones
				}
				if f.Priority != nil && x.priority[i] != *f.Priority {
					continue
				}
				status := x.status[i]
				if status == StatusInProgress { // its lease may have run out since
					t, _ := decodeRecord(rec(int(i)))
					if f.Status == "" || s.EffectiveStatus(t, now) == f.Status {
						if !yield(item(t)) {
							return
						}
					}
					continue
				}
				if f.Status != "" && status != f.Status {
					continue
				}
				r := rec(int(i))
				if core, tail := r.Str(), r.Str(); core != "" {
					if !yield(Saved{core: core, tail: tail, item: true, dependents: x.dependents[i] + adjust[id]}) {
						return
					}
					continue
				}
				t, _ := decodeRecord(rec(int(i)))
				if !yield(s.listItem(t, p, now, x.dependents[i]+adjust[id])) {
					return
				}
			}
			for ; k < len(changed); k++ {
				if !yield(item(changed[k])) {
					return
				}
			}
		}
		return jsonout.WriteSeq(w, items, false)
	})
}
