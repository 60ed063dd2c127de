package workqueue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// overlayOf is what p's WriteOverlay writes.
func overlayOf(p projections.Overlayer) ([]byte, error) {
	var b bytes.Buffer
	err := p.WriteOverlay(&b)
	return b.Bytes(), err
}

// tableTasks makes tasks for a table, all made at at.
func tableTasks() (at time.Time, task func(id, status string, blockers ...string) *Task) {
	at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return at, func(id, status string, blockers ...string) *Task {
		x := &Task{ID: id, Status: status, CreatedAt: at, detail: &TaskDetail{}}
		for _, b := range blockers {
			x.Blockers = append(x.Blockers, Dep{ID: b, At: at})
		}
		return x
	}
}

// A task that waited for a blocker when the table was written waits until
// that blocker is closed: in the state, or in a decision's overlay over it,
// which stands for the task of the same id.
func TestNamedByClosed(t *testing.T) {
	t.Parallel()
	_, task := tableTasks()
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

// overlayFixture returns an opener of a table of six tasks, and folded
// over one (every task read first, with read): an import of a task it
// holds, one of a task it does not, and a task closed.
func overlayFixture(tb testing.TB, read bool) (open func() *TasksProjection, p *TasksProjection, at time.Time) {
	tb.Helper()
	at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tasks []*Task
	for i := range 6 {
		tasks = append(tasks, &Task{ID: fmt.Sprintf("sp-%04d", i), Status: StatusOpen, Priority: i % 3,
			CreatedAt: at.Add(time.Duration(i) * time.Minute), detail: &TaskDetail{}})
	}
	saved, err := NewTasksProjection(StateOf(tasks, nil)).MarshalState()
	if err != nil {
		tb.Fatal(err)
	}
	open = func() *TasksProjection {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(saved); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	imported, _ := json.Marshal(ImportedData{Title: "imported", Status: StatusOpen, CreatedAt: at, UpdatedAt: at})
	closed, _ := json.Marshal(ClosedData{Reason: "done"})
	p = open()
	if read {
		p.State().allTasks()
	}
	for _, e := range []*eventlog.Event{
		{Type: TypeImported, Subject: "sp-0004", At: at, Data: imported}, // in the table
		{Type: TypeImported, Subject: "sp-0009", At: at, Data: imported}, // not
		{Type: TypeClosed, Subject: "sp-0001", At: at, Data: closed},
	} {
		if err := p.Apply(e); err != nil {
			tb.Fatal(err)
		}
	}
	return open, p, at
}

// An overlay written after a command read every task (bd's views do), or
// after an import replaced a task, gives every task its place in the
// table: the state opened with it answers as the one it was written from.
func TestOverlayAfterEveryTaskRead(t *testing.T) {
	t.Parallel()
	for _, read := range []bool{false, true} {
		open, p, at := overlayFixture(t, read)
		b, err := overlayOf(p)
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

// An overlay is local and checksummed, but whatever its bytes, loading it
// puts all of it in place or none, and the state still answers.
func FuzzUnmarshalOverlay(f *testing.F) {
	open, p, at := overlayFixture(f, false)
	b, err := overlayOf(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte("sp-0007\nsp-0008"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q := open()
		if err := q.UnmarshalOverlay(bytes.Clone(b)); err != nil {
			if len(q.State().trk.m) != 0 || len(q.changed.ids) != 0 {
				t.Fatalf("an overlay refused (%v) left %d tasks in place", err, len(q.State().trk.m))
			}
		}
		q.State().Ready(DefaultPolicy(), ReadyFilter{}, at, 0)
		q.State().NativeStats(DefaultPolicy(), Gate{}, at)
		ids := &IDsProjection{}
		if err := ids.UnmarshalOverlay(bytes.Clone(b)); err != nil && len(ids.fresh) != 0 {
			t.Fatalf("an ids overlay refused (%v) left ids in place", err)
		}
	})
}

// An import that replaces a task of the table keeps the ids of the tasks
// that named it there: a blocker closed or reopened by an import ends
// or starts their waits, as it does for a state held whole.
func TestImportReplacingABlocker(t *testing.T) {
	t.Parallel()
	at, task := tableTasks()
	saved, err := NewTasksProjection(StateOf([]*Task{
		task("sp-bbbb", StatusOpen), task("sp-cccc", StatusClosed),
		task("sp-wwww", StatusOpen, "sp-bbbb"), // waits for b
		task("sp-pppp", StatusOpen, "sp-cccc"), // ready by itself
	}, nil)).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	imported := func(id, status string) *eventlog.Event {
		d, _ := json.Marshal(ImportedData{Title: "imported " + id, Status: status, CreatedAt: at, UpdatedAt: at})
		return &eventlog.Event{Type: TypeImported, Subject: id, At: at, Data: d}
	}
	pol := DefaultPolicy()
	for _, e := range []*eventlog.Event{imported("sp-bbbb", StatusClosed), imported("sp-cccc", "blocked")} {
		open := func(whole bool) *State {
			p := NewTasksProjection(NewState())
			if err := p.UnmarshalState(saved); err != nil {
				t.Fatal(err)
			}
			if whole {
				p.State().allTasks()
			}
			if err := p.Apply(e); err != nil {
				t.Fatal(err)
			}
			return p.State()
		}
		want, got := taskIDs(open(true).Ready(pol, ReadyFilter{}, at, 0)), taskIDs(open(false).Ready(pol, ReadyFilter{}, at, 0))
		if !slices.Equal(got, want) {
			t.Errorf("%s imported: ready on the table %v, held whole %v", e.Subject, got, want)
		}
		if w, g := open(true).NativeStats(pol, Gate{}, at), open(false).NativeStats(pol, Gate{}, at); w.CurrentlyReady != g.CurrentlyReady {
			t.Errorf("%s imported: stats' ready on the table %d, held whole %d", e.Subject, g.CurrentlyReady, w.CurrentlyReady)
		}
	}
}
