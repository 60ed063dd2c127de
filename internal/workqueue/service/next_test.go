package service

import (
	"context"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

func newService(t *testing.T, dir string, now time.Time, actor string) *Service {
	t.Helper()
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Open(store.Env{Store: st, Now: now, Warn: func(string) {},
		Actor: func(context.Context) (string, error) { return actor, nil }})
}

// NextAnd's also sees the state Next decided on: a task whose lease ran out
// and that the same next claims again shows the expiry (its last error, its
// attempts), not the claim that expired.
func TestNextAndSeesTheExpiries(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newService(t, r.Root, t0, "ada@example.com")
	task, err := s.Add(ctx, workqueue.NewTask{Title: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, err := s.Next(ctx, nil, nil, "w1"); err != nil || c == nil {
		t.Fatalf("first claim: %v %v", c, err)
	}
	later := newService(t, r.Root, t0.Add(24*time.Hour), "bob@example.com")
	var seen workqueue.Entry
	c, _, err := later.NextAnd(ctx, nil, nil, "w2", func(st *workqueue.State, c *workqueue.Claim) []eventlog.Draft {
		if h := st.Entry(c.Task.ID); h != nil {
			seen = *h
		}
		return nil
	})
	if err != nil || c == nil || c.ID != task.ID {
		t.Fatalf("the claim after the lease ran out: %+v %v", c, err)
	}
	if seen.LastError != workqueue.LeaseExpiredError || seen.Attempts != 2 || seen.Worker != "w2" {
		t.Fatalf("also saw %+v; want the expiry's last error and the new claim (attempt 2, w2)", seen)
	}
}

// A state read is a snapshot: the writes the same process makes after it
// (a long-running command's next step) change neither the tasks nor the
// history it holds, whether they were decoded before the write or after.
func TestReadIsASnapshot(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newService(t, r.Root, t0, "ada@example.com")
	a, err := s.Add(ctx, workqueue.NewTask{Title: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Add(ctx, workqueue.NewTask{Title: "b"})
	if err != nil {
		t.Fatal(err)
	}
	s = newService(t, r.Root, t0, "ada@example.com") // the tasks read from the saved snapshot, decoded on demand
	held, err := s.Read(ctx, Both)
	if err != nil {
		t.Fatal(err)
	}
	if held.Task(a.ID).Status != workqueue.StatusOpen { // decoded before the writes
		t.Fatal("a is not open")
	}
	if c, _, err := s.Next(ctx, nil, nil, "w1"); err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	if _, err := s.Close(ctx, []string{a.ID, b.ID}, "done", false); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{a.ID, b.ID} {
		if got := held.Task(id).Status; got != workqueue.StatusOpen {
			t.Errorf("%s: the held state shows %s after later writes", id, got)
		}
		if h := held.Entry(id); h != nil && h.Status != workqueue.HistPending {
			t.Errorf("%s: the held history shows %s after later writes", id, h.Status)
		}
	}
	now, err := s.Read(ctx, Both)
	if err != nil {
		t.Fatal(err)
	}
	if now.Task(a.ID).Status != workqueue.StatusClosed || now.Task(b.ID).Status != workqueue.StatusClosed {
		t.Fatal("a state read after the writes does not show them")
	}
}
