package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Latest answers as a read of the whole log: one subject's events through
// the subject index and the search past it, the log's end, or all of it,
// with the state saved part of the way and the index written part of the
// way.
func TestLatestAsTheWholeLog(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, newRepo(t))
	batch := func(from, to int) {
		for i := from; i < to; i++ {
			write(t, s, eventlog.Draft{Type: fmt.Sprintf("x.%c", 'a'+i%3), Subject: fmt.Sprintf("s%d", i%5)})
		}
	}
	check := func(stage string) {
		t.Helper()
		for _, subject := range []string{"", "s0", "s3", "s9"} {
			for _, typ := range []string{"", "x.b"} {
				match := func(e *eventlog.Event) bool {
					return (subject == "" || e.Subject == subject) && (typ == "" || e.Type == typ)
				}
				all, err := eventlog.Latest(ctx, s.Log, 0, match)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{0, 1, 7, 1000} {
					want := all
					if n > 0 && len(want) > n {
						want = want[len(want)-n:]
					}
					got, _, err := s.Latest(ctx, subject, n, match)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.EqualFunc(got, want, func(a, b *eventlog.Event) bool { return a.ID == b.ID }) {
						t.Fatalf("%s: subject %q, type %q, n %d: %d events, want %d", stage, subject, typ, n, len(got), len(want))
					}
				}
			}
		}
	}
	batch(0, 60)
	check("unsaved")
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	batch(60, 90)
	check("saved, then more")
	s.Log.IndexSubjects(ctx, s.SubjectIndex(), s.Engine.KnownStarts(), 0)
	batch(90, 120)
	check("indexed, then more")
}

// A view whose tasks a read decoded whole is opened afresh by the next
// read, as a process that keeps its views (the board) needs: the whole in
// memory answers counts and a task's dependents slower than the snapshot.
func TestAViewMadeWholeIsReopened(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	s, _ := open(t, dir)
	for i := range 40 {
		evs, _, err := s.Write(ctx, t0, "ada", []string{workqueue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
			p, _ := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
			d, _, err := workqueue.AddTask(p.State(), workqueue.NewTask{Title: fmt.Sprintf("task %d", i), Priority: 2}, "sp", "w1", t0)
			return []eventlog.Draft{d}, err
		})
		if err != nil || len(evs) != 1 {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ = open(t, dir) // as the board opens it: the tasks read from the snapshot as asked for
	read := func() (*projections.View, *workqueue.TasksProjection) {
		v, err := s.Read(ctx, workqueue.Name)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
		if !ok {
			t.Fatal("no tasks projection")
		}
		return v, p
	}
	v1, p1 := read()
	if p1.Expanded() {
		t.Fatal("expanded before any read of every task")
	}
	if v, _ := read(); v != v1 {
		t.Fatal("a view not made whole was not kept")
	}
	n := 0
	for range p1.State().Tasks() {
		n++
	}
	if !p1.Expanded() || n != 40 {
		t.Fatalf("after reading %d tasks: expanded %v", n, p1.Expanded())
	}
	v2, p2 := read()
	if v2 == v1 || p2.Expanded() {
		t.Fatalf("the view made whole was kept (same %v, expanded %v)", v2 == v1, p2.Expanded())
	}
	if got := len(p2.State().TaskIDs()); got != 40 {
		t.Fatalf("the view opened afresh has %d tasks", got)
	}
}

// A view that every read makes whole is opened afresh only maxReopen times
// in a row, then kept whole: reopening it decoded every task each time.
func TestAViewEveryReadMakesWholeIsKept(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	s, _ := open(t, dir)
	for i := range 10 {
		s.Write(ctx, t0, "ada", []string{workqueue.Name}, func(v *projections.View) ([]eventlog.Draft, error) {
			p, _ := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
			d, _, err := workqueue.AddTask(p.State(), workqueue.NewTask{Title: fmt.Sprintf("task %d", i), Priority: 2}, "sp", "w1", t0)
			return []eventlog.Draft{d}, err
		})
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ = open(t, dir)
	var views []*projections.View
	for range 6 {
		v, err := s.Read(ctx, workqueue.Name)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
		p, _ := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
		for range p.State().Tasks() { // every read reads every task
		}
	}
	distinct := 0
	for i := range views {
		if i == 0 || views[i] != views[i-1] {
			distinct++
		}
	}
	if distinct != 1+maxReopen {
		t.Fatalf("%d views opened over 6 reads that each read every task, want %d", distinct, 1+maxReopen)
	}

	// Reads that alternate (the board's Tasks page, then its counts): each
	// read after one that read every task opens the view afresh.
	s, _ = open(t, dir)
	var prev *projections.View
	for i := range 8 {
		v, err := s.Read(ctx, workqueue.Name)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && i%2 == 1 && v == prev {
			t.Fatalf("read %d, after one that read every task, kept the whole view", i)
		}
		if i%2 == 0 {
			p, _ := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
			for range p.State().Tasks() {
			}
		}
		prev = v
	}
}
