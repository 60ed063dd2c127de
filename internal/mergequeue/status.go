// Package mergequeue is the merge queue's domain: entry states and the
// transition table, the events, pure decide functions and the projection
// written to merge-queue.json in the state directory. Git and the test command are
// driven by the service (internal/mergequeue/service) through the edges
// (internal/git, internal/proc); nothing here does I/O.
package mergequeue

// Status is where an entry is in its lifecycle: pending, then through the
// train (claimed, rebasing, testing, ready, merging) to merged, failed or
// cancelled; only the transitions in the table below are applied.
type Status string

const (
	Pending         Status = "pending"
	Claimed         Status = "claimed"
	Rebasing        Status = "rebasing"
	Testing         Status = "testing"
	ReadyToMerge    Status = "ready_to_merge"
	Merging         Status = "merging"
	Merged          Status = "merged"
	FailedRetryable Status = "failed_retryable"
	FailedTerminal  Status = "failed_terminal"
	Cancelled       Status = "cancelled"
)

// Statuses lists every valid status in lifecycle order.
var Statuses = []Status{Pending, Claimed, Rebasing, Testing, ReadyToMerge, Merging, Merged, FailedRetryable, FailedTerminal, Cancelled}

// transitions is the state machine. Every change of status, whoever makes
// it (a command, the train, recovery), is checked against this table.
// ready_to_merge → rebasing is the train going back when the target moved
// after the entry was tested. ready_to_merge → pending is the train leaving
// the target alone because the worktree that has it checked out has
// uncommitted changes to paths the merge changes (WaitCheckoutDirty);
// merging → pending the same, found only once the target had moved (it is
// put back first), or a lock file of git's in the way of moving or pushing
// it (WaitTargetLocked). merging → rebasing is the train going back when
// the remote refused the push because its target moved (the local target is
// put back first). Terminal states have no way out except
// resubmission, which is a separate, explicit reset (CanResubmit).
var transitions = map[Status][]Status{
	Pending:         {Claimed, Cancelled},
	Claimed:         {Pending, Rebasing, FailedRetryable, FailedTerminal, Cancelled},
	Rebasing:        {Testing, FailedRetryable, FailedTerminal, Cancelled},
	Testing:         {ReadyToMerge, FailedRetryable, FailedTerminal, Cancelled},
	ReadyToMerge:    {Merging, Rebasing, Pending, FailedRetryable, FailedTerminal, Cancelled},
	Merging:         {Merged, Rebasing, Pending, FailedRetryable, FailedTerminal},
	FailedRetryable: {Pending, Cancelled},
	Merged:          nil,
	FailedTerminal:  nil,
	Cancelled:       nil,
}

// CanTransition reports whether the table allows from → to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// CanResubmit reports whether a submission may reset an entry in s to pending.
func CanResubmit(s Status) bool { return s.Terminal() }

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	switch s { // the keys of transitions (TestStatusesMatchTable); a switch, as folds ask for every entry
	case Pending, Claimed, Rebasing, Testing, ReadyToMerge, Merging, Merged, FailedRetryable, FailedTerminal, Cancelled:
		return true
	}
	return false
}

// Terminal statuses end an entry's life (until it is resubmitted).
func (s Status) Terminal() bool { return s == Merged || s == FailedTerminal || s == Cancelled }

// Active is every status that is not terminal; an active entry holds its
// dedupe key and its workspace.
func (s Status) Active() bool { return s.Valid() && !s.Terminal() }

// Processing statuses are owned by a train runner holding a lease; when the
// lease expires the entry is recovered.
func (s Status) Processing() bool {
	switch s {
	case Claimed, Rebasing, Testing, ReadyToMerge, Merging:
		return true
	}
	return false
}

// WorkspaceState is what the queue says about an entry's workspace, one of
// the values below; it is derived from the status, so it cannot disagree.
type WorkspaceState string

const (
	WorkspaceCreated   WorkspaceState = "created"   // queued, waiting (pending, failed_retryable)
	WorkspaceWorking   WorkspaceState = "working"   // claimed, rebasing, testing
	WorkspaceReady     WorkspaceState = "ready"     // ready_to_merge, merging
	WorkspaceMerged    WorkspaceState = "merged"    // merged
	WorkspaceConflict  WorkspaceState = "conflict"  // failed_terminal
	WorkspaceAbandoned WorkspaceState = "abandoned" // cancelled
)

// WorkspaceStates lists the valid workspace states.
var WorkspaceStates = []WorkspaceState{WorkspaceCreated, WorkspaceWorking, WorkspaceReady, WorkspaceMerged, WorkspaceConflict, WorkspaceAbandoned}

// WorkspaceStateOf derives the workspace state from an entry's status.
func WorkspaceStateOf(s Status) WorkspaceState {
	switch s {
	case Claimed, Rebasing, Testing:
		return WorkspaceWorking
	case ReadyToMerge, Merging:
		return WorkspaceReady
	case Merged:
		return WorkspaceMerged
	case FailedTerminal:
		return WorkspaceConflict
	case Cancelled:
		return WorkspaceAbandoned
	}
	return WorkspaceCreated
}
