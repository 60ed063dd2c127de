package orchestrator_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// clone drives the orchestrator as spool watch does: claims a task, and
// for the active one records what Monitor decides on what the run
// directory might say.
type clone struct{ s *orchestrator.State }

func newClone(string) projectiontest.Clone { return &clone{s: orchestrator.NewState()} }

func (c *clone) Apply(e *eventlog.Event) { c.s.Apply(e) }

func (c *clone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	p := orchestrator.Policy{Stall: 10 * time.Minute, Grace: time.Minute, OutputRecord: time.Minute, Watchdog: time.Hour}
	a := c.s.ActiveTask
	if a == nil {
		switch r.IntN(5) {
		case 0:
			return "spool", []eventlog.Draft{orchestrator.WatchdogRan()}, nil
		case 1:
			id := []string{"fb-1", "fb-2"}[r.IntN(2)]
			return "ada", []eventlog.Draft{{Type: plans.TypeFeedbackAdded, Subject: plans.FeedbackSubject(id), Data: plans.FeedbackData{ID: id, Text: "slow ✓"}}}, nil
		}
		id := []string{"sp-1", "bd-a1b2.1", "sp-4mx5"}[r.IntN(3)]
		return "spool", []eventlog.Draft{orchestrator.Claimed(id, orchestrator.ClaimedData{Attempt: 1 + r.IntN(3), Branch: orchestrator.Branch(id),
			Worktree: "/r/.git/spool/worktrees/task-" + id, RunDir: "/r/.git/spool/runs/task-" + id})}, nil
	}
	o := orchestrator.Observation{Alive: r.IntN(3) > 0, LastOutput: now.Add(-time.Duration(r.IntN(20)) * time.Minute), Tail: "last line"}
	if r.IntN(4) > 0 {
		o.Supervisor, o.Base = &orchestrator.Process{PID: 100 + r.IntN(5), PGID: 100, Start: 7, Boot: "b"}, strings.Repeat("ab", 20)
	}
	if r.IntN(3) == 0 {
		o.Exit = &orchestrator.ExitRecord{ExitCode: r.IntN(3) - 1, EndedAt: now}
	}
	step := orchestrator.Monitor(a, o, p, now)
	switch step.Kind {
	case orchestrator.StepRecord, orchestrator.StepStop:
		return "spool", []eventlog.Draft{step.Draft}, nil
	case orchestrator.StepSettle:
		return "spool", []eventlog.Draft{orchestrator.Finished(a, orchestrator.Outcome(*a.Exit, p), orchestrator.FinishedData{})}, nil
	}
	return "spool", []eventlog.Draft{orchestrator.Stop(a, orchestrator.ReasonStopped)}, nil
}

// FuzzFold folds hostile events, interleaved with what spool watch records,
// into the orchestrator's state: no panic, no allocation beyond a bound per
// event, a snapshot that round-trips, invariants that hold
// (projectiontest.Hostile).
func FuzzFold(f *testing.F) {
	h := projectiontest.Hostile{
		Specs:    []projections.Spec{orchestrator.Spec},
		NewClone: newClone,
		Types: []string{orchestrator.TypeClaimed, orchestrator.TypeAgentStarted, orchestrator.TypeAgentOutput, orchestrator.TypeStopping,
			orchestrator.TypeAgentExited, orchestrator.TypeFinished, orchestrator.TypeWatchdogRan, plans.TypeFeedbackAdded,
			plans.TypeFeedbackCategorized, orchestrator.TypeMergeRejected, mergequeue.EvTransitioned, mergequeue.EvCancelled},
		Samples: map[string][]any{
			orchestrator.TypeAgentStarted: {orchestrator.StartedData{Attempt: 1, Process: orchestrator.Process{PID: 100, PGID: 100, Start: 7, Boot: "b"},
				Log: "/r/.git/spool/runs/task-sp-1/attempt-1.log", Base: strings.Repeat("ab", 20)}},
			orchestrator.TypeAgentExited:   {orchestrator.ExitedData{Attempt: 1, ExitCode: 1, Tail: "boom"}},
			plans.TypeFeedbackCategorized:  {plans.CategorizedData{ID: "fb-1", Category: "bug", PlanID: "plan-1"}},
			orchestrator.TypeFinished:      {orchestrator.FinishedData{Attempt: 1, Outcome: orchestrator.OutcomeDone, MergeEntry: "e1"}},
			orchestrator.TypeMergeRejected: {orchestrator.MergeRejectedData{Attempt: 1, MergeEntry: "e1", Reason: "rebase conflict", Outcome: orchestrator.OutcomeFailed}},
			mergequeue.EvTransitioned:      {mergequeue.EntryData{EntryID: 1, EntryRef: "e1", From: mergequeue.Merging, To: mergequeue.Merged}},
		},
		Subjects: []string{"sp-1", "orchestrator", "feedback/fb-1"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
