package workqueue

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/jsonout"
)

// The listing index keeps each status as a byte: a table whose tasks hold
// more statuses than a byte counts (none spool writes) is listed from its
// tasks instead, and says the same.
func TestListIndexOfManyStatuses(t *testing.T) {
	t.Parallel()
	at, task := tableTasks()
	for _, c := range []struct {
		statuses int // in_progress and open among them
		fast     bool
	}{{3, true}, {256, true}, {257, false}} {
		var tasks []*Task
		for i := range 300 {
			x := task(fmt.Sprintf("sp-%04d", i), fmt.Sprintf("s%03d", i%(c.statuses-2)))
			x.Priority = i % 5
			x.Title = fmt.Sprintf("task %d", i)
			tasks = append(tasks, x)
		}
		// In the list of statuses as saved, the in-progress ones are read
		// whole again (a lease may have run out): a few of them too.
		tasks[7].Status, tasks[8].Status = StatusInProgress, StatusOpen
		whole := StateOf(tasks, nil)
		saved, err := NewTasksProjection(whole).MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(saved); err != nil {
			t.Fatal(err)
		}
		s := p.State()
		pol := DefaultPolicy()
		for _, f := range []ListFilter{{}, {Status: "s001"}, {Status: StatusInProgress}} {
			var want strings.Builder
			items := whole.ListItemsJSON(whole.List(pol, f, at), pol, at)
			if err := jsonout.WriteList(&want, len(items), func(i int) any { return items[i] }, false); err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			ok, err := s.WriteListJSON(&got, pol, f, at)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.fast {
				t.Fatalf("%d statuses, %+v: from the listings %v, want %v", c.statuses, f, ok, c.fast)
			}
			if ok && got.String() != want.String() {
				t.Fatalf("%d statuses, %+v:\n%s\nwant\n%s", c.statuses, f, got.String(), want.String())
			}
		}
	}
}
