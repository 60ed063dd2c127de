package projections

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// replayLog makes a log of n events in appends of batch events each (a
// multi-event append is held by readers until its last event), with data
// and subjects like a work queue's.
func replayLog(tb testing.TB, root string, n, batch int) *eventlog.Log {
	tb.Helper()
	l := eventlog.Open(eventlog.Options{Dir: filepath.Join(root, ".spool", "events"), PrivateDir: filepath.Join(root, "private")})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += batch {
		drafts := make([]eventlog.Draft, 0, batch)
		for k := i; k < min(i+batch, n); k++ {
			drafts = append(drafts, eventlog.Draft{Type: "task.commented", Subject: fmt.Sprintf("sp-%05d", k%10_000),
				Data: map[string]any{"text": "a note on progress, of a typical length for a comment", "n": k}})
		}
		if _, err := l.Append(context.Background(), at, "bench@example.com", drafts, eventlog.AppendOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	return l
}

// liveSampler is a projection of constant size that records the most heap
// live after a collection, every `every` events.
type liveSampler struct {
	n, every int
	max      uint64
}

func (s *liveSampler) Apply(*eventlog.Event) error {
	if s.n++; s.n%s.every == 0 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s.max = max(s.max, m.HeapAlloc)
	}
	return nil
}
func (s *liveSampler) MarshalState() ([]byte, error) { return nil, nil }
func (s *liveSampler) UnmarshalState([]byte) error   { return nil }
func (s *liveSampler) Files() ([]File, error)        { return nil, nil }

// A replay holds what its projections keep and a bounded window of the
// log, never the log: the heap live while replaying four times as many
// events grows by less than the events would take.
func TestReplayMemoryDoesNotGrowWithLog(t *testing.T) {
	peak := func(n int) uint64 {
		root := t.TempDir()
		l := replayLog(t, root, n, 50)
		s := &liveSampler{every: 1000}
		en := &Engine{Log: l, Root: root, StateDir: filepath.Join(root, ".spool", "state"),
			Specs: []Spec{StatsSpec, {Name: "sampler", Version: 1, New: func() Projection { return s }}}}
		v, err := en.Replay(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if v.Events() != n {
			t.Fatalf("replayed %d events, want %d", v.Events(), n)
		}
		return s.max
	}
	const short, long = 10_000, 40_000
	a, b := peak(short), peak(long)
	// Kept, the 30,000 more events would take 30,000 × (event + strings +
	// data) ≈ 10 MB; allow 2 MiB for the noise of a collector.
	t.Logf("live heap replaying %d events: %.1f MiB; %d: %.1f MiB", short, float64(a)/(1<<20), long, float64(b)/(1<<20))
	if b > a+2<<20 {
		t.Fatalf("replaying %d events left %.1f MiB live, %d events %.1f MiB: memory grows with the log",
			long, float64(b)/(1<<20), short, float64(a)/(1<<20))
	}
}

// BenchmarkReplay measures the read and the engine around trivial
// projections: what a replay costs besides the projections' own folds.
func BenchmarkReplay(b *testing.B) {
	const n = 50_000
	root := b.TempDir()
	l := replayLog(b, root, n, 2)
	specs := []Spec{StatsSpec}
	for i := range 4 {
		specs = append(specs, Spec{Name: fmt.Sprintf("count%d", i), Version: 1, New: func() Projection { return &counter{} }})
	}
	en := &Engine{Log: l, Root: root, StateDir: filepath.Join(root, ".spool", "state"), Specs: specs}
	b.ReportAllocs()
	for b.Loop() {
		v, err := en.Replay(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if v.Events() != n {
			b.Fatalf("replayed %d events", v.Events())
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
