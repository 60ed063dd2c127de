package workqueue

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/table"
)

// A label's count that reaches 0 goes: bd label list-all does not list a
// label no task has any more. The blocked label is never counted.
func TestCountLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before map[string]int
		labels []string
		k      int
		want   map[string]int
	}{
		{"added", map[string]int{}, []string{"ui", BlockedLabel}, 1, map[string]int{"ui": 1}},
		{"counted again", map[string]int{"ui": 1}, []string{"ui", "api"}, 1, map[string]int{"ui": 2, "api": 1}},
		{"taken out", map[string]int{"ui": 2, "api": 1}, []string{"ui"}, -1, map[string]int{"ui": 1, "api": 1}},
		{"the last one", map[string]int{"ui": 1, "api": 1}, []string{"ui", BlockedLabel}, -1, map[string]int{"api": 1}},
	} {
		n := maps.Clone(tc.before)
		countLabels(n, &Task{Labels: tc.labels}, tc.k)
		if !maps.Equal(n, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, n, tc.want)
		}
	}
}

// Tasks in progress when the table was saved count by their lease: in
// progress while it holds, open (or blocked, or waiting) once it ran out,
// and a lead time counts either way (an import's closed_at on a task in
// progress, say).
func TestBeadsStatsOfClaimedTasks(t *testing.T) {
	t.Parallel()
	at, task := tableTasks()
	lease := at.Add(time.Hour)
	claimed := func(id string, blockers ...string) *Task {
		x := task(id, StatusInProgress, blockers...)
		x.LeaseUntil = lease
		return x
	}
	tasks := []*Task{
		task("sp-0001", StatusOpen), task("sp-0002", StatusClosed),
		claimed("sp-0003"), claimed("sp-0004", "sp-0001"), claimed("sp-0005"), claimed("sp-0006"),
		task("sp-0007", StatusInProgress), // imported: no lease to run out
	}
	tasks[1].detail.ClosedAt = at.Add(3 * time.Hour)
	tasks[4].Labels = []string{BlockedLabel}
	tasks[5].detail.ClosedAt = at.Add(5 * time.Hour)
	whole := StateOf(tasks, nil)
	saved, err := NewTasksProjection(whole).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	for _, now := range []time.Time{at, lease.Add(-time.Nanosecond), lease, lease.Add(24 * time.Hour)} {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(saved); err != nil {
			t.Fatal(err)
		}
		got, ok := p.State().summaryBeadsStats(now)
		if want := whole.BeadsStats(DefaultPolicy(), now); !ok || got != want {
			t.Errorf("at %v: %+v (from the section: %v), want %+v", now, got, ok, want)
		}
	}
}

// A saved task can name a blocker or a parent that is not a task (an
// import left it dangling); a later import makes it. Nothing in the table
// leads from the new task to its namer, so bd's readers go to every task
// then: bd stats, bd blocked and bd epic status answer as the whole state.
// With nothing dangling, or nothing made since, they read the section.
func TestBeadsViewsOfADanglingName(t *testing.T) {
	t.Parallel()
	at, task := tableTasks()
	for _, c := range []struct {
		name    string
		saved   func() []*Task
		made    func() *Task // since the save
		section bool         // bd's readers still read it
	}{
		{"a dangling blocker made", func() []*Task {
			return []*Task{task("sp-000a", StatusOpen, "sp-000x"), task("sp-000b", StatusOpen)}
		}, func() *Task { return task("sp-000x", StatusOpen) }, false},
		{"a dangling parent made", func() []*Task {
			child := task("sp-000a", StatusClosed)
			child.Parent = "sp-000e"
			return []*Task{child, task("sp-000b", StatusOpen)}
		}, func() *Task { x := task("sp-000e", StatusOpen); x.Type = "epic"; return x }, false},
		{"a dangling blocker, another task made", func() []*Task {
			return []*Task{task("sp-000a", StatusOpen, "sp-000x"), task("sp-000b", StatusOpen)}
		}, func() *Task { return task("sp-000c", StatusOpen) }, false},
		{"nothing dangling", func() []*Task {
			return []*Task{task("sp-000a", StatusOpen, "sp-000b"), task("sp-000b", StatusOpen)}
		}, func() *Task { return task("sp-000c", StatusOpen, "sp-000a") }, true},
	} {
		table, err := NewTasksProjection(StateOf(c.saved(), nil)).MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(table); err != nil {
			t.Fatal(err)
		}
		s := p.State()
		made := c.made()
		s.trk.m[made.ID] = made
		whole := StateOf(append(c.saved(), c.made()), nil)
		if _, ok := s.summaryBeadsStats(at); ok != c.section {
			t.Errorf("%s: bd stats from the section %v, want %v", c.name, ok, c.section)
		}
		if got, want := s.BeadsStats(DefaultPolicy(), at), whole.BeadsStats(DefaultPolicy(), at); got != want {
			t.Errorf("%s: bd stats %+v, want %+v", c.name, got, want)
		}
		if got, want := fmt.Sprint(s.BeadsBlocked(DefaultPolicy(), at, "")), fmt.Sprint(whole.BeadsBlocked(DefaultPolicy(), at, "")); got != want {
			t.Errorf("%s: bd blocked %s, want %s", c.name, got, want)
		}
		if got, want := fmt.Sprint(s.Epics(DefaultPolicy(), at)), fmt.Sprint(whole.Epics(DefaultPolicy(), at)); got != want {
			t.Errorf("%s: bd epic status %s, want %s", c.name, got, want)
		}
	}
}

