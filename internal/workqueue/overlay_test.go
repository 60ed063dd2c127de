package workqueue

import (
	"maps"
	"slices"
	"testing"
	"time"
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
