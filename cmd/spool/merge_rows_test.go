package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/mergequeue"
)

// listRow is what merge list --json says of an entry, for encoding/json: the
// oracle of the fast row writer, Entry.AppendRow.
type listRow struct {
	EntryID        int64             `json:"entry_id"`
	EntryRef       string            `json:"entry_ref"`
	Position       *int              `json:"position"`
	Status         mergequeue.Status `json:"status"`
	Priority       int               `json:"priority"`
	Workspace      string            `json:"workspace"`
	WorkspaceID    string            `json:"workspace_id"`
	Branch         string            `json:"branch"`
	HeadSHA        string            `json:"head_sha"`
	DedupeKey      string            `json:"dedupe_key"`
	Owner          string            `json:"owner"`
	Attempts       int               `json:"attempts"`
	BeadID         string            `json:"bead_id,omitempty"`
	AddedAt        time.Time         `json:"added_at"`
	LastError      string            `json:"last_error,omitempty"`
	Waiting        string            `json:"waiting,omitempty"`
	WorkspaceState string            `json:"workspace_state"`
	Conflict       string            `json:"conflict,omitempty"` // the latest conflict between clones the fold resolved
}

// rowOf is the row of an entry; mergequeue.Entry.AppendRow writes the same JSON.
func rowOf(en *mergequeue.Entry) listRow {
	r := listRow{EntryID: en.ID, EntryRef: en.Ref, Status: en.Status, Priority: en.Priority, Workspace: en.Workspace, WorkspaceID: en.WorkspaceID,
		Branch: en.Branch, HeadSHA: en.HeadSHA, DedupeKey: en.DedupeKey, Owner: en.Owner, Attempts: en.Attempts, BeadID: en.BeadID,
		AddedAt: en.AddedAt, LastError: en.LastError, Waiting: en.Waiting, WorkspaceState: string(en.WorkspaceState), Conflict: en.Conflict()}
	if en.Position > 0 {
		p := en.Position
		r.Position = &p
	}
	return r
}

// The fast list row writer produces exactly what encoding/json makes of listRow.
func TestAppendRowMatchesListRow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123, time.UTC)
	for _, en := range []*mergequeue.Entry{
		{ID: 1, Ref: "5f1c2a9b0d3e4f5a6b7c8d9e", Position: 3, Status: mergequeue.Pending, Priority: 2, Workspace: "ws", WorkspaceID: "w1/ws", Branch: "b", HeadSHA: "abc",
			DedupeKey: "ws:I1", Owner: "ada <a&b>", Attempts: 1, AddedAt: at, WorkspaceState: mergequeue.WorkspaceCreated,
			Waiting: mergequeue.WaitCheckoutDirty + ": /r\u00e9po has uncommitted changes to \"x\""},
		{ID: 2, Status: mergequeue.FailedTerminal, Workspace: "w\u00e9 x", WorkspaceID: "w1/w%C3%A9-x", Branch: "b\"q\"", BeadID: "bd-1", LastError: "conflict\n\tx",
			AddedAt: at, WorkspaceState: mergequeue.WorkspaceConflict, Conflicts: []mergequeue.Resolution{{Event: "e1", Reason: "held by runner \"r\""}}},
	} {
		want, err := jsonCompact(rowOf(en))
		if err != nil {
			t.Fatal(err)
		}
		got := en.AppendRow(nil)
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil {
			t.Fatalf("invalid JSON:\n%s\n%s", got, want)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("row differs:\n got %s\nwant %s", got, want)
		}
	}
}

// A failed entry names what to do next: retry while attempts are left,
// else fix (or rebase, after a conflict) and submit again.
func TestMergeNextStep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		en   mergequeue.Entry
		want string
	}{
		{mergequeue.Entry{ID: 2, Status: mergequeue.FailedRetryable}, "spool merge retry 2, or fix the branch and run spool merge submit in its worktree"},
		{mergequeue.Entry{ID: 2, Status: mergequeue.FailedTerminal}, "fix the branch and run spool merge submit in its worktree"},
		{mergequeue.Entry{ID: 2, Status: mergequeue.FailedTerminal, ConflictPaths: []string{"a.txt"}}, "rebase the branch onto the target, resolve the conflicts, and run spool merge submit in its worktree"},
		{mergequeue.Entry{ID: 2, Status: mergequeue.Pending}, ""},
		{mergequeue.Entry{ID: 2, Status: mergequeue.Merged}, ""},
	} {
		if got := nextStep(&c.en); got != c.want {
			t.Errorf("%s: %q, want %q", c.en.Status, got, c.want)
		}
	}
}
