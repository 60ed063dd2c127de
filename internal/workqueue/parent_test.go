package workqueue

import (
	"github.com/spoolhq/spool/eventlog"
	"slices"
	"strings"
	"testing"
	"time"
)

// Re-parenting: a task moves under another parent, or under none, as a
// dependency does in bd (updated_at stays); a task never ends up its own
// ancestor, nor waiting for itself through parents and blockers.
func TestReparent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	epic := w.add("epic", 2, t0)
	other := w.add("other epic", 2, t0)
	blocker := w.add("blocker", 2, t0)
	d, child, err := AddTask(w.s, NewTask{Title: "child", Priority: 1, Parent: epic}, "sp", "writer1", t0)
	w.must("ada", t0, []eventlog.Draft{d}, err)
	d, grandchild, err := AddTask(w.s, NewTask{Title: "grandchild", Priority: 1, Parent: child}, "sp", "writer1", t0)
	w.must("ada", t0, []eventlog.Draft{d}, err)
	dep, err := AddDep(w.s, other, blocker) // other waits for blocker
	w.must("ada", t0, []eventlog.Draft{dep}, err)
	parent := func(p string) Update { return Update{Parent: &p} }

	for _, tc := range []struct {
		name, id, parent, code string
	}{
		{"its own parent", child, child, "dependency_cycle"},
		{"under its child", child, grandchild, "dependency_cycle"},
		{"under its grandchild", epic, grandchild, "dependency_cycle"},
		{"under a task that waits for it", blocker, other, "dependency_cycle"},
		{"under a task that does not exist", child, "sp-nope", "not_found"},
		{"of a task that does not exist", "sp-nope", epic, "not_found"},
		{"the parent it has", child, epic, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drafts, err := UpdateTask(w.s, tc.id, parent(tc.parent))
			if code(err) != tc.code || err == nil && len(drafts) > 0 {
				t.Fatalf("got %v (code %q), drafts %+v; want code %q and nothing appended", err, code(err), drafts, tc.code)
			}
		})
	}
	if _, err := UpdateTask(w.s, child, parent(grandchild)); err == nil || !contains(err.Error(), "cannot be its own ancestor") {
		t.Fatalf("the message says why: %v", err)
	}

	ready := func() []string {
		var ids []string
		for _, t := range w.s.Ready(DefaultPolicy(), ReadyFilter{}, t0, 0) {
			ids = append(ids, t.ID)
		}
		return ids
	}
	// Under the other epic, which waits for its blocker: child and
	// grandchild wait too; the dependency record is dated at the move.
	moved := t0.Add(time.Hour)
	drafts, err := UpdateTask(w.s, child, parent(other))
	w.must("bob", moved, drafts, err)
	if len(drafts) != 1 || drafts[0].Type != TypeReparented {
		t.Fatalf("drafts %+v", drafts)
	}
	c := w.s.Task(child)
	if c.Parent != other || !c.Detail().UpdatedAt.Equal(t0) {
		t.Fatalf("after the move: parent %s, updated_at %v", c.Parent, c.Detail().UpdatedAt)
	}
	if deps := c.deps(); len(deps) != 1 || deps[0].DependsOnID != other || !deps[0].CreatedAt.Equal(moved) || deps[0].CreatedBy != "bob" {
		t.Fatalf("dependency records %+v", deps)
	}
	if got := ready(); slices.Contains(got, child) || slices.Contains(got, grandchild) {
		t.Fatalf("ready %v: the new parent waits", got)
	}
	// Under none: ready again, with no parent-child record.
	drafts, err = UpdateTask(w.s, child, parent(""))
	w.must("bob", moved, drafts, err)
	if c := w.s.Task(child); c.Parent != "" || len(c.deps()) != 0 {
		t.Fatalf("after removing the parent: %+v %+v", c, c.deps())
	}
	if got := ready(); !slices.Contains(got, child) || !slices.Contains(got, grandchild) {
		t.Fatalf("ready %v", got)
	}
	// Now free of its old epic, the epic may go under it.
	drafts, err = UpdateTask(w.s, epic, parent(grandchild))
	w.must("bob", moved, drafts, err)
	if w.s.Task(epic).Parent != grandchild {
		t.Fatal("epic not moved")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
