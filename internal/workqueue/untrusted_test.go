package workqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// A task id names the orchestrator's worktree, run directory and branch,
// and anyone who can push writes events: the fold takes a task, and keeps
// a queue entry, only under an id a command makes or imports.
func TestFoldTakesOnlyTaskIDsPathsCanBeMadeOf(t *testing.T) {
	t.Parallel()
	bad := []string{"../../victim", "a/b", `a\b`, ".hidden", "-rf", "--upload-pack=x", "..", ".", "", "a b", "a\x00b", "é",
		strings.Repeat("a", MaxIDLength+1)}
	good := []string{"bd-a1b2", "bd-a1b2.1", "bd-a1b2.1.3", "sp-4mx5", "Proj_X-12", strings.Repeat("a", MaxIDLength)}
	for _, make := range []eventlog.Draft{
		{Type: TypeCreated, Data: CreatedData{Title: "t", IssueType: "task"}},
		{Type: TypeImported, Data: ImportedData{Title: "t", Status: StatusOpen, IssueType: "task"}},
	} {
		w := newWorld(t)
		ids := &IDsProjection{}
		for _, id := range append(slices.Clone(bad), good...) {
			made := make
			made.Subject = id
			for _, d := range []eventlog.Draft{made,
				{Type: TypeClaimed, Subject: id, Data: ClaimedData{Worker: "w", Attempt: 1}},
				{Type: TypeBlocked, Subject: id, Data: BlockedData{Reason: "x"}},
			} {
				w.apply("mallory", t0, d)
				ids.Apply(&w.log[len(w.log)-1])
			}
		}
		for _, id := range bad {
			if w.s.HasTask(id) || w.s.Entry(id) != nil || ids.HasTask(id) {
				t.Errorf("%s %q was folded", make.Type, id)
			}
		}
		for _, id := range good {
			if !w.s.HasTask(id) || w.s.Entry(id) == nil || make.Type == TypeCreated && !ids.HasTask(id) {
				t.Errorf("%s %q was not folded", make.Type, id)
			}
		}
	}
}

// Blockers are added many at once as they are one by one (the first of an
// id wins, never the task itself), in whatever order an event lists them.
func TestAddBlockersIsAddBlocker(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var existing, deps []Dep
		for i := rng.IntN(5); i > 0; i-- {
			existing = append(existing, Dep{ID: fmt.Sprint("sp-", rng.IntN(30)), By: "old"})
		}
		for i := rng.IntN(40); i > 0; i-- {
			deps = append(deps, Dep{ID: fmt.Sprint("sp-", rng.IntN(30)), By: fmt.Sprint(i)})
		}
		one, many := &Task{ID: "sp-7"}, &Task{ID: "sp-7"}
		for _, d := range existing {
			one.addBlocker(d)
			many.addBlocker(d)
		}
		for _, d := range deps {
			one.addBlocker(d)
		}
		many.addBlockers(deps)
		if !slices.Equal(one.Blockers, many.Blockers) || (one.Blockers == nil) != (many.Blockers == nil) {
			t.Fatalf("round %d: one by one %v, at once %v", round, one.Blockers, many.Blockers)
		}
	}
	got := removeLabels([]string{"a", "b", "c", "d"}, []string{"x", "b", "y", "z", "w", "v", "u", "t", "d", "s"})
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("removeLabels: %v", got)
	}
}

// What the fuzzer found: a lease written with an offset, or at a time the
// tables cannot keep (nanoseconds in an int64), did not survive the
// snapshot, so history.json differed after a reload. Such a time is
// folded in UTC, and an event with one out of range is skipped.
func TestFoldKeepsOnlyTimesASnapshotKeeps(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("t", 2, t0)
	offset := t0.Add(time.Hour).In(time.FixedZone("", -7*3600))
	w.apply("ada", t0, eventlog.Draft{Type: TypeClaimed, Subject: id, Data: ClaimedData{Worker: "w", Attempt: 1, LeaseUntil: offset}})
	if h := w.s.Entry(id); h == nil || h.LeaseUntil.Location() != time.UTC || !h.LeaseUntil.Equal(offset) {
		t.Fatalf("lease %v", w.s.Entry(id))
	}
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	w.apply("ada", t0, eventlog.Draft{Type: TypeHeartbeat, Subject: id, Data: HeartbeatData{LeaseUntil: far}},
		eventlog.Draft{Type: TypeImported, Subject: "bd-far", Data: ImportedData{Title: "far", Status: StatusOpen, IssueType: "task", CreatedAt: far}})
	if h := w.s.Entry(id); !h.LeaseUntil.Equal(offset) || w.s.HasTask("bd-far") {
		t.Fatalf("a time no snapshot keeps was folded: lease %v, bd-far %v", h.LeaseUntil, w.s.HasTask("bd-far"))
	}
}
