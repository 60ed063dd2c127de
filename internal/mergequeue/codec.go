package mergequeue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table"
)

// merge-queue.json is plain JSON, one entry per line (readable,
// diff-friendly), written by appending; the snapshot (snapshot.go) keeps
// the same lines as a table's records. Each is read by a scanner of its
// own: with 1,000 entries this is several times faster than reflection.
// The lines of ended entries are not read at all until something asks for
// one of them (State.thaw): the history grows with every entry ever
// queued, the queue does not.

// render renders merge-queue.json. An undecoded entry's line is what
// encoding it would give (the snapshot it comes from was written by this
// encoder: Spec.Version), so it is copied as it is.
func (s *State) render() []byte {
	s.loadCold()
	b := make([]byte, 0, 700*len(s.entries)+512)
	b = append(b, `{"frozen":`...)
	b = strconv.AppendBool(b, s.Frozen)
	b = field(b, "frozen_reason", s.FrozenReason)
	b = field(b, "frozen_by", s.FrozenBy)
	if s.FrozenAt != nil {
		b = timeField(b, "frozen_at", *s.FrozenAt)
	}
	b = intField(b, "pending_count", s.PendingCount)
	b = intField(b, "active_count", s.ActiveCount())
	b = intField(b, "applied", s.Applied)
	b = intField(b, "skipped", s.Skipped)
	b = append(b, `,"identities":`...)
	b = s.appendIdentities(b)
	b = append(b, `,"entries":[`...)
	for i, e := range s.entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if e == nil {
			b = append(b, s.cold[i]...)
			continue
		}
		b = append(b, lineOf(e)...)
	}
	if len(s.entries) > 0 {
		b = append(b, '\n')
	}
	return append(b, "]}\n"...)
}

// appendIdentities appends the identities as a JSON object, sorted by key.
func (s *State) appendIdentities(b []byte) []byte {
	if s.identitiesRaw != nil && len(s.identities) == 0 {
		return append(b, s.identitiesRaw...) // as read: what rendering them would give
	}
	ids := s.allIdentities()
	keys := make([]string, 0, len(ids))
	for k := range ids {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, ids[k])
	}
	return append(b, '}')
}

