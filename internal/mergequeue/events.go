package mergequeue

import (
	"fmt"
	"time"
)

// Event types. Every change of an entry's status is its own event carrying
// from, to, head_sha and (once known) tested_sha and tested_against_sha, so
// the log is the audit trail. A status-changing event whose from is not the
// entry's current status, whose from → to the table forbids, or whose head
// or runner is not the entry's (State.refusal) is skipped by the fold, and a
// submission of a key or workspace that has an active entry is cancelled
// (State.rival): both can only come from clones that acted concurrently,
// whose logs git merged. Decide functions never produce one against their
// own log, because they run under the log's lock against the caught-up
// projection, which makes every transition a compare-and-set.
const (
	EvSubmitted    = "merge.submitted"     // EntryData: a new entry, pending (the dedupe key is new, or its entry ended and another worktree submits it)
	EvResubmitted  = "merge.resubmitted"   // EntryData: an ended entry (merged, failed_terminal, cancelled) back to pending
	EvUpdated      = "merge.updated"       // EntryData: an active entry's head or priority updated; failed_retryable → pending
	EvClaimed      = "merge.claimed"       // EntryData: pending → claimed by a train runner, with a lease; counts an attempt
	EvTransitioned = "merge.transitioned"  // EntryData: one step of the train: rebasing, testing, ready_to_merge, merging, merged, failed_*
	EvLeaseRenewed = "merge.lease_renewed" // EntryData: the runner is still working on the entry (and started proc, when given)
	EvRecovered    = "merge.recovered"     // EntryData: a lease expired or the runner died: processing → failed_* (or merging → merged when the target has the tested commit)
	EvRetried      = "merge.retried"       // EntryData: failed_retryable → pending (spool merge retry, or after recovery)
	EvCancelled    = "merge.cancelled"     // EntryData: → cancelled
	EvFrozen       = "merge.frozen"        // FreezeData: the train stops claiming; submissions continue
	EvUnfrozen     = "merge.unfrozen"      // {}: the train claims again
	EvRefused      = "merge.refused"       // RefusedData: a submission refused, recorded for the audit; no entry, the fold skips it
	EvPushed       = "merge.pushed"        // EntryData: a pending_push entry's branch reached the remote: pending, no longer waiting
)

// SubjectRefused is the subject of merge.refused events.
const SubjectRefused = "merge/refused"

// WaitCheckoutDirty starts the reason of a train step back to pending that
// left the target alone: the worktree with the target checked out has
// uncommitted changes to paths the merge changes (the step's paths).
// Moving the target would leave that checkout with the merge staged in
// reverse; the train tries again once those paths are clean.
const WaitCheckoutDirty = "target_checkout_dirty"

// WaitTargetDiverged starts the reason of a train step back to pending
// because the local target and the remote's have diverged (each has commits
// the other lacks): the train would have to choose one and drop the other's.
// It waits until the local target contains the remote tip it saw (the user
// pulled: Target.Diverged).
const WaitTargetDiverged = "target_diverged"

// WaitTargetLocked starts the reason of a train step back to pending because
// a lock file of git's (the step's one path) stood in the way of moving or
// pushing the target for longer than the train waits: another git command
// holds it, or one that crashed left it. The target is where it was; the
// train tries again once the file is gone (Target.Locked).
const WaitTargetLocked = "target_locked"

// WaitPushPending starts the reason of a submission queued while the remote
// could not be reached (an unreachable remote queues the entry offline and
// retries, rather than refusing it): the entry is pending but waits, passed
// over by the train, until the train or watch pushes its branch
// (merge.pushed).
const WaitPushPending = "pending_push"

// ChangeIDSource says where an entry's change id came from.
const (
	SourceJJ        = "jj"         // jj's change id
	SourceTrailer   = "trailer"    // a Change-Id: trailer in the commit message
	SourceGenerated = "generated"  // generated on the first submission of workspace+branch, remembered in the log
	SourceDedupeKey = "dedupe_key" // the second part of a dedupe key given with merge submit --dedupe-key
)

