// Package eventlog is spool's append-only log: JSON Lines under .git/spool/events/,
// one file per writer, appended under a file lock and acknowledged after fsync.
package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"time"
	"unicode/utf8"
)

// Version is the envelope version this binary writes and understands.
const Version = 1

// Event is one line of the log. The field names are a public format.
type Event struct {
	V      int    `json:"v"`
	ID     string `json:"id"`
	Writer string `json:"writer"`
	Seq    uint64 `json:"seq"`
	// Prev is the id of the writer's event before this one ("" for its
	// first): part of the content, so an id, and a signature, pin the
	// event's place in its writer's history (a hash chain per writer).
	// Lines written before spool chained its events have none.
	Prev    string          `json:"prev,omitempty"`
	LC      uint64          `json:"lc"`
	At      time.Time       `json:"at"`
	Actor   string          `json:"actor"`
	Type    string          `json:"type"`
	Subject string          `json:"subject,omitempty"`
	Idem    string          `json:"idem,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
	// More is set on every event of a multi-event append but the last: a
	// batch is all or nothing, and a file ending in More is an unfinished one.
	More bool `json:"more,omitempty"`
	// Sig is the signature of the content hash (Options.Signer). It is not
	// part of the content, so signing leaves the id as it was.
	Sig string `json:"sig,omitempty"`
}

// Draft is an event a command wants appended; the log fills in the rest.
type Draft struct {
	Type    string
	Subject string
	Idem    string
	Data    any // marshalled with encoding/json; json.RawMessage is kept as is
}

// Event is the draft as an event at at by actor, without the log's
// position: what a decision folds to see the state after its own drafts.
func (d Draft) Event(actor string, at time.Time) (*Event, error) {
	data, err := json.Marshal(d.Data)
	if err != nil {
		return nil, err
	}
	return &Event{Type: d.Type, Subject: d.Subject, Actor: actor, At: at, Data: data}, nil
}

// Before reports whether e sorts before o in the total replay order (lc, writer, seq).
func (e *Event) Before(o *Event) bool {
	if e.LC != o.LC {
		return e.LC < o.LC
	}
	if e.Writer != o.Writer {
		return e.Writer < o.Writer
	}
	return e.Seq < o.Seq
}

// ValidType reports whether t is a dotted lowercase event type such as
// "task.created": two or more words of [a-z][a-z0-9_]* joined by dots.
func ValidType(t string) bool {
	words := strings.Split(t, ".")
	if len(words) < 2 {
		return false
	}
	for _, w := range words {
		if w == "" || w[0] < 'a' || w[0] > 'z' {
			return false
		}
		for i := 1; i < len(w); i++ {
			if c := w[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Encode renders e as one log line ending in '\n', keys in envelope order.
func (e *Event) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the log is read by people: keep <, > and & as they are
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return buf.Bytes(), nil
}

// ContentID is the id e's content hashes to (what Append sets as e.ID).
func (e *Event) ContentID() (string, error) { return e.computeID() }

// ContentHash is the SHA-256 of e's content: its id is the first 12 bytes
// in hex, and a signature covers all 32.
func (e *Event) ContentHash() ([sha256.Size]byte, error) {
	c := *e
	c.ID, c.Seq, c.Sig = "", 0, ""
	b, err := c.Encode()
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// computeID derives the id from the content. The signature is left out
// because it is made of the id's hash, and seq so that the merge driver may
// renumber an unchained file (lines without prev: the old layout) without
// changing ids; prev is in, and it pins a chained line's place, and so its
// seq, as well as seq would.
func (e *Event) computeID() (string, error) {
	sum, err := e.ContentHash()
	if err != nil {
		return "", err
	}
	return idOf(sum[:]), nil
}

// idOf is the id of a content hash.
func idOf(sum []byte) string { return hex.EncodeToString(sum[:12]) }

// Upcaster turns an event of an older envelope version into the next version.
type Upcaster func(*Event) error

// upcasters[v] upgrades version v to v+1. Version 1 is the first: none yet.
var upcasters = map[int]Upcaster{}

// Decode parses one log line (with or without its trailing newline),
// upcasting older envelope versions.
func Decode(line []byte) (*Event, error) {
	e, _, err := decode(line)
	return e, err
}

// spans are where the id and seq values and the sig member sit in a line:
// enough to hash the line as computeID would without encoding the event
// again. sigStart is the comma before "sig", -1 when the member is not
// written as Encode writes it.
type spans struct{ idStart, idEnd, seqStart, seqEnd, sigStart, sigEnd int }

// sigKey is what precedes the sig value in a line Encode wrote.
const sigKey = `,"sig":`

func decode(line []byte) (*Event, spans, error) { return (*decoder)(nil).decode(line) }

// decoder decodes the lines of one reader. An event it returns holds no
// bytes of its line: the strings that repeat from line to line (writer,
// actor, type) are interned, the others are copied into one small string,
// and data into a slice of its own, so a projection that keeps a task's id
// or a comment's author keeps a few bytes, not the line it came from. A nil
// decoder interns nothing.
type decoder struct {
	writer  string            // the file's writer: its lines' writer field, shared
	intern  map[string]string // actors and types seen, at most maxInterned
	members []member          // reused from line to line
}

// maxInterned bounds a decoder's interned strings (each at most maxInternLen
// bytes): a log with more distinct actors or types than that is decoded
// correctly, only with more allocation.
const maxInterned, maxInternLen = 4096, 256

func newDecoder(writer string) *decoder {
	return &decoder{writer: writer, intern: map[string]string{}}
}

// str is b as a string, interned when d keeps strings.
func (d *decoder) str(b []byte) string {
	if d == nil {
		return string(b)
	}
	if s, ok := d.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.intern) < maxInterned && len(b) <= maxInternLen {
		d.intern[s] = s
	}
	return s
}

// field is where a member's raw value sits in the line; set is false when
// the line has no such member.
type field struct {
	start, end int
	set        bool
}

func (d *decoder) decode(line []byte) (*Event, spans, error) {
	var sp spans
	line = bytes.TrimSuffix(line, []byte{'\n'})
	var buf []member
	if d != nil {
		buf = d.members[:0]
	}
	ms, valid, object := members(line, buf)
	if d != nil {
		d.members = ms[:0] // grown, for the next line
	}
	if !valid {
		return nil, sp, fmt.Errorf("%w: not valid JSON", ErrCorrupt)
	}
	if !utf8.Valid(line) {
		// Re-encoding would change such a line, and its id with it.
		return nil, sp, fmt.Errorf("%w: not valid UTF-8", ErrCorrupt)
	}
	if !object {
		return nil, sp, fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	e := &Event{}
	var seen uint16
	v := -1
	// Strings other than the interned ones are gathered here and copied
	// once, after the walk: id, subject, idem, sig and prev, in that order.
	var id, subject, idem, sig, prev field
	var data []byte
	for _, m := range ms {
		key := line[m.keyStart+1 : m.keyEnd-1]
		if m.escaped {
			key = []byte(unquote(line[m.keyStart:m.keyEnd]))
		}
		start, end := m.valStart, m.valEnd
		raw := line[start:end]
		var err error
		switch string(key) {
		case "v":
			seen |= 1
			var n uint64
			n, err = uintValue("v", raw)
			v = int(min(n, 1<<31))
		case "id":
			seen |= 2
			sp.idStart, sp.idEnd = start, end
			id, err = stringField("id", raw, start, end)
		case "writer":
			seen |= 4
			var in []byte
			var esc bool
			switch in, esc, err = stringRaw("writer", raw); {
			case err != nil:
			case esc:
				e.Writer = unquote(raw)
			case d != nil && string(in) == d.writer:
				e.Writer = d.writer
			default:
				e.Writer = d.str(in)
			}
		case "seq":
			seen |= 8
			sp.seqStart, sp.seqEnd = start, end
			e.Seq, err = uintValue("seq", raw)
		case "prev":
			prev, err = stringField("prev", raw, start, end)
		case "lc":
			seen |= 16
			e.LC, err = uintValue("lc", raw)
		case "at":
			seen |= 32
			e.At, err = timeValue(raw)
		case "actor":
			e.Actor, err = d.stringValue("actor", raw)
		case "type":
			seen |= 64
			e.Type, err = d.stringValue("type", raw)
		case "subject":
			subject, err = stringField("subject", raw, start, end)
		case "idem":
			idem, err = stringField("idem", raw, start, end)
		case "data":
			if string(raw) != "null" {
				data = raw
			}
		case "sig":
			if sig, err = stringField("sig", raw, start, end); err == nil {
				sp.sigStart, sp.sigEnd = start-len(sigKey), end
				if sp.sigStart < 0 || string(line[sp.sigStart:start]) != sigKey {
					sp.sigStart = -1
				}
			}
		case "more":
			switch string(raw) {
			case "true":
				e.More = true
			case "false":
			default:
				err = fmt.Errorf("%w: field more must be true or false", ErrCorrupt)
			}
		}
		if err != nil {
			return nil, sp, err
		}
	}
	if seen&1 == 0 {
		return nil, sp, fmt.Errorf("%w: missing envelope version v", ErrCorrupt)
	}
	if v > Version {
		return nil, sp, fmt.Errorf("%w: envelope version %d, this spool understands up to %d; upgrade spool", ErrNewerVersion, v, Version)
	}
	if v < 1 {
		return nil, sp, fmt.Errorf("%w: envelope version %d", ErrCorrupt, v)
	}
	setStrings(line, []*string{&e.ID, &e.Subject, &e.Idem, &e.Sig, &e.Prev}, []field{id, subject, idem, sig, prev})
	if data != nil {
		e.Data = json.RawMessage(bytes.Clone(data))
	}
	e.V = v
	for e.V < Version {
		up, ok := upcasters[e.V]
		if !ok {
			return nil, sp, fmt.Errorf("%w: no upcaster from envelope version %d", ErrCorrupt, e.V)
		}
		if err := up(e); err != nil {
			return nil, sp, fmt.Errorf("upcast from version %d: %w", e.V, err)
		}
		e.V++
		sp = spans{} // an upcast line is not what this version would write
	}
	for _, f := range []struct {
		bit  uint16
		name string
	}{{2, "id"}, {4, "writer"}, {8, "seq"}, {16, "lc"}, {32, "at"}, {64, "type"}} {
		if seen&f.bit == 0 {
			return nil, sp, fmt.Errorf("%w: missing field %s", ErrCorrupt, f.name)
		}
	}
	if e.ID == "" || e.Writer == "" || e.Type == "" || e.Seq == 0 || e.LC == 0 {
		return nil, sp, fmt.Errorf("%w: id, writer, type, seq and lc must be set", ErrCorrupt)
	}
	return e, sp, nil
}

// stringValue decodes raw as a JSON string, interned.
func (d *decoder) stringValue(name string, raw []byte) (string, error) {
	inner, esc, err := stringRaw(name, raw)
	switch {
	case err != nil:
		return "", err
	case esc:
		return unquote(raw), nil
	}
	return d.str(inner), nil
}

// stringField checks that raw, at [start, end) of the line, is a JSON string.
func stringField(name string, raw []byte, start, end int) (field, error) {
	if _, _, err := stringRaw(name, raw); err != nil {
		return field{}, err
	}
	return field{start: start, end: end, set: true}, nil
}

// setStrings sets each *dst to the string at fs[i] of line, copying all
// those without escapes into one new string (one allocation, not one each).
func setStrings(line []byte, dst []*string, fs []field) {
	n := 0
	for _, f := range fs {
		if f.set {
			n += f.end - f.start - 2
		}
	}
	var b strings.Builder
	b.Grow(n)
	type span struct{ from, to int }
	var at [5]span
	for i, f := range fs {
		if !f.set {
			continue
		}
		raw := line[f.start:f.end]
		if bytes.IndexByte(raw, '\\') >= 0 {
			*dst[i] = unquote(raw)
			at[i] = span{-1, -1}
			continue
		}
		at[i].from = b.Len()
		b.Write(raw[1 : len(raw)-1])
		at[i].to = b.Len()
	}
	all := b.String()
	for i, f := range fs {
		if f.set && at[i].from >= 0 {
			*dst[i] = all[at[i].from:at[i].to]
		}
	}
}

// timeValue decodes raw as an RFC 3339 time. The form Encode writes (UTC,
// "Z", up to nine digits of fraction) is read directly, without a copy of
// the text; any other is left to time.Parse.
func timeValue(raw []byte) (time.Time, error) {
	inner, esc, err := stringRaw("at", raw)
	if err != nil {
		return time.Time{}, err
	}
	if !esc {
		if t, ok := parseUTC(inner); ok {
			return t, nil
		}
	}
	s := string(inner)
	if esc {
		s = unquote(raw)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: field at: %q is not an RFC 3339 time", ErrCorrupt, s)
	}
	return t, nil
}

// parseUTC reads YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z as time.Parse would; ok is
// false for anything else, out of range values included.
func parseUTC(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[len(b)-1] != 'Z' || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(b []byte) (int, bool) {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, false
	}
	nsec := 0
	switch frac := b[19 : len(b)-1]; {
	case len(frac) == 0:
	case len(frac) < 2 || len(frac) > 10 || frac[0] != '.':
		return time.Time{}, false
	default:
		n, ok := num(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	if month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // the 31st of a 30-day month, say
		return time.Time{}, false
	}
	return t, true
}
