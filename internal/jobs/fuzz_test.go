package jobs_test

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// FuzzFold folds hostile events, interleaved with the commands' own, into
// the scheduler: no panic, no allocation beyond a bound per event, a
// snapshot that round-trips, invariants that hold (projectiontest.Hostile).
func FuzzFold(f *testing.F) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	code := 0
	job := jobs.SubmittedData{Name: "train", Tier: jobs.Normal, Slots: 1, Segments: 3, Argv: []string{"run"}, Status: jobs.Queued}
	h := projectiontest.Hostile{
		Specs:    []projections.Spec{jobs.Spec},
		NewClone: newClone,
		Types: []string{jobs.TypeSubmitted, jobs.TypeReleased, jobs.TypeEdited, jobs.TypeMoved, jobs.TypeDispatched,
			jobs.TypeSegmentStarted, jobs.TypeSegmentDone, jobs.TypeHeartbeat, jobs.TypeFinished, jobs.TypePauseRequested,
			jobs.TypePaused, jobs.TypeResumed, jobs.TypeCancelRequested, jobs.TypeCancelled, jobs.TypeYieldRequested,
			jobs.TypeRequeued, jobs.TypeQuotaSet, jobs.TypeQuotaRemoved, jobs.TypeScheduleCreated, jobs.TypeScheduleRemoved,
			jobs.TypeWorkerSeen, jobs.TypeRetried},
		Samples: map[string][]any{
			jobs.TypeSubmitted:       {job},
			jobs.TypeDispatched:      {jobs.DispatchedData{Worker: "w1", LeaseUntil: t0.Add(time.Hour), Attempt: 1, Holder: &jobs.ProcRecord{PID: 100, PGID: 100, Start: 7, Boot: "b"}}},
			jobs.TypeSegmentStarted:  {jobs.SegmentData{Segment: 0, Worker: "w1"}},
			jobs.TypeSegmentDone:     {jobs.SegmentData{Segment: 0, Worker: "w1", ExitCode: &code, OutputDir: ".git/spool/jobs/job-4mx5/segment-0"}},
			jobs.TypeEdited:          {jobs.EditedData{Slots: &job.Slots}},
			jobs.TypeMoved:           {jobs.MovedData{Order: 5, Tier: jobs.Urgent}},
			jobs.TypeQuotaSet:        {jobs.QuotaData{Scope: "user", Name: "ada", Daily: time.Hour}},
			jobs.TypeScheduleCreated: {jobs.ScheduleData{Every: "daily", Job: job}},
			jobs.TypeWorkerSeen:      {jobs.WorkerData{Slots: 2}},
			jobs.TypeFinished:        {jobs.FinishedData{Status: jobs.Complete}},
			jobs.TypeCancelRequested: {jobs.CancelData{GraceUntil: t0}},
			jobs.TypeRequeued:        {jobs.RequeuedData{Reason: jobs.ReasonYield}},
			jobs.TypeRetried:         {jobs.RetriedData{Segment: 1, Done: 1}},
		},
		Subjects: []string{"job-4mx5", "sched-4mx5", "worker/w1", "quota/user/ada"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
