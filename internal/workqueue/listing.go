package workqueue

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"time"

	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/table"
)

// A task's listing is its JSON as the CLI's lists print it, saved in its
// record when the snapshot is written. ready --json and task list --json
// at 100,000 tasks spent most of their time building each task's JSON
// value and encoding it; from the saved bytes an item is a copy.
//
// The listing holds only what the task itself holds: core is View's JSON
// without its closing line, tail what ListItem adds after it but the
// dependent count (the dependencies and their count), which other tasks
// change. A task read from a snapshot keeps the listing its record saved
// until an event changes it (applyTaskTo drops it); a time that turns
// its status (an expired lease) or bd's blocked status turns it off.

// listFormat is where cliout.WriteJSON writes a list's items.
var listFormat = jsonout.Format{Level: 1}

const (
	listClose     = "\n  }"
	dependentsKey = ",\n    \"dependent_count\": "
)

// appendListing appends t's listing to w as its record holds it: the
// view's length, the list item without its dependent count. A view is
// the item's start, the fields before the dependencies (a line with four
// spaces; a newline in a value is written \n). Both are "" when a field
// is one encoding/json writes (a time outside years 0 to 9999).
func appendListing(w *table.Enc, t *Task) {
	p := len(w.Buf)
	j := t.base()
	j.Dependencies = t.deps()
	b, ok := ListItemJSON{TaskJSON: j, DependencyCount: len(j.Dependencies)}.AppendJSON(w.Buf, listFormat)
	if !ok {
		w.Buf = w.Buf[:p]
		w.Str("")
		return
	}
	item := b[p:]
	item = item[:bytes.LastIndex(item, []byte(dependentsKey))]
	end := bytes.LastIndex(item, []byte(",\n    \"dependency_count\": "))
	if len(j.Dependencies) > 0 {
		end = bytes.LastIndex(item[:end], []byte(",\n    \"dependencies\": ["))
	}
	var n [binary.MaxVarintLen64]byte
	w.Buf = slices.Insert(b[:p+len(item)], p, n[:binary.PutUvarint(n[:], uint64(end))]...)
}

// splitListing reads what appendListing wrote, given whether its checksum
// matched; false for bytes it did not write.
func splitListing(s string, ok bool) (core, tail string, _ bool) {
	r := table.NewDec(s)
	core = r.Str()
	if !ok || r.Err() != nil {
		return "", "", false
	}
	return core, r.Rest(), true
}

// saved is t's saved listing when it says what View says now, bd's view
// (Beads) too when beads is set.
func (s *State) saved(t *Task, now time.Time, beads bool) (savedItem, bool) {
	if t.listCore == "" || s.EffectiveStatus(t, now) != t.Status ||
		beads && t.Status == StatusOpen && t.HasLabel(BlockedLabel) {
		return savedItem{}, false
	}
	return savedItem{core: t.listCore}, true
}

// savedItem is a list item written from a saved listing: View's JSON, or with
// the dependencies and the counts ListItem's.
type savedItem struct {
	core, tail string
	item       bool // ListItem's, with tail and dependents
	dependents int
}

// set makes v the item a listing yields and returns it as one, without
// an allocation per item: a list's writer is done with an item before it
// asks for the next.
func (v *savedItem) set(to savedItem) any {
	*v = to
	return v
}

// AppendJSON writes the saved bytes where a list's items go; false
// elsewhere, and encoding/json then writes MarshalJSON's.
func (v savedItem) AppendJSON(dst []byte, f jsonout.Format) ([]byte, bool) {
	if f != listFormat {
		return dst, false
	}
	dst = append(dst, v.core...)
	if v.item {
		dst = append(dst, v.tail...)
		dst = append(dst, dependentsKey...)
		dst = strconv.AppendInt(dst, int64(v.dependents), 10)
	}
	return append(dst, listClose...), true
}

// MarshalJSON returns the saved JSON, which encoding/json compacts or
// indents as its encoder is set.
func (v savedItem) MarshalJSON() ([]byte, error) {
	b, _ := v.AppendJSON(nil, listFormat)
	return b, nil
}

// ViewsJSON is View of each task, for cliout.WriteJSON: bd's (Beads) when
// beads is set. A task's saved listing is its item when it holds.
func (s *State) ViewsJSON(ts []*Task, p Policy, now time.Time, beads bool) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		if v, ok := s.saved(t, now, beads); ok {
			out[i] = v
		} else if beads {
			out[i] = Beads(s.View(t, p, now))
		} else {
			out[i] = s.View(t, p, now)
		}
	}
	return out
}

// ListItemsJSON is ListItem of each task, for cliout.WriteJSON, as
// ViewsJSON.
func (s *State) ListItemsJSON(ts []*Task, p Policy, now time.Time) []any {
	counts := s.DependentCounts()
	out := make([]any, len(ts))
	for i, t := range ts {
		if v, ok := s.saved(t, now, false); ok {
			v.tail, v.item, v.dependents = t.listTail, true, counts[t.ID]
			out[i] = v
		} else {
			out[i] = s.ListItem(t, p, now, counts)
		}
	}
	return out
}
