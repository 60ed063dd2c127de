package mergequeue

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Listed is what spool merge list shows: the pending entries in queue
// order, then the other active ones, and with all the ended ones too (the
// only listing that decodes them).
func (q *State) Listed(all bool) []*Entry {
	entries := append([]*Entry(nil), q.Queue()...)
	others := q.index().active
	if all {
		others = q.All()
	}
	for _, en := range others {
		if en.Status != Pending {
			entries = append(entries, en)
		}
	}
	return entries
}

// ListJSON is spool merge list --json: the queue's flags, then a compact
// row per entry on a line of its own (a thousand rows stay readable and cost
// a fraction of indenting them).
func (q *State) ListJSON(entries []*Entry) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteString(`{"frozen": `)
	enc.Encode(q.Frozen)
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`, "frozen_reason": `)
	enc.Encode(q.FrozenReason)
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`, "pending_count": `)
	enc.Encode(q.PendingCount)
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`, "entries": [`)
	b := make([]byte, 0, 512)
	for i, en := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n  ")
		buf.Write(en.AppendRow(b[:0]))
	}
	if len(entries) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("]}\n")
	return buf.Bytes()
}

// Placed is where an entry stands after a change (merge cancel, retry,
// position --json); Position is null when it is not pending.
type Placed struct {
	EntryID      int64  `json:"entry_id"`
	EntryRef     string `json:"entry_ref"`
	PendingCount int    `json:"pending_count"`
	Position     *int   `json:"position"`
	Status       Status `json:"status"`
}

// Placed says where en stands in q.
func (q *State) Placed(en *Entry) Placed {
	p := Placed{EntryID: en.ID, EntryRef: en.Ref, PendingCount: q.PendingCount, Status: en.Status}
	if en.Position > 0 {
		pos := en.Position
		p.Position = &pos
	}
	return p
}

// Shown is spool merge show --json: the entry, its whole audit trail and
// where each of its attempts' test output is.
type Shown struct {
	*Entry
	History []AuditStep  `json:"history"`
	Logs    []AttemptLog `json:"logs"`
}

// AttemptLog is where the train wrote one attempt's test output: a
// directory of its own per claim (RunDir), so a later attempt, a
// resubmission or entries renumbered by a merge of clones' logs never
// write over an earlier one.
type AttemptLog struct {
	Attempt int       `json:"attempt"` // 1, 2, … over the entry's whole life (resubmissions do not start again)
	Claim   string    `json:"claim"`   // the id of the merge.claimed event that began it
	At      time.Time `json:"at"`
	Path    string    `json:"path"`   // RunDir's test.log
	Exists  bool      `json:"exists"` // the file is here (the train of another clone writes in that clone)
}

// RunDir is the directory of the attempt that the claim event with id
// claim began, on the entry with ref, under runs (.git/spool/runs): both
// are event ids, which never repeat. "" when either is not plain hex (an
// event anyone could write names no other path).
func RunDir(runs, ref, claim string) string {
	if !hexID(ref) || !hexID(claim) {
		return ""
	}
	return filepath.Join(runs, "merge", ref, claim)
}

// TestLog is the test command's output file in a run directory.
const TestLog = "test.log"

func hexID(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// AttemptLogs lists the test output of every attempt in trail (the claims
// the fold applied), oldest first; Exists is left for the caller to fill.
func AttemptLogs(runs string, e *Entry, trail []AuditStep) []AttemptLog {
	logs := []AttemptLog{}
	for _, st := range trail {
		if st.Type != EvClaimed || st.Skipped != "" {
			continue
		}
		dir := RunDir(runs, e.Ref, st.Event)
		if dir == "" {
			continue
		}
		logs = append(logs, AttemptLog{Attempt: len(logs) + 1, Claim: st.Event, At: st.At, Path: filepath.Join(dir, TestLog)})
	}
	return logs
}
