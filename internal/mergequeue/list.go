package mergequeue

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Listed is what spool merge list shows: the pending entries in queue
// order, then the other active ones, and with all the ended ones too (the
// only listing that decodes them).
//
// The pending entries are in o's order (OrderAt: aging counted), each a
// copy whose position is the one in o.
func (q *State) ListedIn(all bool, o Order) []*Entry {
	entries := make([]*Entry, 0, len(o.Queue))
	for _, en := range o.Queue {
		entries = append(entries, o.Standing(en))
	}
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
func (q *State) ListJSONIn(entries []*Entry, o Order) []byte {
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
		row := en.AppendRow(b[:0])
		if st, ok := o.Of(en); ok && en.Status == Pending {
			row = row[:len(row)-1] // the closing brace: the standing's fields go before it
			row = append(row, `,"effective_priority":`...)
			row = strconv.AppendInt(row, int64(st.Effective), 10)
			row = field(row, "aging", st.Aging(en.Priority))
			row = append(row, '}')
		}
		buf.Write(row)
	}
	if len(entries) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("]}\n")
	return buf.Bytes()
}

// Listed is ListedIn without aging: the positions the projection keeps.
// Commands show ListedIn with their Order (the service's Order).
func (q *State) Listed(all bool) []*Entry { return q.ListedIn(all, q.OrderAt(time.Time{}, 0)) }

// ListJSON is ListJSONIn without the standing's fields.
func (q *State) ListJSON(entries []*Entry) []byte { return q.ListJSONIn(entries, Order{}) }

// Placed is PlacedIn without aging: the position the projection keeps.
func (q *State) Placed(en *Entry) Placed { return q.PlacedIn(en, q.OrderAt(time.Time{}, 0)) }

// Placed is where an entry stands after a change (merge cancel, retry,
// position --json); Position is null when it is not pending.
type Placed struct {
	EntryID           int64  `json:"entry_id"`
	EntryRef          string `json:"entry_ref"`
	PendingCount      int    `json:"pending_count"`
	Position          *int   `json:"position"`
	Status            Status `json:"status"`
	EffectivePriority *int   `json:"effective_priority,omitempty"` // pending: the priority after aging (OrderAt)
	Aging             string `json:"aging,omitempty"`              // why it differs from the entry's own, e.g. "P4→P3 aged 7d"
}

// Shown is spool merge show --json: the entry, its whole audit trail and
// where each of its attempts' test output is.
type Shown struct {
	*Entry
	EffectivePriority *int         `json:"effective_priority,omitempty"` // pending: the priority after aging (OrderAt)
	Aging             string       `json:"aging,omitempty"`              // why it differs from the entry's own, e.g. "P4→P3 aged 7d"
	History           []AuditStep  `json:"history"`
	Logs              []AttemptLog `json:"logs"`
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