// EntryData is the data of every entry event; fields a type does not use are omitted.
type EntryData struct {
	EntryID int64 `json:"entry_id"`
	// EntryRef names the entry for good: the id of its merge.submitted event.
	// Entry ids are numbered in replay order, so the number another clone
	// decided on may name another entry once the logs are merged.
	EntryRef         string `json:"entry_ref,omitempty"`
	From             Status `json:"from,omitempty"`
	To               Status `json:"to,omitempty"`
	Workspace        string `json:"workspace,omitempty"`    // display name
	WorkspaceID      string `json:"workspace_id,omitempty"` // identity; absent in older logs, where it is the display name
	Worktree         string `json:"worktree,omitempty"`
	Branch           string `json:"branch,omitempty"`
	ChangeID         string `json:"change_id,omitempty"`
	ChangeIDSource   string `json:"change_id_source,omitempty"`
	DedupeKey        string `json:"dedupe_key,omitempty"`
	HeadSHA          string `json:"head_sha,omitempty"`
	TestedSHA        string `json:"tested_sha,omitempty"`
	TestedAgainstSHA string `json:"tested_against_sha,omitempty"`
	// TargetFromSHA, on the step to merging, is the commit the local target
	// moves from when it is not tested_against_sha: the train rebased onto
	// the remote's tip, which the local target lagged behind. Recovery
	// brings the target's checkout along from it.
	TargetFromSHA string     `json:"target_from_sha,omitempty"`
	Target        string     `json:"target,omitempty"`
	Priority      *int       `json:"priority,omitempty"`
	BeadID        string     `json:"bead_id,omitempty"`
	Attempt       int        `json:"attempt,omitempty"`
	Runner        string     `json:"runner,omitempty"`
	LeaseUntil    *time.Time `json:"lease_until,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	Paths         []string   `json:"paths,omitempty"`
	ExitCode      *int       `json:"exit_code,omitempty"`
	RunDir        string     `json:"run_dir,omitempty"`
	ScratchDir    string     `json:"scratch_dir,omitempty"` // the runner's temporary worktree, removed on recovery
	// Proc, on a lease renewal, is the process group the runner started
	// for the entry's current step (the test command), so that recovery can
	// kill it if it outlived its runner.
	Proc *ProcRecord `json:"proc,omitempty"`
	// Holder, on a claim, is the runner's own process, so that recovery
	// need not wait for the lease of a runner that is certainly dead on
	// this machine (DecideRecover's dead). Absent in older logs and for a
	// runner that could not identify itself: then only the lease tells.
	Holder *ProcRecord `json:"holder,omitempty"`
}

// ProcRecord is a started process group as the log records it, for a later
// command to find (and kill) it after a crash: the group leader's pid, the
// group, the leader's start time in clock ticks since boot and the boot's
// id. The service converts internal/proc's Record to and from it (the two
// have the same fields); the domain never looks at processes itself.
type ProcRecord struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot,omitempty"`
	NS    string `json:"ns,omitempty"` // the pid namespace; absent in older logs
}

// RefusedData is the data of merge.refused: who (the envelope's actor)
// submitted what, and why it was refused: the error's code, message and
// fields, as the command reported them.
type RefusedData struct {
	Code        string         `json:"code"`
	Message     string         `json:"message"`
	Workspace   string         `json:"workspace"`
	WorkspaceID string         `json:"workspace_id,omitempty"`
	Worktree    string         `json:"worktree,omitempty"`
	Branch      string         `json:"branch,omitempty"`
	HeadSHA     string         `json:"head_sha,omitempty"`
	Fields      map[string]any `json:"fields,omitempty"`
}

// Refused is a merge.refused event as merge list --refused shows it.
type Refused struct {
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	Event string    `json:"event"`
	RefusedData
}

// FreezeData is the data of merge.frozen.
type FreezeData struct {
	Reason string `json:"reason,omitempty"`
}

// Subject is the subject of an entry's events.
func Subject(id int64) string { return fmt.Sprintf("merge/%d", id) }
