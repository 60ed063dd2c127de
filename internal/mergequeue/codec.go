package mergequeue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

// The state is read by every merge command, so it has its own codec: plain
// JSON, one entry per line (readable, diff-friendly), written by appending
// and read by a scanner of its own. With 1,000 entries this is several
// times faster than reflection. The lines of ended entries are not decoded
// at all until something asks for one of them (State.thaw): the history
// grows with every entry ever queued, the queue does not.

// checksumTag begins the snapshot's last line: the CRC-32C of
// merge-queue.json, which is all of the snapshot before it. An ended
// entry's line is decoded long after the snapshot was read, when it can no
// longer be refused (and the projection rebuilt from the log), so the
// snapshot is checked whole as it is read.
const checksumTag = "crc32c "

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode renders the whole state: merge-queue.json, then the line with its
// checksum; the snapshot is these bytes, the public file their first
// publicLen.
func (s *State) encode() []byte {
	if s.encoded != nil {
		return s.encoded
	}
	b := s.render()
	s.publicLen = len(b)
	b = append(b, checksumTag...)
	b = fmt.Appendf(b, "%08x\n", crc32.Checksum(b[:s.publicLen], castagnoli))
	s.encoded = b
	return s.encoded
}

// render renders merge-queue.json. An undecoded entry's line is what
// encoding it would give (the snapshot it comes from was written by this
// encoder: Spec.Version), so it is copied as it is.
func (s *State) render() []byte {
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
	if s.identitiesRaw != nil && len(s.identities) == 0 {
		b = append(b, s.identitiesRaw...) // as read: what rendering them would give
	} else {
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
		b = append(b, '}')
	}
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
		if e.encoded == nil || e.encodedPos != e.Position {
			e.encoded, e.encodedPos = e.encode(nil), e.Position
		}
		b = append(b, e.encoded...)
	}
	if len(s.entries) > 0 {
		b = append(b, '\n')
	}
	return append(b, "]}\n"...)
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
	if p := e.Proc; p != nil {
		b = append(b, `,"proc":{"pid":`...)
		b = strconv.AppendInt(b, int64(p.PID), 10)
		b = intField(b, "pgid", p.PGID)
		b = append(b, `,"start":`...)
		b = strconv.AppendUint(b, p.Start, 10)
		b = field(b, "boot", p.Boot)
		b = append(b, '}')
	}
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

var errBadState = errors.New("merge queue state is not a JSON object")

// decode reads what encode wrote, one entry per line: the active entries'
// lines shared out among the CPUs, the ended ones kept as they are (see
// thaw). A line the fast reader does not take (escapes, non-ASCII) is read
// by encoding/json through the struct tags; a snapshot that is not what
// encode writes is refused, and the engine rebuilds it from the log.
func (s *State) decode(b []byte) error {
	b, ok := checked(b)
	if !ok {
		return errBadState
	}
	const mark = `,"entries":[`
	i := bytes.Index(b, []byte(mark))
	body, ok := bytes.CutSuffix(b[max(i, 0):], []byte("]}\n"))
	if i < 0 || !ok || bytes.Count(b[:i], []byte("\n")) > 0 {
		return errBadState
	}
	// The identities, as many as the branches ever queued without a
	// change id of their own, are kept as they are (see identity); the
	// rest of the first line is small.
	const idMark = `,"identities":`
	j := bytes.Index(b[:i], []byte(idMark))
	if j < 0 || !bytes.HasPrefix(b[j+len(idMark):i], []byte("{")) || b[i-1] != '}' {
		return errBadState
	}
	*s = State{}
	if err := json.Unmarshal(append(append([]byte(nil), b[:j]...), '}'), s); err != nil {
		return errBadState
	}
	s.identities, s.identitiesRaw = map[string]string{}, b[j+len(idMark):i]
	lines := bytes.Split(body[len(mark):], []byte("\n"))
	if len(lines[0]) == 0 {
		lines = lines[1:]
	}
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	s.entries = make([]*Entry, len(lines))
	var hot []int // the lines to decode now
	for k, line := range lines {
		line = bytes.TrimSuffix(line, []byte(","))
		lines[k] = line
		if ended(line, int64(k)+1) {
			s.undecoded++
		} else {
			hot = append(hot, k)
		}
	}
	if !decodeLines(lines, hot, s.entries) {
		return errBadState
	}
	if s.undecoded > 0 {
		for _, k := range hot {
			lines[k] = nil
		}
		s.cold = lines
	}
	s.reindex()
	return nil
}