// With no cycle in the table when saved, a cycle now runs through a task
// changed since: an edge added to a saved task, or a task made since
// that a saved task's dangling dependency names. Found from those, the
// answer is the whole state's; none found, the tasks are not all read.
func TestCyclesThroughChangedTasks(t *testing.T) {
	t.Parallel()
	_, task := tableTasks()
	saved := func() []*Task { // a depends on b, b on c, c on a task not made yet
		return []*Task{task("sp-000a", StatusOpen, "sp-000b"), task("sp-000b", StatusOpen, "sp-000c"),
			task("sp-000c", StatusOpen, "sp-000n"), task("sp-000d", StatusClosed)}
	}
	table, err := NewTasksProjection(StateOf(saved(), nil)).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change func(m map[string]*Task)
		cycle  bool
	}{
		{"unchanged", func(map[string]*Task) {}, false},
		{"an edge that closes none", func(m map[string]*Task) { m["sp-000d"].Blockers = []Dep{{ID: "sp-000a"}} }, false},
		{"an edge added to a saved task", func(m map[string]*Task) { m["sp-000b"].Blockers = append(m["sp-000b"].Blockers, Dep{ID: "sp-000a"}) }, true},
		{"a task made since, named when saved", func(m map[string]*Task) { m["sp-000n"] = task("sp-000n", StatusOpen, "sp-000a") }, true},
		{"a parent made the edge", func(m map[string]*Task) { m["sp-000c"].Parent = "sp-000a" }, true},
	} {
		p := NewTasksProjection(NewState())
		if err := p.UnmarshalState(table); err != nil {
			t.Fatal(err)
		}
		s := p.State()
		whole := map[string]*Task{}
		for _, x := range saved() {
			whole[x.ID] = x
		}
		changed := map[string]*Task{}
		for _, id := range []string{"sp-000b", "sp-000c", "sp-000d"} {
			changed[id] = s.Task(id) // decoded, as a fold does before it changes one
		}
		c.change(changed)
		c.change(whole)
		for id, x := range changed {
			s.trk.m[id] = x
		}
		got := s.Cycles()
		want := StateOf(slices.Collect(maps.Values(whole)), nil).Cycles()
		if !slices.EqualFunc(got, want, slices.Equal) || (len(want) > 0) != c.cycle {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
		if !c.cycle && s.trk.lazy == nil {
			t.Errorf("%s: no cycle, and every task was read", c.name)
		}
	}
}

// closedAt reads ClosedAt from an encoded detail with every field set, as
// the decoded detail has it.
func TestClosedAtOfAnEncodedDetail(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	x := &TaskDetail{Description: "d", Design: "de", Acceptance: "a", Notes: "n", Assignee: "as", CreatedBy: "c",
		Owner: "o", CloseReason: "r", ParentBy: "p", ExternalRef: "e", UpdatedAt: at, ClosedAt: at.Add(time.Hour), ParentAt: at.Add(2 * time.Hour)}
	x.AddComment(Comment{ID: 1, Author: "ada", Text: "a comment", At: at})
	var w table.Enc
	encodeDetail(&w, x)
	raw := table.NewDec(string(w.Buf)).Str()
	if got := closedAt(&Task{ID: "sp-0001", rawDetail: raw}); !got.Equal(x.ClosedAt) {
		t.Fatalf("closedAt %v, want %v", got, x.ClosedAt)
	}
	if got := (&Task{ID: "sp-0001", rawDetail: raw}).Detail().ClosedAt; !got.Equal(x.ClosedAt) {
		t.Fatalf("the detail decoded says %v, want %v", got, x.ClosedAt)
	}
}
