package workqueue

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

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

// bd ready leaves a workflow's items out (BeadsWorkflow): from the
// listings, a saved task's type is read from its listing.
func TestBeadsReadyFromListings(t *testing.T) {
	t.Parallel()
	at, task := tableTasks()
	var tasks []*Task
	for i, c := range []struct{ id, typ, status string }{
		{"sp-0001", "task", StatusOpen}, {"sp-0002", "molecule", StatusOpen}, {"sp-0003", "gate", StatusOpen},
		{"sp-mol-0004", "task", StatusOpen}, {"sp-wisp-0005", "", StatusOpen}, {"sp-0006", "bug", StatusInProgress},
		{"sp-0007", "", StatusOpen}, {"sp-0008", "merge-request", StatusInProgress}, {"sp-0009", "epic", StatusClosed},
		{"sp-0010", "feature", StatusOpen},
	} {
		x := task(c.id, c.status)
		x.Type, x.Priority, x.Title = c.typ, i%3, "task "+c.id
		x.CreatedAt = at.Add(-time.Duration(i*12) * time.Hour) // some within bd's 48 hours, some not
		tasks = append(tasks, x)
	}
	tasks[6].Labels = []string{BlockedLabel}
	whole := StateOf(tasks, nil)
	saved, err := NewTasksProjection(whole).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	pol := DefaultPolicy()
	for _, policy := range []string{"hybrid", "priority", "oldest"} {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(saved); err != nil {
			t.Fatal(err)
		}
		ready, err := whole.ReadyBeads(pol, ReadyFilter{Claimed: true}, at, func(t *Task) bool { return !BeadsWorkflow(t) }, policy, 0)
		if err != nil {
			t.Fatal(err)
		}
		items := whole.ViewsJSON(ready, pol, at, true)
		var want, got strings.Builder
		if err := jsonout.WriteList(&want, len(items), func(i int) any { return items[i] }, false); err != nil {
			t.Fatal(err)
		}
		if ok, err := p.State().WriteBeadsReadyJSON(&got, pol, at, policy); !ok || err != nil {
			t.Fatalf("%s: from the listings %v (%v)", policy, ok, err)
		}
		if got.String() != want.String() {
			t.Fatalf("%s:\n%s\nwant\n%s", policy, got.String(), want.String())
		}
		if strings.Contains(got.String(), "molecule") || strings.Contains(got.String(), "-mol-") || !strings.Contains(got.String(), "sp-0010") {
			t.Fatalf("%s: a workflow's item listed, or a task left out:\n%s", policy, got.String())
		}
	}
	if _, err := whole.WriteBeadsReadyJSON(io.Discard, pol, at, "newest"); err == nil {
		t.Fatal("an unknown sort policy was taken")
	}
}

func TestListingType(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"", "task", "molecule", `say "gate"`, `a\b`, "é", "\"issue_type\":\"gate"} {
		x := &Task{ID: "sp-1", Title: `"issue_type":"molecule"`, Type: typ, detail: &TaskDetail{Description: `{"issue_type":"gate"}`}}
		compact, err := json.Marshal(x.base())
		if err != nil {
			t.Fatal(err)
		}
		listed, err := json.MarshalIndent(x.base(), "  ", "  ") // as a listing is saved
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{compact, listed} {
			if got := listingType(string(b)); got != typ {
				t.Errorf("type %q: read %q from %s", typ, got, b)
			}
		}
	}
}
