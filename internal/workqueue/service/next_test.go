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
