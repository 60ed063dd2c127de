package mergequeue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spoolhq/spool/internal/fault"
)

// The merge queue's submission errors (QueueSubmissionError's variants, as
// merge-queue clients already handle them), one constructor per variant. Each
// is a *fault.Error: a snake_case code, a kind that sets the exit code (2
// usage, 3 rejected by a queue rule, 4 git or storage), a message that says
// what to do, and the variant's fields, which --json renders next to code and
// message.

// ErrSubmission is wrapped by every merge-queue error that has no better sentinel.
var ErrSubmission = errors.New("merge queue")

// Codes of every variant, in QueueSubmissionError's order, then spool's
// additions. Its database_open_failed, schema_initialization_failed and
// transaction_failed have no counterpart: spool has no database; opening
// the log, a missing .spool/ and a failed append are storage,
// not_initialized and storage (see docs/errors.md).
var (
	// Codes of every variant, in QueueSubmissionError's order, then spool's additions.
	CodeSessionNotFound           = fault.Register(fault.Rejected, "session_not_found")
	CodeInvalidWorkspaceName      = fault.Register(fault.Usage, "invalid_workspace_name")
	CodeInvalidHeadSHA            = fault.Register(fault.Rejected, "invalid_head_sha")
	CodeInvalidDedupeKey          = fault.Register(fault.Usage, "invalid_dedupe_key")
	CodeAlreadyInQueue            = fault.Register(fault.Rejected, "already_in_queue")
	CodeDedupeKeyConflict         = fault.Register(fault.Rejected, "dedupe_key_conflict")
	CodeQueueFull                 = fault.Register(fault.Rejected, "queue_full")
	CodeConcurrentModification    = fault.Register(fault.Rejected, "concurrent_modification")
	CodeIdentityExtractionFailed  = fault.Register(fault.Environment, "identity_extraction_failed")
	CodeChangeIDExtractionFailed  = fault.Register(fault.Environment, "change_id_extraction_failed")
	CodeHeadSHAExtractionFailed   = fault.Register(fault.Environment, "head_sha_extraction_failed")
	CodeBookmarkPushFailed        = fault.Register(fault.Environment, "bookmark_push_failed")
	CodeRemoteUnreachable         = fault.Register(fault.Environment, "remote_unreachable")
	CodeJjExecutionFailed         = fault.Register(fault.Environment, "jj_execution_failed")
	CodeInvalidStateTransition    = fault.CodeInvalidStateTransition
	CodeEntryIsTerminal           = fault.Register(fault.Rejected, "entry_is_terminal")
	CodeUnauthorizedWorkspace     = fault.Register(fault.Rejected, "unauthorized_workspace")
	CodeUnauthorizedEntryModified = fault.Register(fault.Rejected, "unauthorized_entry_modification")
	// spool's additions
	CodeWorkspaceNotClean = fault.Register(fault.Rejected, "workspace_not_clean")
	CodeAttemptsExhausted = fault.Register(fault.Rejected, "attempts_exhausted")
	CodeInvalidPriority   = fault.CodeInvalidPriority
	CodeEntryNotFound     = fault.Register(fault.Rejected, "entry_not_found")
	CodeInvalidEntryRef   = fault.Register(fault.Usage, "invalid_entry_ref")
	CodeAmbiguousEntryRef = fault.Register(fault.Usage, "ambiguous_entry_ref")
	CodeBranchIsTarget    = fault.Register(fault.Rejected, "branch_is_target")
	CodeDetachedHead      = fault.Register(fault.Rejected, "detached_head")
)

func SessionNotFound(session string) *fault.Error {
	return fault.New(CodeSessionNotFound, fault.ErrNotFound,
		fmt.Sprintf("workspace %q is not among `git worktree list`; create it with git worktree add, or pass --workspace with an existing one", session),
		"session", session)
}