func (e *Entry) encode(b []byte) []byte {
	b = append(b, `{"entry_id":`...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = field(b, "status", string(e.Status))
	if e.Position > 0 { // only pending entries have one
		b = intField(b, "position", e.Position)
	}
	b = intField(b, "priority", e.Priority)
	b = field(b, "workspace", e.Workspace)
	b = field(b, "workspace_id", e.WorkspaceID)
	b = field(b, "legacy_writer", e.LegacyWriter)
	b = field(b, "worktree", e.Worktree)
	b = field(b, "branch", e.Branch)
	b = field(b, "change_id", e.ChangeID)
	b = field(b, "change_id_source", e.ChangeIDSource)
	b = field(b, "dedupe_key", e.DedupeKey)
	b = field(b, "entry_ref", e.Ref)
	b = field(b, "head_sha", e.HeadSHA)
	b = field(b, "tested_sha", e.TestedSHA)
	b = field(b, "tested_against_sha", e.TestedAgainstSHA)
	b = field(b, "target_from_sha", e.TargetFromSHA)
	b = field(b, "target", e.Target)
	b = field(b, "bead_id", e.BeadID)
	b = field(b, "owner", e.Owner)
	b = field(b, "workspace_state", string(e.WorkspaceState))
	b = intField(b, "attempts", e.Attempts)
	b = field(b, "runner", e.Runner)
	if e.LeaseUntil != nil {
		b = timeField(b, "lease_until", *e.LeaseUntil)
	}
	b = field(b, "scratch_dir", e.ScratchDir)
	b = field(b, "run_dir", e.RunDir)
	b = procField(b, "proc", e.Proc)
	b = procField(b, "holder", e.Holder)
	b = field(b, "last_error", e.LastError)
	b = field(b, "waiting", e.Waiting)
	if len(e.ConflictPaths) > 0 {
		b = append(b, `,"conflict_paths":[`...)
		for i, p := range e.ConflictPaths {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p)
		}
		b = append(b, ']')
	}
	if len(e.Conflicts) > 0 {
		b = append(b, `,"conflicts":[`...)
		for i, r := range e.Conflicts {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"event":`...)
			b = appendString(b, r.Event)
			b = field(b, "to", string(r.To))
			b = append(b, `,"reason":`...)
			b = appendString(b, r.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = timeField(b, "added_at", e.AddedAt)
	b = timeField(b, "updated_at", e.UpdatedAt)
	b = intField(b, "steps", e.Steps)
	st := e.LastStep
	// The last step's time is updated_at; the full steps are in the log.
	b = append(b, `,"last_step":{"n":`...)
	b = strconv.AppendInt(b, int64(st.N), 10)
	b = field(b, "actor", st.Actor)
	b = field(b, "type", st.Type)
	b = field(b, "from", string(st.From))
	b = field(b, "to", string(st.To))
	return append(b, "}}"...)
}

// procField appends ,"name":{"pid":…} unless p is nil.
func procField(b []byte, name string, p *ProcRecord) []byte {
	if p == nil {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, `":{"pid":`...)
	b = strconv.AppendInt(b, int64(p.PID), 10)
	b = intField(b, "pgid", p.PGID)
	b = append(b, `,"start":`...)
	b = strconv.AppendUint(b, p.Start, 10)
	b = field(b, "boot", p.Boot)
	b = field(b, "ns", p.NS)
	return append(b, '}')
}

// field appends ,"name":"value" unless value is empty.
func field(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

func intField(b []byte, name string, v int) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(v), 10)
}

func timeField(b []byte, name string, t time.Time) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':', '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendString quotes s as JSON without HTML escaping; plain printable
// ASCII is copied as is.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // as the log: people read these files
			enc.Encode(s)
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decodeLines decodes lines[k] into into[k] for every k of ks, the lines
// shared out among the CPUs; false when one does not read.
func decodeLines(lines [][]byte, ks []int, into []*Entry) bool {
	workers := min(runtime.GOMAXPROCS(0), 1+len(ks)/200)
	failed := make([]bool, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		fault.Go(func() {
			defer wg.Done()
			for j := w; j < len(ks); j += workers {
				e, ok := decodeLine(lines[ks[j]])
				if !ok {
					failed[w] = true
					return
				}
				into[ks[j]] = e
			}
		})
	}
	wg.Wait()
	return !slices.Contains(failed, true)
}

// decodeLine reads one entry's line.
func decodeLine(line []byte) (*Entry, bool) {
	e := &Entry{}
	if !fastEntry(line, e) {
		*e = Entry{}
		if json.Unmarshal(line, e) != nil {
			return nil, false
		}
	}
	e.LastStep.At = e.UpdatedAt
	// A snapshot of this Spec.Version was written by this encoder, so the
	// line is what encoding the entry again would give.
	e.encoded, e.encodedPos = line, e.Position
	return e, true
}

// thaw decodes the undecoded entry id and indexes it.
func (s *State) thaw(id int64) *Entry {
	line := s.line(id)
	e, ok := decodeLine(line)
	return s.thawed(id, e, ok, line)
}

// thawAll decodes every undecoded entry, as decode does the others.
func (s *State) thawAll() {
	s.loadCold()
	var ks []int
	for k, e := range s.entries {
		if e == nil {
			ks = append(ks, k)
		}
	}
	into := make([]*Entry, len(s.entries))
	ok := decodeLines(s.cold, ks, into)
	for _, k := range ks {
		s.thawed(int64(k)+1, into[k], ok && into[k] != nil, s.cold[k])
	}
}

// thawed puts e, decoded from line, the line of entry id, in its place.
func (s *State) thawed(id int64, e *Entry, ok bool, line []byte) *Entry {
	if !ok || e.ID != id || e.Status.Active() {
		// The record's checksum held: a crafted file, or a bug.
		panic(table.Corrupt(entryName(id), fmt.Errorf("its line does not read back: %.200s", line)))
	}
	ix := s.index()
	s.entries[id-1] = e
	if s.cold != nil {
		s.cold[id-1] = nil
	}
	if s.undecoded--; s.undecoded == 0 {
		s.cold, s.tbl, s.ended, s.endedRaw, s.endedIDs = nil, nil, endedIndex{}, "", nil
	}
	ix.byRef[e.Ref] = e
	if l := ix.latestByKey[e.DedupeKey]; l == nil || l.ID < e.ID {
		ix.latestByKey[e.DedupeKey] = e
	}
	return e
}

// identity is the change id remembered for an identity key (IdentityKey),
// looked for in the identities as the snapshot has them, undecoded, when
// the fold has not set it since: the key quoted as render writes it, then
// a colon, right after the brace or a comma. That quote is not escaped
// (no backslash before it), so it begins or ends a string; it does not end
// one, for after a closing quote comes a colon or a comma and then another
// quote, while the key's text is longer than one character and holds no
// quote unescaped; and it does not begin a value, which follows a colon.
// It begins a key, then, and the key is this one.
func (s *State) identity(key string) (string, bool) {
	if id, ok := s.identities[key]; ok || s.identitiesRaw == nil {
		return id, ok
	}
	quoted := append(appendString(nil, key), ':')
	if len(quoted) < 5 { // "k": or "": (a key the fold never makes)
		id, ok := s.allIdentities()[key]
		return id, ok
	}
	raw, at := s.identitiesRaw, 0
	for {
		i := bytes.Index(raw[at:], quoted)
		if i < 0 {
			return "", false
		}
		if at += i; at > 0 && (raw[at-1] == '{' || raw[at-1] == ',') {
			break
		}
		at++
	}
	v := raw[at+len(quoted):]
	end, escaped := 1, false
	for ; end < len(v) && v[end] != '"'; end++ {
		if v[end] == '\\' {
			end++
			escaped = true
		}
	}
	if len(v) == 0 || v[0] != '"' || end >= len(v) {
		panic(fmt.Sprintf("merge queue snapshot: the identity of %q does not read back", key))
	}
	if !escaped {
		return string(v[1:end]), true
	}
	var id string
	if json.Unmarshal(v[:end+1], &id) != nil {
		panic(fmt.Sprintf("merge queue snapshot: the identity of %q does not read back", key))
	}
	return id, true
}

// allIdentities decodes the snapshot's identities, if they are not yet,
// under those the fold set since, and returns them all.
func (s *State) allIdentities() map[string]string {
	if s.identitiesRaw != nil {
		all := map[string]string{}
		if json.Unmarshal(s.identitiesRaw, &all) != nil {
			panic("merge queue snapshot: the identities do not read back")
		}
		for k, id := range s.identities {
			all[k] = id
		}
		s.identities, s.identitiesRaw = all, nil
	}
	return s.identities
}

// AppendRow appends the entry as one row of `spool merge list --json`
// (the entry without its identity details and audit summary).
func (e *Entry) AppendRow(b []byte) []byte {
	b = append(b, `{"entry_id":`...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = append(b, `,"entry_ref":`...)
	b = appendString(b, e.Ref)
	b = append(b, `,"position":`...)
	if e.Position > 0 {
		b = strconv.AppendInt(b, int64(e.Position), 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, string(e.Status))
	b = intField(b, "priority", e.Priority)
	for _, kv := range [...][2]string{{"workspace", e.Workspace}, {"workspace_id", e.WorkspaceID}, {"branch", e.Branch}, {"head_sha", e.HeadSHA},
		{"dedupe_key", e.DedupeKey}, {"owner", e.Owner}} {
		b = append(b, ',', '"')
		b = append(b, kv[0]...)
		b = append(b, '"', ':')
		b = appendString(b, kv[1])
	}
	b = intField(b, "attempts", e.Attempts)
	b = field(b, "bead_id", e.BeadID)
	b = timeField(b, "added_at", e.AddedAt)
	b = field(b, "last_error", e.LastError)
	b = field(b, "waiting", e.Waiting)
	b = append(b, `,"workspace_state":`...)
	b = appendString(b, string(e.WorkspaceState))
	b = field(b, "conflict", e.Conflict())
	return append(b, '}')
}
