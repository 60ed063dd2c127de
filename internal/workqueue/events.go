// Package workqueue is spool's task tracker and work queue: tasks with
// dependencies, a queue that hands out ready work under leases, exponential
// or progressive backoff, abandonment and Blocked. Every
// change is an event; State is the projection of those events, and the
// Decide functions turn a command, the state and the clock into events.
package workqueue

import (
	"encoding/json"
	"time"
)

// Event types. Every event's subject is the task id.
const (
	// The tracker.
	TypeCreated    = "task.created"     // CreatedData
	TypeUpdated    = "task.updated"     // UpdatedData
	TypeClosed     = "task.closed"      // ClosedData
	TypeReopened   = "task.reopened"    // ReopenedData
	TypeDepAdded   = "task.dep_added"   // DepData
	TypeDepRemoved = "task.dep_removed" // DepData
	TypeCommented  = "task.commented"   // CommentData
	TypeReparented = "task.reparented"  // ParentData
	TypeImported   = "task.imported"    // ImportedData: a whole task from a beads export

	// The queue.
	TypeClaimed      = "task.claimed"       // ClaimedData
	TypeHeartbeat    = "task.heartbeat"     // HeartbeatData
	TypeSucceeded    = "task.succeeded"     // AttemptData
	TypeFailed       = "task.failed"        // FailedData
	TypeLeaseExpired = "task.lease_expired" // LeaseExpiredData
	TypeDemoted      = "task.demoted"       // DemotedData
	TypeAbandoned    = "task.abandoned"     // AbandonedData
	TypeBlocked      = "task.blocked"       // BlockedData
	TypeUnblocked    = "task.unblocked"     // UnblockedData
	TypeRetried      = "task.retried"       // RetriedData
	TypeReleased     = "task.released"      // AttemptData: the claimant gave the task back, no result

	// Telling a bd/br source what the queue decided: the intent is appended
	// with the decision, the outcome once bd/br did it, so a crash between
	// the two leaves the request pending and the next command does it.
	TypeSyncRequested = "task.sync_requested" // SyncData
	TypeSynced        = "task.synced"         // SyncedData
	TypeSyncFailed    = "task.sync_failed"    // SyncFailedData

	// Running a notification hook (hooks.go): the request is appended with
	// the abandonment or Blocked it follows, the start before it runs, the
	// outcome after.
	TypeHookRequested = "task.hook_requested" // HookRequestedData
	TypeHookStarted   = "task.hook_started"   // HookRequestData
	TypeHookFinished  = "task.hook_finished"  // HookFinishedData
)

// CreatedData is a new task; its id is the event's subject.
type CreatedData struct {
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Design      string   `json:"design,omitempty"`
	Acceptance  string   `json:"acceptance_criteria,omitempty"`
	Notes       string   `json:"notes,omitempty"`
	ExternalRef string   `json:"external_ref,omitempty"` // bd's reference to another system's issue (gh-9, jira-ABC)
	Assignee    string   `json:"assignee,omitempty"`
	Owner       string   `json:"owner,omitempty"` // when not the actor (bd create: git user.email)
	Priority    int      `json:"priority"`
	IssueType   string   `json:"issue_type"`
	Labels      []string `json:"labels,omitempty"`
	Parent      string   `json:"parent,omitempty"`
	Deps        []string `json:"deps,omitempty"` // blockers
}

// UpdatedData changes the fields that are set.
type UpdatedData struct {
	Title        *string  `json:"title,omitempty"`
	Description  *string  `json:"description,omitempty"`
	Design       *string  `json:"design,omitempty"`
	Acceptance   *string  `json:"acceptance_criteria,omitempty"`
	Notes        *string  `json:"notes,omitempty"`
	ExternalRef  *string  `json:"external_ref,omitempty"`
	Assignee     *string  `json:"assignee,omitempty"`
	Priority     *int     `json:"priority,omitempty"`
	Status       *string  `json:"status,omitempty"`
	AddLabels    []string `json:"add_labels,omitempty"`
	RemoveLabels []string `json:"remove_labels,omitempty"`
}

func (d UpdatedData) empty() bool {
	return d.labelsOnly() && len(d.AddLabels)+len(d.RemoveLabels) == 0
}