// AbandonedWorkspace is SessionNotFound for a worktree whose directory is
// gone: an abandoned workspace cannot be submitted.
func AbandonedWorkspace(session string) *fault.Error {
	return fault.New(CodeSessionNotFound, fault.ErrNotFound,
		fmt.Sprintf("workspace %q is abandoned: its directory is gone; run git worktree prune, or recreate it with git worktree add", session),
		"session", session, "reason", "abandoned")
}

func InvalidWorkspaceName(workspace, reason string) *fault.Error {
	return fault.New(CodeInvalidWorkspaceName, ErrSubmission,
		fmt.Sprintf("workspace name %q is invalid: %s", workspace, reason),
		"workspace", workspace, "reason", reason)
}

func InvalidHeadSHA(headSHA, reason string) *fault.Error {
	return fault.New(CodeInvalidHeadSHA, ErrSubmission,
		fmt.Sprintf("head %q is not a commit: %s; commit your changes and submit again", headSHA, reason),
		"head_sha", headSHA, "reason", reason)
}

func InvalidDedupeKey(key, reason string) *fault.Error {
	return fault.New(CodeInvalidDedupeKey, ErrSubmission,
		fmt.Sprintf("dedupe key %q is invalid: %s; it must be workspace:change_id", key, reason),
		"dedupe_key", key, "reason", reason)
}

func AlreadyInQueue(session, existingKey, providedKey string, entryID int64) *fault.Error {
	return fault.New(CodeAlreadyInQueue, fault.ErrConflict,
		fmt.Sprintf("workspace %q already has active entry %d for %s (this change is %s); cancel it with `spool merge cancel %d` or wait for it to finish",
			session, entryID, existingKey, providedKey, entryID),
		"session", session, "existing_dedupe_key", existingKey, "provided_dedupe_key", providedKey, "entry_id", entryID)
}

func DedupeKeyConflict(key, existingWorkspace, providedWorkspace string) *fault.Error {
	return fault.New(CodeDedupeKeyConflict, fault.ErrConflict,
		fmt.Sprintf("dedupe key %q belongs to an active entry of workspace %q, not %q; submit from %q or cancel that entry first",
			key, existingWorkspace, providedWorkspace, existingWorkspace),
		"dedupe_key", key, "existing_workspace", existingWorkspace, "provided_workspace", providedWorkspace)
}

func QueueFull(capacity, current int) *fault.Error {
	return fault.New(CodeQueueFull, fault.ErrOverQuota,
		fmt.Sprintf("the merge queue is full (%d of %d active entries); wait for entries to finish or raise merge.capacity", current, capacity),
		"capacity", capacity, "current_count", current)
}

func ConcurrentModification(entryID int64, operation string) *fault.Error {
	return fault.New(CodeConcurrentModification, fault.ErrConflict,
		fmt.Sprintf("entry %d changed while %s was in progress; look at `spool merge show %d` and try again", entryID, operation, entryID),
		"entry_id", entryID, "operation", operation)
}

func IdentityExtractionFailed(workspace, reason string) *fault.Error {
	return fault.New(CodeIdentityExtractionFailed, ErrSubmission,
		fmt.Sprintf("cannot read the identity of workspace %q: %s", workspace, reason),
		"workspace", workspace, "reason", reason)
}

// DetachedHead refuses a submission from a worktree whose HEAD is detached:
// a state of the user's worktree (exit 3), not a failure to read it.
func DetachedHead(workspace string) *fault.Error {
	return fault.New(CodeDetachedHead, ErrSubmission,
		fmt.Sprintf("workspace %q has a detached HEAD, so there is no branch to merge; check out a branch there (git switch -c NAME keeps the commits) and submit again", workspace),
		"workspace", workspace)
}

func ChangeIDExtractionFailed(workspace, reason string) *fault.Error {
	return fault.New(CodeChangeIDExtractionFailed, ErrSubmission,
		fmt.Sprintf("cannot read the change id of workspace %q: %s; check `jj log` there", workspace, reason),
		"workspace", workspace, "reason", reason)
}

