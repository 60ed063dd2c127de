package jobs

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// Anyone who can push writes events: the fold takes a job only with an id
// spool makes (it names the job's output directory, which the worker
// empties) and within the limits the CLI applies, and allocates nothing
// from a count an event names.
func TestFoldRefusesWhatNoCommandMakes(t *testing.T) {
	w := newWorld(t)
	job := SubmittedData{Name: "x", Tier: Normal, Slots: 1, Segments: 1, Argv: []string{"true"}, Status: Queued}
	with := func(change func(*SubmittedData)) SubmittedData { d := job; change(&d); return d }
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w.apply("mallory", []eventlog.Draft{
		{Type: TypeSubmitted, Subject: "job-x/../../victim", Data: job},
		{Type: TypeSubmitted, Subject: "job-x/../..", Data: job},
		{Type: TypeSubmitted, Subject: "../victim", Data: job},
		{Type: TypeSubmitted, Subject: "job-" + strings.Repeat("a", 33), Data: job},
		{Type: TypeSubmitted, Subject: "job-big", Data: with(func(d *SubmittedData) { d.Segments = 1_000_000_000 })},
		{Type: TypeSubmitted, Subject: "job-over", Data: with(func(d *SubmittedData) { d.Segments = SegmentLimit + 1 })},
		{Type: TypeSubmitted, Subject: "job-wide", Data: with(func(d *SubmittedData) { d.Slots = SlotLimit + 1 })},
		{Type: TypeSubmitted, Subject: "job-noargv", Data: with(func(d *SubmittedData) { d.Argv = []string{""} })},
		{Type: TypeScheduleCreated, Subject: "sched-x/../../victim", Data: ScheduleData{Every: "daily", Job: job}},
		{Type: TypeScheduleCreated, Subject: "sched-big", Data: ScheduleData{Every: "daily", Job: with(func(d *SubmittedData) { d.Segments = 1 << 40 })}},
		{Type: TypeWorkerSeen, Subject: "worker/w", Data: WorkerData{Slots: 1 << 40}},
	}, nil)
	runtime.ReadMemStats(&after)
	if len(w.s.Jobs) != 0 || len(w.s.Schedules) != 0 || len(w.s.Workers) != 0 {
		t.Fatalf("folded %d jobs, %d schedules, %d workers", len(w.s.Jobs), len(w.s.Schedules), len(w.s.Workers))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("folding a dozen refused events allocated %d bytes", grew)
	}

	// The largest job a command makes folds, its segments held only as
	// they run: a start names the next segment, never one further on.
	w.apply("ada", []eventlog.Draft{{Type: TypeSubmitted, Subject: "job-most", Data: with(func(d *SubmittedData) { d.Segments = SegmentLimit })}}, nil)
	j := w.s.Jobs["job-most"]
	if j == nil || j.Segments != SegmentLimit || len(j.Segs) != 0 || len(j.SegmentRuns()) != SegmentLimit {
		t.Fatalf("job-most: %+v", j)
	}
	w.apply("ada", []eventlog.Draft{
		{Type: TypeDispatched, Subject: "job-most", Data: DispatchedData{Worker: "w", LeaseUntil: w.now.Add(w.p.Lease), Attempt: 1}},
		{Type: TypeSegmentStarted, Subject: "job-most", Data: SegmentData{Segment: SegmentLimit - 1, Worker: "w"}},
		{Type: TypeSegmentStarted, Subject: "job-most", Data: SegmentData{Segment: SegmentLimit, Worker: "w"}},
		{Type: TypeSegmentStarted, Subject: "job-most", Data: SegmentData{Segment: -1, Worker: "w"}},
	}, nil)
	if len(j.Segs) != 0 || j.Status != Dispatched {
		t.Fatalf("a start of a later segment was folded: %d segments held, %s", len(j.Segs), j.Status)
	}
	wide := SlotLimit + 1
	w.apply("ada", []eventlog.Draft{
		{Type: TypeSegmentStarted, Subject: "job-most", Data: SegmentData{Segment: 0, Worker: "w"}},
		{Type: TypeEdited, Subject: "job-most", Data: EditedData{Slots: &wide}},
	}, nil)
	if len(j.Segs) != 1 || j.Status != Running || j.Slots != 1 {
		t.Fatalf("after the first start: %d segments held, %s, %d slots", len(j.Segs), j.Status, j.Slots)
	}
	b, err := json.Marshal(j)
	if err != nil || strings.Count(string(b), `"done":`) != SegmentLimit {
		t.Fatalf("segment_runs is not one per segment (%v)", err)
	}
	// What the fuzzer found: a lease renewal without a lease, and a
	// finish at the zero time (which means "not ended"), broke invariants.
	w.apply("mallory", []eventlog.Draft{{Type: TypeHeartbeat, Subject: "job-most", Data: struct{}{}}}, nil)
	at := w.now
	w.now = time.Time{}
	w.apply("mallory", []eventlog.Draft{{Type: TypeFinished, Subject: "job-most", Data: FinishedData{Status: Complete}}}, nil)
	w.now = at
	if j.LeaseUntil.IsZero() || j.Status != Running {
		t.Fatalf("lease %v, %s", j.LeaseUntil, j.Status)
	}
	w.apply("mallory", []eventlog.Draft{{Type: TypeSubmitted, Subject: "job-nowork", Data: job},
		{Type: TypeDispatched, Subject: "job-nowork", Data: DispatchedData{LeaseUntil: w.now.Add(time.Hour)}},
		{Type: TypeDispatched, Subject: "job-nowork", Data: DispatchedData{Worker: "w"}}}, nil)
	if st := w.s.Jobs["job-nowork"].Status; st != Queued {
		t.Fatalf("a claim without a worker or a lease was folded: %s", st)
	}
	if bad := (&Projection{s: w.s}).Invariants(); len(bad) != 0 {
		t.Fatalf("invariants: %q", bad)
	}
}

// Every id spool makes is one the fold takes.
func TestValidJobIDTakesWhatSpoolMakes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i := 0; i < 50; i++ {
		if id := w.submit("ada", Submit{Name: "n"}); !ValidJobID(id) {
			t.Fatalf("submit made %q", id)
		}
	}
	_, out, err := SubmitJob(w.s, w.p, Submit{Argv: []string{"x"}, Every: "@every 30s"}, "ada", "w1", w.now)
	if err != nil || !validScheduleID(out.ID) {
		t.Fatalf("schedule %q: %v", out.ID, err)
	}
	sc := &Schedule{ID: out.ID, Every: "@every 30s", Created: w.now.Add(-time.Hour)}
	w.s.Schedules[sc.ID] = sc
	for _, d := range Tick(w.s, w.p, w.now, nil) {
		if d.Type == TypeSubmitted && !ValidJobID(d.Subject) {
			t.Fatalf("an occurrence is %q", d.Subject)
		}
	}
	for _, id := range []string{"job-", "job-A1", "job-a.b", "job-a-2026", "job-a-20260101t12", "job-a-20260101t1200-x", " job-a", "job-a\n"} {
		if ValidJobID(id) {
			t.Errorf("%q taken", id)
		}
	}
}
