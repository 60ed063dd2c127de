package workqueue

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/projections"
)

// The summary's counts and flags (stats_summary.go) never go stale: after
// random changes and a save, stats from the summary (the tables opened from
// a file, their index unread; or from bytes) is what the slow path counts
// over every task, at several times and under both policies; so it is with
// the history saved earlier than the tasks and its events folded since.
func TestSummaryStatsAfterSaves(t *testing.T) {
	t.Parallel()
	for seed := range 8 {
		r := rand.New(rand.NewPCG(uint64(seed), 33))
		w := newWorld(t)
		pol := DefaultPolicy()
		if seed%2 == 1 {
			pol.Kind = Progressive
		}
		pol.MaxFailures = 2
		c := &churn{w: w, r: r, pol: pol, at: t0, step: 600}
		check := func(round int, what string, s func() *State) {
			t.Helper()
			for j, now := range []time.Time{c.at, c.at.Add(-time.Hour), c.at.Add(5 * time.Minute), c.at.Add(48 * time.Hour)} {
				g := testGates[(seed+round+j)%len(testGates)] // under a gate too: the section of labels and types
				whole := s()
				whole.allTasks() // the slow path: every task counted
				want := whole.NativeStats(pol, g, now)
				fast := s()
				if fast.trk.lazy == nil || len(fast.trk.m) > 0 {
					t.Fatalf("seed %d round %d %s: not the summary's path", seed, round, what)
				}
				if got := fast.NativeStats(pol, g, now); got != want {
					t.Fatalf("seed %d round %d %s at %v, gate %+v: %+v, want %+v", seed, round, what, now, g, got, want)
				}
				if what == "from files" && fast.trk.lazy.loaded.Load() != nil {
					t.Fatalf("seed %d round %d %s, gate %+v: stats read the index", seed, round, what, g)
				}
			}
		}
		var oldHistory []byte // the history saved a round before the tasks
		var from int          // the events since
		for round := range 6 {
			c.change(60)
			tasks, err := NewTasksProjection(w.s).MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			history, err := NewQueueProjection(w.s).MarshalState()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			check(round, "from files", func() *State {
				s := NewState()
				openFile(t, filepath.Join(dir, "tasks"), tasks, NewTasksProjection(s).OpenState)
				openFile(t, filepath.Join(dir, "history"), history, NewQueueProjection(s).OpenState)
				return s
			})
			check(round, "from bytes", func() *State {
				s := NewState()
				if err := NewTasksProjection(s).UnmarshalState(tasks); err != nil {
					t.Fatal(err)
				}
				if err := NewQueueProjection(s).UnmarshalState(history); err != nil {
					t.Fatal(err)
				}
				sum, tt := s.trk.lazy.sum, s.trk.table()
				labelled, plain := 0, 0
				for k := range tt.open {
					if tt.labelledAt(k) {
						labelled++
					}
					if tt.plainAt(k) {
						plain++
					}
				}
				if sum.n != tt.Len() || sum.nOpen != len(tt.open) || sum.nLabelled != labelled || sum.nPlain != plain {
					t.Fatalf("seed %d round %d: summary %d %d %d %d, index %d %d %d %d", seed, round, sum.n, sum.nOpen, sum.nLabelled, sum.nPlain, tt.Len(), len(tt.open), labelled, plain)
				}
				return s
			})
			if oldHistory != nil {
				check(round, "history older", func() *State {
					s := NewState()
					if err := NewTasksProjection(s).UnmarshalState(tasks); err != nil {
						t.Fatal(err)
					}
					q := NewQueueProjection(s)
					if err := q.UnmarshalState(oldHistory); err != nil {
						t.Fatal(err)
					}
					for i := from; i < len(w.log); i++ {
						if err := q.Apply(&w.log[i]); err != nil {
							t.Fatal(err)
						}
					}
					return s
				})
			}
			oldHistory, from = history, len(w.log)
		}
	}
}

// openFile writes b to path and opens it as a snapshot file would be.
func openFile(t *testing.T, path string, b []byte, open func(f projections.SnapshotFile, off, size int64) error) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := open(f, 0, int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// An entry's class (histClass) stands for it in stats: counted and skipped
// as the entry is, at any time and under either policy.
func TestHistClassCountsAsTheEntry(t *testing.T) {
	t.Parallel()
	for _, status := range HistStatuses {
		for _, blocked := range []bool{false, true} {
			h := &Entry{ID: "sp-a", Status: status, Blocked: blocked, Attempts: 3, Failures: 3, LastFailureAt: t0, LeaseUntil: t0.Add(time.Hour)}
			c := histClass(h)
			if c == 0 {
				if status != HistWorking && status != HistFailed {
					t.Errorf("%s: no class", status)
				}
				continue
			}
			ht := &historyTable{class: string([]byte{c})}
			var e Entry
			stub := ht.statsEntryClass(0, &e)
			for _, pol := range []Policy{DefaultPolicy(), {Kind: Progressive, MaxFailures: 2}} {
				for _, now := range []time.Time{t0, t0.Add(2 * time.Hour)} {
					for _, task := range []*Task{nil, {Status: StatusOpen}, {Status: StatusOpen, Labels: []string{BlockedLabel}}} {
						var want, got Stats
						pol.count(&want, task, h, now)
						pol.count(&got, task, stub, now)
						if got != want || pol.Skip(Candidate{}, h, Gate{}, now) != pol.Skip(Candidate{}, stub, Gate{}, now) {
							t.Errorf("%s blocked %v: %+v, want %+v", status, blocked, got, want)
						}
					}
				}
			}
		}
	}
}
