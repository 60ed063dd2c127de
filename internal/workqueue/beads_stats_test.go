package workqueue

import (
	"maps"
	"testing"
	"time"
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
