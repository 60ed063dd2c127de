package workqueue

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// claim claims id by name as actor and applies it.
func (w *world) claim(p Policy, id, actor string, at time.Time) {
	w.t.Helper()
	drafts, err := ClaimTask(w.s, p, id, actor, actor, at)
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply(actor, at, drafts...)
}

// must applies what a decision returned, failing the test on its error.
func (w *world) must(actor string, at time.Time, drafts []eventlog.Draft, err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply(actor, at, drafts...)
}

// Every task counts once, under the status the queue gives it: the
// counters but in_backoff and currently_ready add up to total_seen, which
// counts the tracker's tasks whether or not they were ever claimed.
func TestStatsPartitionEveryTask(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.MaxFailures = 3
	w := newWorld(t)
	never := w.add("never claimed", 2, t0)
	working := w.add("working", 2, t0)
	backoff := w.add("failed twice", 2, t0)
	again := w.add("failed once", 2, t0)
	done := w.add("done", 2, t0)
	closed := w.add("closed by hand", 2, t0)
	blocked := w.add("blocked by hand", 2, t0)
	abandoned := w.add("abandoned", 2, t0)
	deferred := w.add("deferred", 2, t0)
	at := t0.Add(time.Minute)

	w.claim(p, working, "a", at)
	for range 2 {
		w.claim(p, backoff, "a", at)
		w.fail(p, backoff, "a", "boom", at)
	}
	w.claim(p, again, "a", at)
	w.fail(p, again, "a", "boom", at)
	w.claim(p, done, "a", at)
	d, err := Done(w.s, p, done, "a", "", at)
	w.must("a", at, d, err)
	c, err := CloseTasks(w.s, []string{closed}, "not needed")
	w.must("a", at, c, err)
	b, err := Block(w.s, blocked, "waits for a human")
	w.must("a", at, []eventlog.Draft{b}, err)
	for range 3 {
		w.claim(p, abandoned, "a", at)
		w.fail(p, abandoned, "a", "boom", at)
	}
	s := "deferred"
	u, err := UpdateTask(w.s, deferred, Update{Status: &s})
	w.must("a", at, u, err)
	// A bead a bd/br source offered once, claimed and failed: history only.
	drafts, claim, err := Next(w.s, []Candidate{{ID: "bd-1", Title: "bead", Priority: 0}}, false, p, Gate{}, "a", "a", at)
	if err != nil || claim == nil || claim.Task.ID != "bd-1" {
		t.Fatalf("claiming the bead: %v %v", claim, err)
	}
	w.apply("a", at, drafts...)
	w.fail(p, "bd-1", "a", "boom", at)

	got := p.Stats(w.s, true, nil, 7, at)
	want := Stats{TotalSeen: 10, Completed: 2, Failed: 3, InBackoff: 1, Abandoned: 1, Blocked: 1, Working: 1, Pending: 2, CurrentlyReady: 7}
	if got != want {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	if sum := got.Completed + got.Failed + got.Abandoned + got.Blocked + got.Working + got.Pending; sum != got.TotalSeen {
		t.Fatalf("the partition adds up to %d, total_seen is %d", sum, got.TotalSeen)
	}
	for id, want := range map[string]string{never: HistPending, deferred: HistPending, working: HistWorking, backoff: HistFailed,
		again: HistFailed, done: HistCompleted, closed: HistCompleted, blocked: HistBlocked, abandoned: HistAbandoned} {
		if got := p.QueueStatus(w.s.Task(id), w.s.Entry(id), at); got != want {
			t.Errorf("%s: QueueStatus %s, want %s", w.s.Task(id).Title, got, want)
		}
	}

	// The working claim's lease runs out: a failed attempt, not working.
	later := at.Add(2 * time.Hour)
	got = p.Stats(w.s, true, nil, 0, later)
	if got.Working != 0 || got.Failed != 4 || got.InBackoff != 0 || got.TotalSeen != 10 {
		t.Fatalf("after the lease ran out: %+v", got)
	}

	// With a bd/br source: the beads it offers now (bd-2 new, bd-1 known)
	// and every task with a history.
	got = p.Stats(w.s, false, []Candidate{{ID: "bd-1"}, {ID: "bd-2"}, {ID: "bd-2"}}, 1, at)
	entries := len(w.s.allHistory())
	if got.TotalSeen != entries+1 || got.Pending != 1 {
		t.Fatalf("with a source: %+v (history has %d entries)", got, entries)
	}
}

// An entry records when its last attempt ended, whichever way it ended,
// apart from when it was claimed; history shows the end.
func TestLastAttemptEnded(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	claimed, ended, late := t0.Add(time.Minute), t0.Add(20*time.Minute), t0.Add(3*time.Hour)
	one := func(d eventlog.Draft, err error) ([]eventlog.Draft, error) { return []eventlog.Draft{d}, err }
	for _, tc := range []struct {
		name  string
		end   func(s *State, id string) ([]eventlog.Draft, error)
		asked time.Time // when history is asked
		want  time.Time // when the attempt ended
	}{
		{"succeeded", func(s *State, id string) ([]eventlog.Draft, error) { return Done(s, p, id, "a", "", ended) }, ended, ended},
		{"failed", func(s *State, id string) ([]eventlog.Draft, error) { return Fail(s, p, id, "a", "boom", ended) }, ended, ended},
		{"released", func(s *State, id string) ([]eventlog.Draft, error) { return one(Release(s, p, id, "a", ended)) }, ended, ended},
		{"closed under the claim", func(s *State, id string) ([]eventlog.Draft, error) { return CloseTasks(s, []string{id}, "") }, ended, ended},
		{"blocked under the claim", func(s *State, id string) ([]eventlog.Draft, error) { return one(Block(s, id, "needs a human")) }, ended, ended},
		{"lease ran out, not recorded", func(*State, string) ([]eventlog.Draft, error) { return nil, nil }, late, claimed.Add(p.Lease)},
		{"lease ran out, recorded", func(s *State, _ string) ([]eventlog.Draft, error) { return Expire(s, p, late), nil }, late, claimed.Add(p.Lease)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.add("t", 2, t0)
			w.claim(p, id, "a", claimed)
			if j := p.HistoryView(*w.s.Entry(id), claimed); j.LastEndedAt != nil {
				t.Fatalf("while the attempt runs, it has not ended: %v", j.LastEndedAt)
			}
			d, err := tc.end(w.s, id)
			w.must("a", ended, d, err)
			j := p.HistoryView(*w.s.Entry(id), tc.asked)
			if j.LastAttempt == nil || !j.LastAttempt.Equal(claimed) {
				t.Errorf("last_attempt %v, want the claim at %v", j.LastAttempt, claimed)
			}
			if j.LastEndedAt == nil || !j.LastEndedAt.Equal(tc.want) {
				t.Errorf("last_attempt_ended_at %v, want %v", j.LastEndedAt, tc.want)
			}
		})
	}
}
