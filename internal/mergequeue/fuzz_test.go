package mergequeue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// FuzzFold folds hostile events, interleaved with the queue's and the
// train's own, into the merge queue: no panic, no allocation beyond a bound
// per event, a snapshot that round-trips, invariants that hold
// (projectiontest.Hostile).
func FuzzFold(f *testing.F) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 20)
	prio, code := 2, 1
	entry := mergequeue.EntryData{EntryID: 1, Workspace: "feat", WorkspaceID: "w/feat", Worktree: "/r/feat", Branch: "feat",
		ChangeID: "C1", ChangeIDSource: mergequeue.SourceTrailer, DedupeKey: "w/feat:C1", HeadSHA: sha, Priority: &prio, To: mergequeue.Pending}
	step := mergequeue.EntryData{EntryID: 1, From: mergequeue.Claimed, To: mergequeue.Rebasing, Runner: "train@x", HeadSHA: sha,
		TestedSHA: sha, TestedAgainstSHA: sha, Reason: "onto main", Paths: []string{"a.go"}, ExitCode: &code,
		RunDir: ".git/spool/runs/1/attempt-1", ScratchDir: "/tmp/x", LeaseUntil: &t0,
		Proc: &mergequeue.ProcRecord{PID: 100, PGID: 100, Start: 7, Boot: "b"}}
	h := projectiontest.Hostile{
		Specs:    []projections.Spec{mergequeue.Spec},
		NewClone: newMergeClone,
		Types: []string{mergequeue.EvSubmitted, mergequeue.EvResubmitted, mergequeue.EvUpdated, mergequeue.EvClaimed,
			mergequeue.EvTransitioned, mergequeue.EvLeaseRenewed, mergequeue.EvRecovered, mergequeue.EvRetried,
			mergequeue.EvCancelled, mergequeue.EvFrozen, mergequeue.EvUnfrozen},
		Samples: map[string][]any{
			mergequeue.EvSubmitted:    {entry},
			mergequeue.EvTransitioned: {step},
			mergequeue.EvRecovered:    {step},
			mergequeue.EvLeaseRenewed: {step},
			mergequeue.EvClaimed:      {mergequeue.EntryData{EntryID: 1, From: mergequeue.Pending, To: mergequeue.Claimed, Runner: "train@x", HeadSHA: sha, Target: "main", LeaseUntil: &t0}},
			mergequeue.EvFrozen:       {mergequeue.FreezeData{Reason: "release"}},
		},
		Subjects: []string{"merge/1", "merge/2", "merge"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
