package workqueue

import (
	"fmt"
	"time"
)

// TaskJSON is a task as tools written for beads (bd/br) read it.
type TaskJSON struct {
	ID           string        `json:"id"`
	Title        string        `json:"title"`
	Description  string        `json:"description,omitempty"`
	Status       string        `json:"status"`
	Priority     int           `json:"priority"`
	IssueType    string        `json:"issue_type"`
	Labels       []string      `json:"labels,omitempty"`
	Assignee     string        `json:"assignee,omitempty"`
	CreatedBy    string        `json:"created_by,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
	UpdatedAt    time.Time     `json:"updated_at"`
	ClosedAt     *time.Time    `json:"closed_at,omitempty"`
	CloseReason  string        `json:"close_reason,omitempty"`
	Dependencies []DepJSON     `json:"dependencies,omitempty"`
	Comments     []CommentJSON `json:"comments,omitempty"`
}

// DepJSON is beads' dependency record; Type is "blocks" or "parent-child".
type DepJSON struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by,omitempty"`
}

type CommentJSON struct {
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// JSON renders the task; comments only when asked (spool task show).
func (t *Task) JSON(comments bool) TaskJSON {
	x := t.Detail()
	j := TaskJSON{ID: t.ID, Title: t.Title, Description: x.Description, Status: t.Status, Priority: t.Priority,
		IssueType: t.Type, Labels: t.Labels, Assignee: x.Assignee, CreatedBy: x.CreatedBy, CreatedAt: t.CreatedAt,
		UpdatedAt: x.UpdatedAt, CloseReason: x.CloseReason}
	if !x.ClosedAt.IsZero() {
		at := x.ClosedAt
		j.ClosedAt = &at
	}
	if t.Parent != "" {
		j.Dependencies = append(j.Dependencies, DepJSON{IssueID: t.ID, DependsOnID: t.Parent, Type: "parent-child", CreatedAt: t.CreatedAt, CreatedBy: x.CreatedBy})
	}
	for _, d := range t.Blockers {
		j.Dependencies = append(j.Dependencies, DepJSON{IssueID: t.ID, DependsOnID: d.ID, Type: "blocks", CreatedAt: d.At, CreatedBy: d.By})
	}
	if comments {
		for _, c := range x.Comments {
			j.Comments = append(j.Comments, CommentJSON{Author: c.Author, Text: c.Text, CreatedAt: c.At})
		}
	}
	return j
}

// EntryJSON is one task's queue history.
type EntryJSON struct {
	ID             string     `json:"id"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	Failures       int        `json:"failures"`
	LastAttempt    *time.Time `json:"last_attempt,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	Worker         string     `json:"worker,omitempty"`
	LeaseUntil     *time.Time `json:"lease_until,omitempty"`
	NextEligibleAt *time.Time `json:"next_eligible_at,omitempty"`
	PendingSync    []string   `json:"pending_sync,omitempty"` // requests to bd/br not yet done: close, label_add blocked, …
	SyncFailed     []string   `json:"sync_failed,omitempty"`  // requests given up, each with its last error
}

// JSON renders the entry as recorded (history.json); views at a time use
// Policy.View, which adds lease expiry and next_eligible_at.
func (h *Entry) JSON() EntryJSON {
	j := EntryJSON{ID: h.ID, Status: h.Status, Attempts: h.Attempts, Failures: h.Failures,
		LastAttempt: timePtr(h.LastAttempt), LastError: h.LastError, Worker: h.Worker, LeaseUntil: timePtr(h.LeaseUntil)}
	for _, p := range h.Pending {
		j.PendingSync = append(j.PendingSync, p.String())
	}
	for _, p := range h.SyncFailed {
		j.SyncFailed = append(j.SyncFailed, fmt.Sprintf("%s: %s", p, p.LastError))
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