// labelsOnly reports whether d changes nothing but labels.
func (d UpdatedData) labelsOnly() bool {
	return d.Title == nil && d.Description == nil && d.Design == nil && d.Acceptance == nil && d.Notes == nil &&
		d.ExternalRef == nil && d.Assignee == nil && d.Priority == nil && d.Status == nil
}

// ImportedData is a task as a beads export (JSONL) has it, whole: importing
// it sets every field, times and comments included, so a task moved from
// bd and back is the task it was.
type ImportedData struct {
	Title              string         `json:"title"`
	Description        string         `json:"description,omitempty"`
	Design             string         `json:"design,omitempty"`
	AcceptanceCriteria string         `json:"acceptance_criteria,omitempty"`
	Notes              string         `json:"notes,omitempty"`
	Status             string         `json:"status"` // open, in_progress, deferred, closed (blocked: open with the blocked label)
	Priority           int            `json:"priority"`
	IssueType          string         `json:"issue_type"`
	Assignee           string         `json:"assignee,omitempty"`
	Owner              *string        `json:"owner,omitempty"` // as the export had it ("" included); absent in events from before spool kept it
	CreatedAt          time.Time      `json:"created_at"`
	CreatedBy          string         `json:"created_by,omitempty"`
	UpdatedAt          time.Time      `json:"updated_at"`
	ClosedAt           *time.Time     `json:"closed_at,omitempty"`
	CloseReason        string         `json:"close_reason,omitempty"`
	ExternalRef        string         `json:"external_ref,omitempty"`
	Labels             []string       `json:"labels,omitempty"`
	Parent             *ImportedDep   `json:"parent,omitempty"`
	Blockers           []ImportedDep  `json:"blockers,omitempty"`
	Links              []Link         `json:"links,omitempty"` // dependencies that do not block: related, discovered-from, …
	Comments           []ImportedNote `json:"comments,omitempty"`
}

// ImportedDep is a blocking dependency with when and by whom it was made.
type ImportedDep struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
	By string    `json:"by,omitempty"`
}

// ImportedNote is a comment as it was.
type ImportedNote struct {
	ID     int64     `json:"id"`
	Author string    `json:"author"`
	Text   string    `json:"text"`
	At     time.Time `json:"at"`
}

type ClosedData struct {
	Reason string `json:"reason,omitempty"`
}

// ReopenedData says why a task was reopened, when someone said (bd reopen
// --reason), or spool did (Rejected: the merge train refused the branch of
// a done attempt).
type ReopenedData struct {
	Reason string `json:"reason,omitempty"`
}

// DepData is a dependency of the subject on Blocker. Type is bd's
// dependency type: "" is blocks (all that events before types had);
// parent-child makes Blocker the parent; any other (related,
// discovered-from, …) is a link that does not block.
type DepData struct {
	Blocker string `json:"blocker"`
	Type    string `json:"type,omitempty"`
}

// ParentData is a task's new parent; "" is none.
type ParentData struct {
	Parent string `json:"parent"`
}

type CommentData struct {
	Text string `json:"text"`
}

// ClaimedData hands a task to a worker until LeaseUntil.
type ClaimedData struct {
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
	Priority   int       `json:"priority"`
	Source     string    `json:"source"`
}

type HeartbeatData struct {
	LeaseUntil time.Time `json:"lease_until"`
}

type AttemptData struct {
	Attempt int `json:"attempt"`
}

type FailedData struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
}

// LeaseExpiredData is a claim whose lease ran out: a failed attempt dated at
// the lease's end, whenever it was noticed.
type LeaseExpiredData struct {
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
}

// DemotedData is the progressive policy lowering a task's priority.
type DemotedData struct {
	From     int `json:"from"`
	To       int `json:"to"`
	Failures int `json:"failures"`
}

// AbandonedData is task.abandoned: the task failed max_failures times and
// the queue gives up on it.
type AbandonedData struct {
	TaskID      string `json:"task_id"`
	Attempts    int    `json:"attempts"`
	LastError   string `json:"last_error"`
	MaxFailures int    `json:"max_failures"`
}

