package jobs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/table"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// history is the events of a random scheduler history (built's).
func history(t testing.TB, seed uint64, steps int) []*eventlog.Event {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	c := newClone(fmt.Sprintf("w%d", seed)).(*clone)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var out []*eventlog.Event
	seq := 0
	for range steps {
		now = now.Add(time.Duration(r.IntN(600)) * time.Second)
		out = append(out, projectiontest.Step(t, c, r, now, &seq)...)
	}
	return out
}

func fold(events []*eventlog.Event) *jobs.Projection {
	p := jobs.Spec.New().(*jobs.Projection)
	for _, e := range events {
		p.Apply(e)
	}
	return p
}

// A snapshot read lazily (UnmarshalChecked) is the one read whole: every
// job found alone is the job decoded with the others, the state read at
// last is the same, and events folded after either load leave the same
// state.
func TestLazySnapshotIsTheWholeOne(t *testing.T) {
	t.Parallel()
	for seed := range uint64(16) {
		events := history(t, seed, 300)
		cut := len(events) / 2
		b, err := fold(events[:cut]).MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		whole := jobs.Spec.New().(*jobs.Projection)
		if err := whole.UnmarshalState(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
		lazy := func() *jobs.Projection {
			p := jobs.Spec.New().(*jobs.Projection)
			if err := p.UnmarshalChecked(bytes.Clone(b)); err != nil {
				t.Fatal(err)
			}
			return p
		}
		l := lazy()
		for id, want := range whole.State().Jobs {
			got, err := l.Job(id)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: Job(%s) = %+v, %v; want %+v", seed, id, got, err, want)
			}
		}
		for _, id := range []string{"job-none", "", "job-zzzzzzzz", "a"} {
			if _, err := l.Job(id); !errors.Is(err, fault.ErrNotFound) {
				t.Fatalf("seed %d: Job(%q): %v", seed, id, err)
			}
		}
		if !reflect.DeepEqual(l.State(), whole.State()) {
			t.Fatalf("seed %d: the state read lazily differs", seed)
		}
		// Folding on: straight after the load, and after a lone Job.
		all := fold(events)
		want, _ := all.MarshalState()
		l1, l2 := lazy(), lazy()
		var kept *jobs.Job
		for id := range whole.State().Jobs {
			kept, _ = l2.Job(id)
			break
		}
		keptWas := fmt.Sprintf("%+v", kept)
		for _, p := range []*jobs.Projection{l1, l2} {
			for _, e := range events[cut:] {
				p.Apply(e)
			}
			if got, _ := p.MarshalState(); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: events folded after a lazy load give another state", seed)
			}
		}
		if fmt.Sprintf("%+v", kept) != keptWas {
			t.Fatalf("seed %d: a job read alone changed with later events", seed)
		}
		// Events folded into a lazy load decode their jobs alone: every job
		// read then is the whole fold's, and keeps what it was.
		l3 := lazy()
		for _, e := range events[cut:] {
			l3.Apply(e)
		}
		for i, id := range append(slices.Collect(maps.Keys(all.State().Jobs)), "job-none") {
			got, err := l3.Job(id)
			want := all.State().Jobs[id]
			if want == nil {
				if !errors.Is(err, fault.ErrNotFound) {
					t.Fatalf("seed %d: Job(%s): %v", seed, id, err)
				}
				continue
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if err != nil || !bytes.Equal(g, w) {
				t.Fatalf("seed %d: after the events, Job(%s) = %s, %v; want %s", seed, id, g, err, w)
			}
			if i%2 == 0 { // a job handed out is the reader's: more events leave it
				l3.Apply(&eventlog.Event{ID: "ev-x", Type: jobs.TypeHeartbeat, Subject: id, At: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
					Data: []byte(`{"lease_until":"2027-01-01T00:10:00Z"}`)})
				if g2, _ := json.Marshal(got); !bytes.Equal(g2, g) {
					t.Fatalf("seed %d: a job handed out changed with an event", seed)
				}
			}
		}
	}
}

// Bytes that are not a snapshot are refused lazily too, without a panic.
func TestLazySnapshotRefusesDamage(t *testing.T) {
	t.Parallel()
	b, _ := built(t, 1, 120).MarshalState()
	for _, bad := range [][]byte{nil, b[:len(b)/2], b[:20], append([]byte("spool-jobs-4\n"), b[13:]...)} {
		if jobs.Spec.New().(*jobs.Projection).UnmarshalChecked(bytes.Clone(bad)) == nil {
			t.Fatalf("%d bytes read", len(bad))
		}
	}
}

