package prdqueue_test

import (
	"testing"

	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// FuzzFold folds hostile events, interleaved with the commands' own, into
// the PRD queue: no panic, no allocation beyond a bound per event, a
// snapshot that round-trips, invariants that hold (projectiontest.Hostile);
// the invariants include that every path and slug is one the commands take.
func FuzzFold(f *testing.F) {
	h := projectiontest.Hostile{
		Specs:    []projections.Spec{prdqueue.Spec},
		NewClone: newClone,
		Types: []string{prdqueue.TypeFeatureStarted, prdqueue.TypeAdded, prdqueue.TypeRemoved, prdqueue.TypeTransitioned,
			prdqueue.TypeRead, prdqueue.TypeUnreadable, prdqueue.TypeApproved, prdqueue.TypeApprovalInvalidated, prdqueue.TypeEnqueueStarted,
			prdqueue.TypeEnqueued, prdqueue.TypeEnqueueFailed, prdqueue.TypeChecked},
		Samples: map[string][]any{
			prdqueue.TypeFeatureStarted: {prdqueue.FeatureData{FeatureSlug: "f", Mode: prdqueue.ModeSequential, WorkerCap: 2}},
			prdqueue.TypeAdded:          {prdqueue.AddedData{FeatureSlug: "f", PRDPath: "docs/prd/p.md"}},
			prdqueue.TypeTransitioned:   {prdqueue.TransitionData{FeatureSlug: "f", From: prdqueue.Pending, To: prdqueue.InDiscovery}},
			prdqueue.TypeRead:           {prdqueue.ReadData{PRDGate: "approved", BeadsGate: "pending", OpenQuestions: []string{"why?"}, ContentHash: "abc"}},
			prdqueue.TypeUnreadable:     {prdqueue.UnreadableData{Reason: prdqueue.CodePRDFileMissing.Name, Error: "gone"}},
			prdqueue.TypeApproved:       {prdqueue.ApprovalData{ApprovalVersion: 1, ContentHash: "abc"}},
			prdqueue.TypeEnqueued:       {prdqueue.EnqueueData{FeatureSlug: "f", IdempotencyKey: "p:1", Attempt: 1, EpicID: "sp-1"}},
			prdqueue.TypeEnqueueFailed:  {prdqueue.EnqueueData{FeatureSlug: "f", IdempotencyKey: "p:1", Attempt: 2, Error: "no", Final: true}},
			prdqueue.TypeChecked:        {prdqueue.CheckData{FeatureSlug: "f", Selectable: true, DoctorPass: true}},
		},
		Subjects: []string{"feature/f", "prd/p"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
