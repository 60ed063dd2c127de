package workqueue

import (
	"fmt"
	"slices"
	"time"
)

// TaskJSON is a task as beads (bd 0.49) marshals an issue: the same names,
// types, order and omissions, so that tools written for bd decode spool's
// output unchanged. Owner is bd's "human owner" (bd create records git
// user.email), for spool task add the creator.
type TaskJSON struct {
	ID                 string        `json:"id"`
	Title              string        `json:"title"`
	Description        string        `json:"description,omitempty"`
	Design             string        `json:"design,omitempty"`
	AcceptanceCriteria string        `json:"acceptance_criteria,omitempty"`
	Notes              string        `json:"notes,omitempty"`
	Status             string        `json:"status,omitempty"`
	Priority           int           `json:"priority"`
	IssueType          string        `json:"issue_type,omitempty"`
	Assignee           string        `json:"assignee,omitempty"`
	Owner              string        `json:"owner,omitempty"`
	CreatedAt          time.Time     `json:"created_at"`
	CreatedBy          string        `json:"created_by,omitempty"`
	UpdatedAt          time.Time     `json:"updated_at"`
	ClosedAt           *time.Time    `json:"closed_at,omitempty"`
	CloseReason        string        `json:"close_reason,omitempty"`
	ExternalRef        string        `json:"external_ref,omitempty"`
	Labels             []string      `json:"labels,omitempty"`
	Dependencies       []DepJSON     `json:"dependencies,omitempty"`
	Comments           []CommentJSON `json:"comments,omitempty"`
}

// DepJSON is beads' dependency record: Type is "blocks", "parent-child", or
// a link that does not block ("related", "discovered-from", …).
type DepJSON struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by,omitempty"`
}

// Dependency types.
const (
	DepBlocks      = "blocks"
	DepParentChild = "parent-child"
)