// SubmitJob decides on a lazily read state (Projection.Lazy) what it
// decides on the whole one, before and after events folded in lazily; the
// count and the ids it reads are the whole state's.
func TestSubmitOnALazyState(t *testing.T) {
	t.Parallel()
	c := newClone("w").(*clone)
	p := c.policy()
	p.UrgentLimit = 3
	now := time.Date(2026, 3, 9, 9, 0, 0, 0, time.UTC)
	subs := []jobs.Submit{
		{Name: "a", Argv: []string{"run"}},
		{Name: "b", Project: "render", Tier: jobs.Urgent, Slots: 2, Segments: 3, Argv: []string{"run"}},
		{Name: "c", Argv: []string{"run"}, StartAfter: now.Add(time.Hour), OffPeak: true},
		{Name: "d", Argv: []string{"run"}, Every: "daily"},
		{Argv: []string{""}},
	}
	for seed := range uint64(10) {
		events := history(t, seed, 300)
		cut := len(events) / 2
		b, _ := fold(events[:cut]).MarshalState()
		for _, upto := range []int{cut, len(events)} {
			whole := fold(events[:upto])
			l := lazyAfter(t, b, events[cut:upto])
			ws := whole.State()
			if got := jobs.JobCount(l.Lazy()); got != len(ws.Jobs) {
				t.Fatalf("seed %d: %d jobs counted lazily, %d", seed, got, len(ws.Jobs))
			}
			for id := range ws.Jobs {
				if !jobs.Exists(l.Lazy(), id) || jobs.Exists(l.Lazy(), id+"x") {
					t.Fatalf("seed %d: exists(%s) wrong", seed, id)
				}
			}
			for _, actor := range []string{"root", "ada", "bob"} {
				for _, n := range subs {
					d1, s1, err1 := jobs.SubmitJob(l.Lazy(), p, n, actor, "w1", now)
					d2, s2, err2 := jobs.SubmitJob(ws, p, n, actor, "w1", now)
					if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(s1, s2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
						t.Fatalf("seed %d, %s, %+v: lazily %+v %+v %v; whole %+v %+v %v", seed, actor, n, d1, s1, err1, d2, s2, err2)
					}
				}
			}
			if !bytes.Equal(must(l.MarshalState()), must(whole.MarshalState())) {
				t.Fatalf("seed %d: the lazy state differs after the submits' reads", seed)
			}
		}
	}
}