func HeadSHAExtractionFailed(workspace, reason string) *fault.Error {
	return fault.New(CodeHeadSHAExtractionFailed, ErrSubmission,
		fmt.Sprintf("cannot read HEAD of workspace %q: %s; check `git status` there", workspace, reason),
		"workspace", workspace, "reason", reason)
}

func BookmarkPushFailed(workspace, bookmark, reason string) *fault.Error {
	return fault.New(CodeBookmarkPushFailed, ErrSubmission,
		fmt.Sprintf("pushing branch %q of workspace %q failed, nothing was queued: %s; fix the push (or pass --no-push) and submit again", bookmark, workspace, reason),
		"workspace", workspace, "bookmark", bookmark, "reason", reason)
}

func RemoteUnreachable(remote, reason string) *fault.Error {
	return fault.New(CodeRemoteUnreachable, ErrSubmission,
		fmt.Sprintf("remote %q cannot be reached, nothing was queued: %s; check the network and `git remote -v`, or pass --no-push", remote, reason),
		"remote", remote, "reason", reason)
}

func JjExecutionFailed(command string, exitCode int, stderr string) *fault.Error {
	return fault.New(CodeJjExecutionFailed, ErrSubmission,
		fmt.Sprintf("`%s` exited %d: %s", command, exitCode, strings.TrimSpace(stderr)),
		"command", command, "exit_code", exitCode, "stderr", stderr)
}

func InvalidStateTransition(entryID int64, current, target Status) *fault.Error {
	return fault.New(CodeInvalidStateTransition, fault.ErrInvalidTransition,
		fmt.Sprintf("entry %d cannot go from %s to %s; allowed from %s: %s", entryID, current, target, current, allowedText(current)),
		"entry_id", entryID, "current_status", current, "target_status", target)
}

func EntryIsTerminal(entryID int64, status Status) *fault.Error {
	return fault.New(CodeEntryIsTerminal, fault.ErrInvalidTransition,
		fmt.Sprintf("entry %d is %s and cannot change; submit the workspace again to requeue it", entryID, status),
		"entry_id", entryID, "status", status)
}

func UnauthorizedWorkspace(agent, workspace string) *fault.Error {
	return fault.New(CodeUnauthorizedWorkspace, fault.ErrUnauthorized,
		fmt.Sprintf("%s may not submit workspace %q: another actor's entry holds it; ask its owner or an admin (config key admins)", agent, workspace),
		"agent_id", agent, "workspace", workspace)
}

func UnauthorizedEntryModification(agent string, entryID int64, owner string) *fault.Error {
	return fault.New(CodeUnauthorizedEntryModified, fault.ErrUnauthorized,
		fmt.Sprintf("%s may not change entry %d: it belongs to %s; ask them or an admin (config key admins)", agent, entryID, owner),
		"agent_id", agent, "entry_id", entryID, "owner", owner)
}

func WorkspaceNotClean(workspace string, paths []string) *fault.Error {
	return fault.New(CodeWorkspaceNotClean, ErrSubmission,
		fmt.Sprintf("workspace %q has uncommitted changes (%s); commit them or pass --auto-commit", workspace, strings.Join(firstN(paths, 5), ", ")),
		"workspace", workspace, "paths", paths)
}

// BranchIsTarget refuses a submission of the branch the train merges into:
// rebasing it onto itself and "merging" it would queue, test and record a
// merge of nothing.
func BranchIsTarget(workspace, branch string) *fault.Error {
	return fault.New(CodeBranchIsTarget, ErrSubmission,
		fmt.Sprintf("workspace %q has %s checked out, the branch the merge train merges into (merge.target); create a branch for the change (git switch -c NAME) and submit that", workspace, branch),
		"workspace", workspace, "branch", branch)
}

func AttemptsExhausted(entryID int64, attempts, maxAttempts int) *fault.Error {
	return fault.New(CodeAttemptsExhausted, fault.ErrInvalidTransition,
		fmt.Sprintf("entry %d has used %d of %d attempts; fix the change and submit it again, or raise merge.max_attempts", entryID, attempts, maxAttempts),
		"entry_id", entryID, "attempts", attempts, "max_attempts", maxAttempts)
}

