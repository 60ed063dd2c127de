package jobs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jobs"
)

// The list, explain and stats tests build their state the way the log
// does: events through State.Apply.

var noon = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func basePolicy() jobs.Policy {
	return jobs.Policy{Zone: time.UTC, HalfLife: 24 * time.Hour, DefaultSegment: 10 * time.Minute, Slots: 1,
		Lease: 5 * time.Minute, CancelGrace: time.Minute, Admins: []string{"root"}}
}

// ledger applies events to a state.
type ledger struct {
	tb testing.TB
	s  *jobs.State
}

func newLedger(tb testing.TB) *ledger { return &ledger{tb: tb, s: jobs.NewState()} }

func (l *ledger) apply(at time.Time, actor, typ, subject string, data any) {
	l.tb.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		l.tb.Fatal(err)
	}
	l.s.Apply(&eventlog.Event{At: at, Actor: actor, Type: typ, Subject: subject, Data: b})
}

// spec is a job to submit; zero fields take defaults.
type spec struct {
	id, name, owner, project string
	tier                     jobs.Tier
	slots, segments          int
	offPeak                  bool
	startAfter               time.Time
}

func (l *ledger) submit(at time.Time, j spec) string {
	l.tb.Helper()
	d := jobs.SubmittedData{Name: j.name, Project: j.project, Tier: j.tier, Slots: j.slots, Segments: j.segments,
		Argv: []string{"run"}, OffPeak: j.offPeak, StartAfter: j.startAfter, Status: jobs.Queued}
	if d.Name == "" {
		d.Name = "render"
	}
	if d.Tier == "" {
		d.Tier = jobs.Normal
	}
	if d.Slots == 0 {
		d.Slots = 1
	}
	if d.Segments == 0 {
		d.Segments = 1
	}
	if j.startAfter.After(at) {
		d.Status = jobs.Scheduled
	}
	owner := j.owner
	if owner == "" {
		owner = "ada"
	}
	l.apply(at, owner, jobs.TypeSubmitted, j.id, d)
	if l.s.Jobs[j.id] == nil {
		l.tb.Fatalf("submit %s was not applied", j.id)
	}
	return j.id
}

func (l *ledger) worker(at time.Time, name string, slots int) {
	l.apply(at, "", jobs.TypeWorkerSeen, "worker/"+name, jobs.WorkerData{Slots: slots})
}

// start dispatches a job to a worker and starts its next segment.
func (l *ledger) start(at time.Time, id, worker string) {
	l.tb.Helper()
	j := l.s.Jobs[id]
	l.apply(at, "", jobs.TypeDispatched, id, jobs.DispatchedData{Worker: worker, LeaseUntil: at.Add(time.Hour), Attempt: j.Attempts + 1})
	l.apply(at, "", jobs.TypeSegmentStarted, id, jobs.SegmentData{Segment: j.NextSegment(), Worker: worker})
	if j.Status != jobs.Running {
		l.tb.Fatalf("job %s is %s, not running", id, j.Status)
	}
}

// segment ends the running segment at at, with exit code 0, and starts the
// next one unless it was the last.
func (l *ledger) segment(at time.Time, id string) {
	l.tb.Helper()
	j := l.s.Jobs[id]
	seg := j.NextSegment()
	code := 0
	l.apply(at, "", jobs.TypeSegmentDone, id, jobs.SegmentData{Segment: seg, ExitCode: &code})
	if seg+1 >= j.Segments {
		l.apply(at, "", jobs.TypeFinished, id, jobs.FinishedData{Status: jobs.Complete})
		return
	}
	l.apply(at, "", jobs.TypeSegmentStarted, id, jobs.SegmentData{Segment: seg + 1, Worker: j.Worker})
}

// done runs a submitted job from at to the end, each segment taking the
// next of durs (the last repeated).
func (l *ledger) done(at time.Time, id, worker string, durs ...time.Duration) time.Time {
	l.tb.Helper()
	l.start(at, id, worker)
	for i := 0; l.s.Jobs[id].Status == jobs.Running; i++ {
		at = at.Add(durs[min(i, len(durs)-1)])
		l.segment(at, id)
	}
	return at
}