// lazyAfter is snapshot b read lazily, then events folded into it.
func lazyAfter(t *testing.T, b []byte, events []*eventlog.Event) *jobs.Projection {
	t.Helper()
	l := jobs.Spec.New().(*jobs.Projection)
	if err := l.UnmarshalChecked(bytes.Clone(b)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		l.Apply(e)
	}
	return l
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A claim decides on a claimable state (idle jobs left in the snapshot,
// read through its queue section) what it decides on the whole one:
// straight after the load and after events folded in lazily, under fair
// share and fifo, with quotas on users and a project, for workers of 1 to
// 3 slots, through the lease's end and the off-peak window, with a dead
// holder; the claim's events then fold to the whole state's.
func TestClaimOnAClaimableState(t *testing.T) {
	t.Parallel()
	c := newClone("w").(*clone)
	fair := c.policy()
	fifo := fair
	fifo.Fair = false
	left := 0
	for seed := range uint64(12) {
		events := history(t, seed, 300)
		cut := len(events) / 2
		b, _ := fold(events[:cut]).MarshalState()
		last := events[len(events)-1].At
		for _, upto := range []int{cut, len(events)} {
			for pi, p := range []jobs.Policy{fair, fifo} {
				for _, quota := range []bool{false, true} {
					whole := fold(events[:upto])
					l := lazyAfter(t, b, events[cut:upto])
					if quota { // the project over its quota, or not
						d, err := jobs.SetQuota(whole.State(), p, jobs.Quota{Scope: "project", Name: "render", Daily: time.Duration(1+seed%3) * 20 * time.Minute}, "root")
						if err != nil {
							t.Fatal(err)
						}
						e, _ := d.Event("root", last)
						whole.Apply(e)
						l.Apply(e)
					}
					at := []time.Duration{0, 5 * time.Minute, 11 * time.Minute, 13 * time.Hour}[seed%4]
					now := last.Add(at)
					worker := workers[int(seed)%len(workers)]
					holder := &jobs.ProcRecord{PID: 101, PGID: 1, Start: 7, Boot: "b", NS: "pid:[9]"}
					gone := jobs.Gone{{PID: 100 + int(seed%3), PGID: 1, Start: 7, Boot: "b", NS: "pid:[9]"}: true}
					slots := 1 + int(seed+uint64(pi))%3
					cs := l.Claimable()
					left += jobs.Encoded(cs)
					d1, c1, err1 := jobs.ClaimJobHeld(cs, p, worker, holder, gone, slots, now)
					d2, c2, err2 := jobs.ClaimJobHeld(whole.State(), p, worker, holder, gone, slots, now)
					if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(c1, c2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
						t.Fatalf("seed %d, upto %d, policy %d, quota %v: claimable %+v %+v %v; whole %+v %+v %v", seed, upto, pi, quota, d1, c1, err1, d2, c2, err2)
					}
					// The claim's events fold into the state still claimable
					// (MarshalState decodes it whole: only after them).
					for _, d := range d1 {
						e, err := d.Event(worker, now)
						if err != nil {
							t.Fatal(err)
						}
						whole.Apply(e)
						l.Apply(e)
					}
					if c2 != nil {
						if got, err := l.Job(c2.Job.ID); err != nil || !reflect.DeepEqual(got, whole.State().Jobs[c2.Job.ID]) {
							t.Fatalf("seed %d: the claimed job after its events: %+v, %v", seed, got, err)
						}
					}
					if !bytes.Equal(must(l.MarshalState()), must(whole.MarshalState())) {
						t.Fatalf("seed %d: the claim's events fold otherwise on the claimable state", seed)
					}
				}
			}
		}
	}
	if left == 0 {
		t.Fatal("no claim left a job encoded: the test reads no queue section")
	}
}

// Two cases the random histories seldom reach, on a claimable state and
// on the whole one: jobs of one lane queued at one instant (their order
// ties: the least id is first), and an urgent job that needs more slots
// than the worker has, which keeps an off-peak job waiting in its window.
func TestClaimOnAClaimableStateAtTheEdges(t *testing.T) {
	t.Parallel()
	fair := newClone("w").(*clone).policy()
	fifo := fair
	fifo.Fair = false
	night := time.Date(2026, 3, 2, 23, 0, 0, 0, time.UTC)
	least := func(s *jobs.State) string { return slices.Min(slices.Collect(maps.Keys(s.Jobs))) }
	for _, tc := range []struct {
		name   string
		p      jobs.Policy
		owners []string // by turns
		subs   []jobs.Submit
		want   func(s *jobs.State) string // the job claimed, or ""
	}{
		{"ties", fair, []string{"root", "ada"}, slices.Repeat([]jobs.Submit{{Argv: []string{"run"}}}, 6), least},
		{"ties, two owners in one lane", fifo, []string{"root", "ada"}, slices.Repeat([]jobs.Submit{{Argv: []string{"run"}}}, 6), least},
		{"urgent", fair, []string{"root"}, []jobs.Submit{{Tier: jobs.Urgent, Slots: 2, Argv: []string{"run"}}, {OffPeak: true, Argv: []string{"run"}}}, func(*jobs.State) string {
			return ""
		}},
		{"after a claim", fifo, []string{"root"}, slices.Repeat([]jobs.Submit{{Argv: []string{"run"}}}, 3), func(s *jobs.State) string {
			q := s.Queue() // the first was claimed after the snapshot: the next one
			return q[0].ID
		}},
	} {
		p := tc.p
		whole := jobs.Spec.New().(*jobs.Projection)
		for i, n := range tc.subs {
			actor := tc.owners[i%len(tc.owners)]
			d, _, err := jobs.SubmitJob(whole.State(), p, n, actor, "w1", night)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range d {
				e, _ := x.Event(actor, night)
				whole.Apply(e)
			}
		}
		l := jobs.Spec.New().(*jobs.Projection)
		if err := l.UnmarshalChecked(must(whole.MarshalState())); err != nil {
			t.Fatal(err)
		}
		if tc.name == "after a claim" { // taken out of the snapshot by its events
			d, _, _ := jobs.ClaimJobHeld(whole.State(), p, "w2", nil, nil, 1, night)
			for _, x := range d {
				e, _ := x.Event("w2", night)
				whole.Apply(e)
				l.Apply(e)
			}
		}
		want := tc.want(whole.State())
		for _, s := range []*jobs.State{l.Claimable(), whole.State()} {
			_, c, err := jobs.ClaimJobHeld(s, p, "w1", nil, nil, 1, night)
			got := ""
			if c != nil {
				got = c.Job.ID
			}
			if err != nil || got != want {
				t.Fatalf("%s: claimed %q, %v; want %q", tc.name, got, err, want)
			}
		}
	}
}

// A snapshot read from a mapping of its file (UnmarshalMapped) hands out
// nothing that points into the mapping: once every job is decoded the
// mapping is released, and the jobs read before and after (alone, by a
// claim, whole) are still the whole fold's. A string left in the mapping
// would fault once it is unmapped.
func TestMappedSnapshotOutlivesItsMapping(t *testing.T) {
	t.Parallel()
	c := newClone("w").(*clone)
	for seed := range uint64(4) {
		events := history(t, seed, 300)
		whole := fold(events)
		path := filepath.Join(t.TempDir(), "jobs.snap")
		if err := os.WriteFile(path, must(whole.MarshalState()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		b, unmap := table.MapFile(f, 0, st.Size())
		f.Close()
		if b == nil {
			t.Skip("no mmap here")
		}
		var released atomic.Bool
		l := jobs.Spec.New().(*jobs.Projection)
		if err := l.UnmarshalMapped(b, func() { unmap(); released.Store(true) }); err != nil {
			t.Fatal(err)
		}
		var one *jobs.Job
		for id := range whole.State().Jobs {
			if one, err = l.Job(id); err != nil {
				t.Fatal(err)
			}
			break
		}
		last := events[len(events)-1].At
		_, claim, _ := jobs.ClaimJobHeld(l.Claimable(), c.policy(), "w1", nil, nil, 2, last)
		all := l.State() // decodes the rest: the mapping is unreachable after
		for i := 0; !released.Load(); i++ {
			if i == 100 {
				t.Fatalf("seed %d: the mapping was not released", seed)
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		_, want, _ := jobs.ClaimJobHeld(whole.State(), c.policy(), "w1", nil, nil, 2, last)
		if !reflect.DeepEqual(claim, want) || !reflect.DeepEqual(all, whole.State()) || !reflect.DeepEqual(one, whole.State().Jobs[one.ID]) {
			t.Fatalf("seed %d: what was read from the mapping changed after it was released", seed)
		}
	}
}

// A worker's steps (heartbeat, segment done, finish, stopped for a
// cancel), and cancel, pause and resume, read their job alone: on a lazily
// read state they decide what they decide on the whole one, for every job
// and worker or actor, held or not.
func TestWorkerStepsOnALazyState(t *testing.T) {
	t.Parallel()
	p := newClone("w").(*clone).policy()
	held := 0
	for seed := range uint64(8) {
		events := history(t, seed, 300)
		cut := len(events) / 2
		b, _ := fold(events[:cut]).MarshalState()
		now := events[len(events)-1].At
		whole := fold(events)
		ws := whole.State()
		l := lazyAfter(t, b, events[cut:])
		for k, j := range ws.Sorted() {
			if k%2 == 1 { // left encoded
				continue
			}
			id := j.ID
			for _, w := range append(slices.Clone(workers), "") {
				if w == "" {
					w = j.Worker
				}
				var steps []func(s *jobs.State) (any, error)
				for _, actor := range []string{"root", j.Owner, "bob"} { // spool job cancel, pause, resume
					steps = append(steps,
						func(s *jobs.State) (any, error) { return jobs.CancelJob(s, p, id, actor, now) },
						func(s *jobs.State) (any, error) { return jobs.PauseJob(s, p, id, actor) },
						func(s *jobs.State) (any, error) { return jobs.ResumeJob(s, p, id, actor) })
				}
				steps = append(steps,
					func(s *jobs.State) (any, error) {
						d, u, err := jobs.Heartbeat(s, p, id, w, now)
						return []any{d, u}, err
					},
					func(s *jobs.State) (any, error) {
						d, n, err := jobs.SegmentDone(s, id, w, jobs.SegmentEnd{Segment: j.NextSegment(), ExitCode: int(seed % 2)})
						return []any{d, n}, err
					},
					func(s *jobs.State) (any, error) { return jobs.Finish(s, id, w, jobs.Complete, "") },
					func(s *jobs.State) (any, error) { return jobs.StoppedForCancel(s, id, w) })
				for i, step := range steps {
					got, err1 := step(l.Lazy())
					want, err2 := step(ws)
					if !reflect.DeepEqual(got, want) || fmt.Sprint(err1) != fmt.Sprint(err2) {
						t.Fatalf("seed %d, %s, %s, step %d: lazily %+v %v; whole %+v %v", seed, id, w, i, got, err1, want, err2)
					}
					if err1 == nil {
						held++
					}
				}
			}
		}
		if jobs.Encoded(l.Lazy()) == 0 {
			t.Fatalf("seed %d: the steps decoded the jobs they did not read", seed)
		}
		if !bytes.Equal(must(l.MarshalState()), must(whole.MarshalState())) {
			t.Fatalf("seed %d: the lazy state differs after the steps' reads", seed)
		}
	}
	if held == 0 {
		t.Fatal("no step found its job held")
	}
}
