package workqueue_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// A task.created for an id that exists (a forged event, or two writers'
// ids colliding) changes nothing of the first creation: title, priority,
// labels, parent, blockers, texts, creation time. The queue's fold keeps
// the first task, and the tracker's, in memory or spilled, writes what it
// writes without the second event.
func TestDuplicateCreateKeepsTheFirst(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	other := &eventlog.Event{ID: "e0", Writer: "w0", Seq: 1, At: at, Actor: "ada", Type: workqueue.TypeCreated, Subject: "sp-other",
		Data: []byte(`{"title":"another"}`)}
	first := &eventlog.Event{ID: "e1", Writer: "w1", Seq: 1, At: at, Actor: "ada", Type: workqueue.TypeCreated, Subject: "sp-dup",
		Data: []byte(`{"title":"the first","priority":1,"labels":["x"]}`)}
	second := &eventlog.Event{ID: "e2", Writer: "w2", Seq: 1, At: at.Add(time.Hour), Actor: "bob", Type: workqueue.TypeCreated, Subject: "sp-dup",
		Data: []byte(`{"title":"the second","priority":4,"labels":["y"],"parent":"sp-other","deps":["sp-other"],"description":"forged","owner":"bob"}`)}

	s := workqueue.NewState()
	for _, e := range []*eventlog.Event{other, first, second} {
		if err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	got := s.Task("sp-dup")
	if got == nil || got.Title != "the first" || got.Priority != 1 || len(got.Labels) != 1 || got.Labels[0] != "x" || got.Parent != "" ||
		len(got.Blockers) != 0 || !got.CreatedAt.Equal(at) {
		t.Fatalf("the queue's fold: the second creation changed the task: %+v", got)
	}
	if d := got.Detail(); d.Description != "" || d.CreatedBy != "ada" || d.Owner != "ada" {
		t.Fatalf("the queue's fold: the second creation changed its detail: %+v", d)
	}

	for _, dir := range []string{"", t.TempDir()} {
		want := foldAndWrite(t, []*eventlog.Event{other, first}, "")
		with := foldAndWrite(t, []*eventlog.Event{other, first, second}, dir)
		if !bytes.Equal(with[0], want[0]) || !bytes.Equal(with[1], want[1]) {
			t.Errorf("spilled %v: the tracker with the second creation writes\n%s\nwithout it\n%s", dir != "", with[1], want[1])
		}
	}
}