// BlockedData is task.blocked, with the camelCase names (taskId,
// totalAttempts, lastFailureReason) that existing consumers of a
// task.blocked stream read. Logs written before read as well.
type BlockedData struct {
	TaskID            string `json:"taskId"`
	TotalAttempts     int    `json:"totalAttempts"`
	LastFailureReason string `json:"lastFailureReason"`
	Reason            string `json:"reason,omitempty"` // given by hand
}

// UnmarshalJSON reads both spellings: snake_case is what spool wrote first.
func (d *BlockedData) UnmarshalJSON(b []byte) error {
	type camel BlockedData
	var v struct {
		camel
		TaskID            string `json:"task_id"`
		TotalAttempts     int    `json:"total_attempts"`
		LastFailureReason string `json:"last_failure_reason"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = BlockedData(v.camel)
	if d.TaskID == "" {
		d.TaskID, d.TotalAttempts, d.LastFailureReason = v.TaskID, v.TotalAttempts, v.LastFailureReason
	}
	return nil
}

// UnblockedData and RetriedData carry, when the progressive policy had
// demoted the task, the priority it had before (RestorePriority): the fold
// sets it back.
type UnblockedData struct {
	ResetAttempts   bool `json:"reset_attempts"`
	RestorePriority *int `json:"restore_priority,omitempty"`
	// FromSource: a bd/br source's bead lost its blocked label there (by
	// hand): nothing to ask of the source.
	FromSource bool `json:"from_source,omitempty"`
}

type RetriedData struct {
	PreviousStatus   HistStatus `json:"previous_status"`
	PreviousAttempts int        `json:"previous_attempts"`
	RestorePriority  *int       `json:"restore_priority,omitempty"`
}

// SyncData asks the source to close or reopen a bead, add or remove a
// label, set its priority, or comment on it.
type SyncData struct {
	Op       string `json:"op"`               // Sync*
	Reason   string `json:"reason,omitempty"` // a close's reason, a comment's text
	Label    string `json:"label,omitempty"`
	Priority *int   `json:"priority,omitempty"`
}

// Sync operations.
const (
	SyncClose       = "close"
	SyncLabelAdd    = "label_add"
	SyncLabelRemove = "label_remove"
	SyncPriority    = "priority"
	SyncComment     = "comment"
	SyncReopen      = "reopen"
)

// SyncedData says the source did the request whose event id it names.
type SyncedData struct {
	Request string `json:"request"`
}

// SyncFailedData says the source failed the request it names. GaveUp ends
// the request: it is no longer retried (MaxSyncAttempts).
type SyncFailedData struct {
	Request string `json:"request"`
	Error   string `json:"error"`
	GaveUp  bool   `json:"gave_up,omitempty"`
}

// HookRequestedData asks for Hook to run after the event of type Event
// whose data is Data (the event recorded with it).
type HookRequestedData struct {
	Hook  string          `json:"hook"`
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// HookRequestData names a task.hook_requested by its event id.
type HookRequestData struct {
	Request string `json:"request"`
}

// HookFinishedData is how a hook ended: its exit status, or why it has
// none (it could not start, it timed out, spool stopped while it ran).
type HookFinishedData struct {
	Request  string `json:"request"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
}

// MaxSyncAttempts is how often a request to the source is tried before it
// is given up, so that one the source always refuses (a bead deleted by
// hand) does not run again on every command.
const MaxSyncAttempts = 5

// SyncWait is how long a request the source refused failures times waits
// before it is tried again: 10 s, doubling, at most 5 min. A source that
// refuses every write is not asked in a loop as fast as commands come.
func SyncWait(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	return min(10*time.Second<<min(failures-1, 10), 5*time.Minute)
}

// BlockedLabel marks a Blocked task: Blocked is open plus this label, so
// bd ready leaves it out, and removing the label unblocks it.
const BlockedLabel = "blocked"

// Tracker statuses.
const (
	StatusOpen       = "open"
	StatusInProgress = "in_progress"
	StatusDeferred   = "deferred"
	StatusClosed     = "closed"
)

// Queue (history) statuses: HistStatus, in histstatus.go.

// IssueTypes are the accepted task types.
var IssueTypes = []string{"task", "bug", "feature", "epic", "chore"}