// CommentJSON is beads' comment.
type CommentJSON struct {
	ID        int64     `json:"id"`
	IssueID   string    `json:"issue_id"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// ListItemJSON is an item of bd list --json (beads' IssueWithCounts).
type ListItemJSON struct {
	TaskJSON
	DependencyCount int `json:"dependency_count"`
	DependentCount  int `json:"dependent_count"`
}

// DetailJSON is an item of bd show --json (beads' IssueDetails): what the
// task depends on and what depends on it, as whole tasks with the
// dependency's type, and its parent's id.
type DetailJSON struct {
	TaskJSON
	Labels       []string      `json:"labels,omitempty"`
	Dependencies []RelatedJSON `json:"dependencies,omitempty"`
	Dependents   []RelatedJSON `json:"dependents,omitempty"`
	Comments     []CommentJSON `json:"comments,omitempty"`
	Parent       *string       `json:"parent,omitempty"`
}

// RelatedJSON is a task on the other end of a dependency (beads'
// IssueWithDependencyMetadata).
type RelatedJSON struct {
	TaskJSON
	DependencyType string `json:"dependency_type"`
}

// Record renders the task as recorded, whole: dependencies and comments
// included (tasks.json and spool export). Views at a time use State.View.
func (t *Task) Record() TaskJSON {
	var j TaskJSON
	t.recordInto(&j)
	return j
}

// recordInto is Record into j, reusing the arrays of j's lists: a writer
// of 100,000 records encodes each before the next.
func (t *Task) recordInto(j *TaskJSON) {
	deps, comments := j.Dependencies[:0], j.Comments[:0]
	*j = t.base()
	j.Dependencies = t.appendDeps(deps)
	for c := range t.Detail().Comments() {
		comments = append(comments, t.comment(c))
	}
	j.Comments = comments
}

// base is the task without dependencies or comments (bd ready's items).
func (t *Task) base() TaskJSON {
	x := t.Detail()
	j := TaskJSON{ID: t.ID, Title: t.Title, Description: x.Description, Design: x.Design, AcceptanceCriteria: x.Acceptance,
		Notes: x.Notes, Status: t.Status, Priority: t.Priority, IssueType: t.Type, Assignee: x.Assignee, Owner: x.Owner,
		CreatedAt: t.CreatedAt, CreatedBy: x.CreatedBy, UpdatedAt: x.UpdatedAt, CloseReason: x.CloseReason,
		ClosedAt: timePtr(x.ClosedAt), ExternalRef: x.ExternalRef}
	if len(t.Labels) > 0 {
		j.Labels = slices.Clone(t.Labels)
	}
	return j
}

// deps are the task's dependency records: its parent, its blockers, its links.
func (t *Task) deps() []DepJSON { return t.appendDeps(nil) }

// appendDeps appends deps to out.
func (t *Task) appendDeps(out []DepJSON) []DepJSON {
	x := t.Detail()
	if t.Parent != "" {
		at, by := t.CreatedAt, x.CreatedBy
		if !x.ParentAt.IsZero() {
			at, by = x.ParentAt, x.ParentBy
		}
		out = append(out, DepJSON{IssueID: t.ID, DependsOnID: t.Parent, Type: DepParentChild, CreatedAt: at, CreatedBy: by})
	}
	for _, d := range t.Blockers {
		out = append(out, DepJSON{IssueID: t.ID, DependsOnID: d.ID, Type: DepBlocks, CreatedAt: d.At, CreatedBy: d.By})
	}
	for _, l := range t.Links {
		out = append(out, DepJSON{IssueID: t.ID, DependsOnID: l.ID, Type: l.Type, CreatedAt: l.At, CreatedBy: l.By})
	}
	return out
}

func (t *Task) comment(c Comment) CommentJSON {
	return CommentJSON{ID: c.ID, IssueID: t.ID, Author: c.Author, Text: c.Text, CreatedAt: c.At}
}

// Comments renders the task's comments.
func (t *Task) Comments() []CommentJSON {
	out := []CommentJSON{}
	for c := range t.Detail().Comments() {
		out = append(out, t.comment(c))
	}
	return out
}

// EntryJSON is one task's queue history.
type EntryJSON struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	Failures       int        `json:"failures"`
	LastAttempt    *time.Time `json:"last_attempt,omitempty"`          // when the last attempt was claimed
	LastEndedAt    *time.Time `json:"last_attempt_ended_at,omitempty"` // when it ended (absent while it runs)
	LastError      string     `json:"last_error,omitempty"`
	Worker         string     `json:"worker,omitempty"`
	LeaseUntil     *time.Time `json:"lease_until,omitempty"`
	NextEligibleAt *time.Time `json:"next_eligible_at,omitempty"`
	BlockReason    string     `json:"block_reason,omitempty"`
	PendingSync    []string   `json:"pending_sync,omitempty"`  // requests to bd/br not yet done: close, label_add blocked, …
	SyncFailed     []string   `json:"sync_failed,omitempty"`   // requests given up, each with its last error
	PendingHooks   []string   `json:"pending_hooks,omitempty"` // notification hooks requested and not finished: on_abandoned, on_blocked (started)
}

// JSON renders the entry as recorded (history.json); views at a time use
// Policy.View, which adds lease expiry and next_eligible_at.
func (h *Entry) JSON() EntryJSON {
	j := EntryJSON{ID: h.ID, Status: string(h.Status), Attempts: h.Attempts, Failures: h.Failures,
		LastAttempt: timePtr(h.LastAttempt), LastError: h.LastError, Worker: h.Worker, LeaseUntil: timePtr(h.LeaseUntil),
		BlockReason: h.BlockReason}
	if h.Status != HistWorking {
		j.LastEndedAt = timePtr(h.LastEndedAt)
	}
	for _, p := range h.Pending {
		j.PendingSync = append(j.PendingSync, p.String())
	}
	for _, p := range h.SyncFailed {
		j.SyncFailed = append(j.SyncFailed, fmt.Sprintf("%s: %s", p, p.LastError))
	}
	for _, p := range h.Hooks {
		j.PendingHooks = append(j.PendingHooks, p.String())
	}
	return j
}

// String names the request as people read it: "close", "label_add blocked", "priority 3".
func (p PendingSync) String() string {
	switch {
	case p.Label != "":
		return p.Op + " " + p.Label
	case p.Priority != nil:
		return fmt.Sprintf("%s %d", p.Op, *p.Priority)
	}
	return p.Op
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
