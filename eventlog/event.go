// Package eventlog is spool's append-only log: JSON Lines under .spool/events/,
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

	"github.com/tidwall/gjson"
)

// Version is the envelope version this binary writes and understands.
const Version = 1

// Event is one line of the log. The field names are a public format.
type Event struct {
	V       int             `json:"v"`
	ID      string          `json:"id"`
	Writer  string          `json:"writer"`
	Seq     uint64          `json:"seq"`
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

// computeID derives the id from the content; seq is left out so that a merge
// driver may renumber a diverged writer file without changing ids, and the
// signature because it is made of the id's hash.
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

func decode(line []byte) (*Event, spans, error) {
	var sp spans
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if !gjson.ValidBytes(line) {
		return nil, sp, fmt.Errorf("%w: not valid JSON", ErrCorrupt)
	}
	if !utf8.Valid(line) {
		// Re-encoding would change such a line, and its id with it.
		return nil, sp, fmt.Errorf("%w: not valid UTF-8", ErrCorrupt)
	}
	e := &Event{}
	var seen uint16
	v := -1
	s := string(line)
	err := fieldsAt(s, func(key string, start, end int) error {
		raw := s[start:end]
		var err error
		switch key {
		case "v":
			seen |= 1
			var n uint64
			n, err = uintValue("v", raw)
			v = int(min(n, 1<<31))
		case "id":
			seen |= 2
			sp.idStart, sp.idEnd = start, end
			e.ID, err = stringValue("id", raw)
		case "writer":
			seen |= 4
			e.Writer, err = stringValue("writer", raw)
		case "seq":
			seen |= 8
			sp.seqStart, sp.seqEnd = start, end
			e.Seq, err = uintValue("seq", raw)
		case "lc":
			seen |= 16
			e.LC, err = uintValue("lc", raw)
		case "at":
			seen |= 32
			var t string
			if t, err = stringValue("at", raw); err == nil {
				if e.At, err = time.Parse(time.RFC3339Nano, t); err != nil {
					err = fmt.Errorf("%w: field at: %q is not an RFC 3339 time", ErrCorrupt, t)
				}
			}
		case "actor":
			e.Actor, err = stringValue("actor", raw)
		case "type":
			seen |= 64
			e.Type, err = stringValue("type", raw)
		case "subject":
			e.Subject, err = stringValue("subject", raw)
		case "idem":
			e.Idem, err = stringValue("idem", raw)
		case "data":
			if raw != "null" {
				e.Data = json.RawMessage(raw)
			}
		case "sig":
			if e.Sig, err = stringValue("sig", raw); err == nil {
				sp.sigStart, sp.sigEnd = start-len(sigKey), end
				if sp.sigStart < 0 || s[sp.sigStart:start] != sigKey {
					sp.sigStart = -1
				}
			}
		case "more":
			switch raw {
			case "true":
				e.More = true
			case "false":
			default:
				err = fmt.Errorf("%w: field more must be true or false", ErrCorrupt)
			}
		}
		return err
	})
	if err != nil {
		return nil, sp, err
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