// checked returns merge-queue.json from a snapshot whose checksum line
// matches it.
func checked(b []byte) ([]byte, bool) {
	const line = len(checksumTag) + 8 + 1
	if len(b) < line || b[len(b)-1] != '\n' || !bytes.HasPrefix(b[len(b)-line:], []byte(checksumTag)) {
		return nil, false
	}
	sum, err := strconv.ParseUint(string(b[len(b)-line+len(checksumTag):len(b)-1]), 16, 32)
	public := b[:len(b)-line]
	return public, err == nil && uint32(sum) == crc32.Checksum(public, castagnoli)
}

// ended reports whether line, as encode writes it, begins with the entry
// id and a terminal status: such an entry is left undecoded. Anything
// else is decoded at once, and refused then if it does not read.
func ended(line []byte, id int64) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"entry_id":`))
	if !ok {
		return false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if got, err := strconv.ParseInt(string(rest[:n]), 10, 64); err != nil || got != id || rest[0] == '0' {
		return false
	}
	rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"status":"`))
	if !ok {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	return end > 0 && Status(rest[:end]).Terminal()
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
	e, ok := decodeLine(s.cold[id-1])
	return s.thawed(id, e, ok)
}

// thawAll decodes every undecoded entry, as decode does the others.
func (s *State) thawAll() {
	var ks []int
	for k, e := range s.entries {
		if e == nil {
			ks = append(ks, k)
		}
	}
	into := make([]*Entry, len(s.entries))
	ok := decodeLines(s.cold, ks, into)
	for _, k := range ks {
		s.thawed(int64(k)+1, into[k], ok && into[k] != nil)
	}
}

// thawed puts e, decoded from the line of entry id, in its place.
func (s *State) thawed(id int64, e *Entry, ok bool) *Entry {
	if !ok || e.ID != id || e.Status.Active() {
		// The snapshot's checksum held, so encode wrote this line: a bug.
		panic(fmt.Sprintf("merge queue snapshot: the line of entry %d does not read back: %.200s", id, s.cold[id-1]))
	}
	ix := s.index()
	s.entries[id-1], s.cold[id-1] = e, nil
	if s.undecoded--; s.undecoded == 0 {
		s.cold, ix.coldByRef, ix.coldByKey = nil, nil, nil
	}
	ix.byRef[e.Ref] = e
	if l := ix.latestByKey[e.DedupeKey]; l == nil || l.ID < e.ID {
		ix.latestByKey[e.DedupeKey] = e
	}
	return e
}

// coldIDs returns the undecoded entries' ids by the value of a string
// field (the newest of equal values), kept in *ids: read from their lines
// the first time; nil when every entry is decoded.
func (s *State) coldIDs(name string, ids *map[string]int64) map[string]int64 {
	if s.undecoded == 0 || *ids != nil {
		return *ids
	}
	key := `,"` + name + `":`
	m := make(map[string]int64, s.undecoded)
	for i, line := range s.cold {
		if line == nil {
			continue
		}
		if v, ok := stringField(line, key); ok {
			m[v] = int64(i) + 1 // ids ascend: the last is the newest
		} else {
			s.thaw(int64(i) + 1) // escapes: indexed as a decoded entry
		}
	}
	if s.undecoded > 0 {
		*ids = m
	}
	return m
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

// refOf is the entry_ref of entry id, read from its line if it is undecoded.
func (s *State) refOf(id int64) string {
	if e := s.entries[id-1]; e != nil {
		return e.Ref
	}
	if ref, ok := stringField(s.cold[id-1], `,"entry_ref":`); ok {
		return ref
	}
	return s.thaw(id).Ref
}

// stringField reads the string value of key (`,"name":`) in a line encode
// wrote, false when it is missing or has escapes. Inside a JSON string
// every quote is escaped, so the first match is the key itself.
func stringField(line []byte, key string) (string, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 || len(line) < i+len(key)+2 || line[i+len(key)] != '"' {
		return "", false
	}
	v := line[i+len(key)+1:]
	end := bytes.IndexByte(v, '"')
	if end < 0 || bytes.IndexByte(v[:end], '\\') >= 0 {
		return "", false
	}
	return string(v[:end]), true
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
