package service

import (
	"context"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/store"
)

// A scheduler read is a snapshot: a worker's later writes in the same
// process (its claim, a segment's end) change neither the job nor its
// trail in the state read before them.
func TestReadIsASnapshot(t *testing.T) {
	ctx := context.Background()
	s, sub := submitted(t)
	held, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, err := held.Job(sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	trail := len(before.Trail)
	c, err := s.Claim(ctx, "w1", 1)
	if err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	if c.Job.Status != jobs.Running || c.Job.Worker != "w1" || c.Job.LeaseUntil.IsZero() {
		t.Fatalf("the claim returned the job as %s by %q, lease %v; want it as the claim left it", c.Job.Status, c.Job.Worker, c.Job.LeaseUntil)
	}
	if _, _, err := s.SegmentDone(ctx, sub.ID, "w1", jobs.SegmentEnd{Segment: 0}); err != nil {
		t.Fatal(err)
	}
	after, _ := held.Job(sub.ID)
	if after.Status != jobs.Queued || len(after.Trail) != trail || len(after.Segs) != 0 {
		t.Fatalf("the held state shows %s, %d transitions, %d segments after later writes; want queued, %d, 0",
			after.Status, len(after.Trail), len(after.Segs), trail)
	}
	now2, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := now2.Job(sub.ID); j.Status == jobs.Queued {
		t.Fatal("a state read after the writes does not show them")
	}
}

// A worker's goroutines share one Service: a read on one while another
// writes takes its snapshot under the store's lock (go test -race).
func TestSnapshotsWhileAnotherGoroutineWrites(t *testing.T) {
	ctx := context.Background()
	s, sub := submitted(t)
	if c, err := s.Claim(ctx, "w1", 1); err != nil || c == nil {
		t.Fatalf("claim: %v %v", c, err)
	}
	done := make(chan error, 1)
	go func() {
		for range 50 {
			if _, err := s.Heartbeat(ctx, sub.ID, "w1"); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 50 {
		held, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if j, err := held.Job(sub.ID); err != nil || j.Worker != "w1" {
			t.Fatalf("read %+v, %v", j, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// submitted is a scheduler on a fresh repository with one job of two
// segments submitted.
func submitted(t *testing.T) (*Service, jobs.Submitted) {
	t.Helper()
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	st, err := store.Open(context.Background(), r.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := Open(store.Env{Store: st, Now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Warn: func(string) {},
		Actor: func(context.Context) (string, error) { return "ada@example.com", nil }})
	sub, err := s.Submit(context.Background(), jobs.Submit{Name: "render", Argv: []string{"true"}, Slots: 1, Segments: 2})
	if err != nil {
		t.Fatal(err)
	}
	return s, sub
}
