package mergequeue

import (
	"bytes"
	"encoding/json"
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

// Shown is spool merge show --json: the entry and its whole audit trail.
type Shown struct {
	*Entry
	History []AuditStep `json:"history"`
}
