package workqueue

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// A task that waited for a blocker when the table was written waits until
// that blocker is closed: in the state, or in a decision's overlay over it,
// which stands for the task of the same id.
func TestNamedByClosed(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	task := func(id, status string, blockers ...string) *Task {
		x := &Task{ID: id, Status: status, CreatedAt: at, detail: &TaskDetail{}}
		for _, b := range blockers {
			x.Blockers = append(x.Blockers, Dep{ID: b, At: at})
		}
		return x
	}
	saved, err := NewTasksProjection(StateOf([]*Task{
		task("sp-aaaa", StatusOpen), task("sp-cccc", StatusClosed),
		task("sp-wwww", StatusOpen, "sp-aaaa"), task("sp-xxxx", StatusOpen, "sp-cccc", "sp-aaaa"),
	}, nil)).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		now, over []*Task
		wantNamed []string
		reopened  bool // named, as stats asks, for a blocker reopened as well
	}{
		{"nothing changed", nil, nil, nil, false},
		{"its blocker changed, not closed", []*Task{task("sp-aaaa", StatusInProgress)}, nil, nil, false},
		{"its blocker closed", []*Task{task("sp-aaaa", StatusClosed)}, nil, []string{"sp-wwww", "sp-xxxx"}, false},
		{"closed in the overlay", []*Task{task("sp-aaaa", StatusOpen)}, []*Task{task("sp-aaaa", StatusClosed)}, []string{"sp-wwww", "sp-xxxx"}, false},
		{"closed, reopened in the overlay", []*Task{task("sp-aaaa", StatusClosed)}, []*Task{task("sp-aaaa", StatusOpen)}, nil, false},
		{"a blocker closed before the table, reopened", []*Task{task("sp-cccc", StatusOpen)}, nil, nil, false},
		{"a blocker closed before the table, changed", []*Task{task("sp-cccc", StatusClosed)}, nil, nil, false},
		{"stats: a blocker reopened", []*Task{task("sp-cccc", StatusOpen)}, nil, []string{"sp-xxxx"}, true},
		{"stats: a blocker closed", []*Task{task("sp-aaaa", StatusClosed)}, nil, []string{"sp-wwww", "sp-xxxx"}, true},
		{"stats: a blocker changed, not closed", []*Task{task("sp-aaaa", StatusInProgress)}, nil, nil, true},
	} {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(saved); err != nil {
			t.Fatal(err)
		}
		s := p.State()
		for _, x := range c.now {
			s.Task(x.ID) // decoded first, as a fold does
			s.trk.m[x.ID].Status = x.Status
		}
		over := map[string]*Task{}
		for _, x := range c.over {
			over[x.ID] = x
		}
		if got := slices.Sorted(maps.Keys(s.namedByClosing(over, c.reopened))); !slices.Equal(got, c.wantNamed) {
			t.Errorf("%s: named %v, want %v", c.name, got, c.wantNamed)
		}
	}
}

// An overlay written after a command read every task (bd's views do), or
// after an import replaced a task, gives every task its place in the
// table: the state opened with it answers as the one it was written from.
func TestOverlayAfterEveryTaskRead(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tasks []*Task
	for i := range 6 {
		tasks = append(tasks, &Task{ID: fmt.Sprintf("sp-%04d", i), Status: StatusOpen, Priority: i % 3,
			CreatedAt: at.Add(time.Duration(i) * time.Minute), detail: &TaskDetail{}})
	}
	saved, err := NewTasksProjection(StateOf(tasks, nil)).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	open := func() *TasksProjection {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(saved); err != nil {
			t.Fatal(err)
		}
		return p
	}
	imported, _ := json.Marshal(ImportedData{Title: "imported", Status: StatusOpen, CreatedAt: at, UpdatedAt: at})
	closed, _ := json.Marshal(ClosedData{Reason: "done"})
	for _, read := range []bool{false, true} {
		p := open()
		if read {
			p.State().allTasks()
		}
		for _, e := range []*eventlog.Event{
			{Type: TypeImported, Subject: "sp-0004", At: at, Data: imported}, // in the table
			{Type: TypeImported, Subject: "sp-0009", At: at, Data: imported}, // not
			{Type: TypeClosed, Subject: "sp-0001", At: at, Data: closed},
		} {
			if err := p.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
		b, err := p.MarshalOverlay()
		if err != nil {
			t.Fatal(err)
		}
		q := open()
		if err := q.UnmarshalOverlay(b); err != nil {
			t.Fatal(err)
		}
		got := taskIDs(q.State().Ready(DefaultPolicy(), ReadyFilter{}, at, 0))
		if exp := taskIDs(p.State().Ready(DefaultPolicy(), ReadyFilter{}, at, 0)); !slices.Equal(got, exp) {
			t.Errorf("every task read first %v: ready over the overlay %v, want %v", read, got, exp)
		}
	}
}
