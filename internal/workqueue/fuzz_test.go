package workqueue_test

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// FuzzFold folds hostile events, interleaved with the commands' own, into
// the tasks, their queue history and the task ids: no panic, no allocation
// beyond a bound per event, snapshots that round-trip
// (projectiontest.Hostile).
func FuzzFold(f *testing.F) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	owner, prio, title := "ada", 1, "renamed"
	h := projectiontest.Hostile{
		Specs:    []projections.Spec{workqueue.Spec, workqueue.QueueSpec, workqueue.IDsSpec},
		NewClone: newTaskClone,
		Types: []string{workqueue.TypeCreated, workqueue.TypeUpdated, workqueue.TypeClosed, workqueue.TypeReopened,
			workqueue.TypeDepAdded, workqueue.TypeDepRemoved, workqueue.TypeCommented, workqueue.TypeImported,
			workqueue.TypeClaimed, workqueue.TypeHeartbeat, workqueue.TypeSucceeded, workqueue.TypeFailed,
			workqueue.TypeLeaseExpired, workqueue.TypeDemoted, workqueue.TypeAbandoned, workqueue.TypeBlocked,
			workqueue.TypeUnblocked, workqueue.TypeRetried, workqueue.TypeReleased, workqueue.TypeSyncRequested,
			workqueue.TypeSynced, workqueue.TypeSyncFailed},
		Samples: map[string][]any{
			workqueue.TypeCreated: {workqueue.CreatedData{Title: "t", Priority: 2, IssueType: "task", Labels: []string{"a"}, Deps: []string{"sp-1"}}},
			workqueue.TypeUpdated: {workqueue.UpdatedData{Title: &title, Priority: &prio, AddLabels: []string{"x"}, RemoveLabels: []string{"a"}}},
			workqueue.TypeImported: {workqueue.ImportedData{Title: "imported", Status: workqueue.StatusOpen, Priority: 1, IssueType: "bug",
				Owner: &owner, CreatedAt: t0, UpdatedAt: t0, ClosedAt: &t0, Labels: []string{"l"},
				Parent: &workqueue.ImportedDep{ID: "bd-1", At: t0}, Blockers: []workqueue.ImportedDep{{ID: "bd-2", At: t0}},
				Links:    []workqueue.Link{{ID: "bd-3", Type: "related", At: t0}},
				Comments: []workqueue.ImportedNote{{ID: 7, Author: "ada", Text: "hi", At: t0}}}},
			workqueue.TypeClaimed:       {workqueue.ClaimedData{Worker: "w", Attempt: 1, LeaseUntil: t0.Add(time.Hour), Priority: 2}},
			workqueue.TypeHeartbeat:     {workqueue.HeartbeatData{LeaseUntil: t0.Add(time.Hour)}},
			workqueue.TypeFailed:        {workqueue.FailedData{Error: "boom"}},
			workqueue.TypeLeaseExpired:  {workqueue.LeaseExpiredData{LeaseUntil: t0}},
			workqueue.TypeDemoted:       {workqueue.DemotedData{To: 3}},
			workqueue.TypeBlocked:       {workqueue.BlockedData{Reason: "stuck"}},
			workqueue.TypeUnblocked:     {workqueue.UnblockedData{ResetAttempts: true}},
			workqueue.TypeCommented:     {workqueue.CommentData{Text: "a comment"}},
			workqueue.TypeDepAdded:      {workqueue.DepData{Blocker: "sp-1"}},
			workqueue.TypeClosed:        {workqueue.ClosedData{Reason: "done"}},
			workqueue.TypeSyncRequested: {workqueue.SyncData{Op: workqueue.SyncLabelAdd, Label: "x"}},
			workqueue.TypeSynced:        {workqueue.SyncedData{Request: "000000000000000000000001"}},
			workqueue.TypeSyncFailed:    {workqueue.SyncFailedData{Request: "000000000000000000000001", Error: "no", GaveUp: true}},
		},
		Subjects: []string{"sp-1", "bd-a1b2.1"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