func InvalidPriority(priority int) *fault.Error {
	return fault.New(CodeInvalidPriority, ErrSubmission,
		fmt.Sprintf("priority %d is out of range; use 0 (most urgent) to 4", priority),
		"priority", priority)
}

func EntryNotFound(entryID int64) *fault.Error {
	return fault.New(CodeEntryNotFound, fault.ErrNotFound,
		fmt.Sprintf("merge entry %d not found; `spool merge list --all` shows every entry", entryID),
		"entry_id", entryID)
}

// EntryRefNotFound is EntryNotFound for an entry_ref prefix.
func EntryRefNotFound(prefix string) *fault.Error {
	return fault.New(CodeEntryNotFound, fault.ErrNotFound,
		fmt.Sprintf("no merge entry has an entry_ref starting with %s; `spool merge list --all --json` shows every entry", prefix),
		"entry_ref", prefix)
}

func InvalidEntryRef(handle string) *fault.Error {
	return fault.New(CodeInvalidEntryRef, ErrSubmission,
		fmt.Sprintf("%q names no entry: give an entry number or at least %d hex digits of an entry_ref", handle, MinRefPrefix),
		"entry_ref", handle)
}

func AmbiguousEntryRef(prefix string, refs []string) *fault.Error {
	return fault.New(CodeAmbiguousEntryRef, ErrSubmission,
		fmt.Sprintf("entry_ref prefix %s matches %d entries (%s); give more of it", prefix, len(refs), strings.Join(firstN(refs, 5), ", ")),
		"entry_ref", prefix, "entry_refs", refs)
}

func allowedText(s Status) string {
	tos := transitions[s]
	if len(tos) == 0 {
		return "nothing (terminal)"
	}
	parts := make([]string, len(tos))
	for i, t := range tos {
		parts[i] = string(t)
	}
	return strings.Join(parts, ", ")
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(append([]string(nil), s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// Variants returns one example of every error variant, for tests and docs.
func Variants() []*fault.Error {
	return []*fault.Error{
		SessionNotFound("ws-a"),
		InvalidWorkspaceName("bad name", "must be letters, digits, '.', '_' or '-'"),
		InvalidHeadSHA("", "branch has no commits"),
		InvalidDedupeKey("nocolon", "missing ':'"),
		AlreadyInQueue("ws-a", "ws-a:I1", "ws-a:I2", 7),
		DedupeKeyConflict("ws-a:I1", "ws-a", "ws-b"),
		QueueFull(10, 10),
		ConcurrentModification(7, "merge run"),
		IdentityExtractionFailed("ws-a", "git worktree id: exit status 128"),
		DetachedHead("ws-a"),
		ChangeIDExtractionFailed("ws-a", "jj log failed"),
		HeadSHAExtractionFailed("ws-a", "rev-parse failed"),
		BookmarkPushFailed("ws-a", "feature", "rejected"),
		RemoteUnreachable("origin", "connection refused"),
		JjExecutionFailed("jj log -T change_id", 1, "Error: no such revision\n"),
		InvalidStateTransition(7, Merged, Testing),
		EntryIsTerminal(7, Cancelled),
		UnauthorizedWorkspace("bob@example.com", "ws-a"),
		UnauthorizedEntryModification("bob@example.com", 7, "ada@example.com"),
		WorkspaceNotClean("ws-a", []string{"a.txt"}),
		AttemptsExhausted(7, 3, 3),
		BranchIsTarget("ws-a", "main"),
		InvalidPriority(9),
		EntryNotFound(7),
		InvalidEntryRef("x"),
		AmbiguousEntryRef("5f1c", []string{"5f1c2a9b0d3e4f5a6b7c8d9e", "5f1c77aa0d3e4f5a6b7c8d9e"}),
	}
}
