// Package eventlog is spool's append-only log: JSON Lines under .spool/events/,
// one file per writer, appended under a file lock and acknowledged after fsync.
package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"

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
}

// Draft is an event a command wants appended; the log fills in the rest.
type Draft struct {
	Type    string
	Subject string
	Idem    string
	Data    any // marshalled with encoding/json; json.RawMessage is kept as is
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

var typePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// ValidType reports whether t is a dotted lowercase event type such as "task.created".
func ValidType(t string) bool { return typePattern.MatchString(t) }

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

// computeID derives the id from the content; seq is left out so that a merge
// driver may renumber a diverged writer file without changing ids.
func (e *Event) computeID() (string, error) {
	c := *e
	c.ID, c.Seq = "", 0
	b, err := c.Encode()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// Upcaster turns an event of an older envelope version into the next version.
type Upcaster func(*Event) error

// upcasters[v] upgrades version v to v+1. Version 1 is the first: none yet.
var upcasters = map[int]Upcaster{}

// Decode parses one log line (with or without its trailing newline),
// upcasting older envelope versions.
func Decode(line []byte) (*Event, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if !gjson.ValidBytes(line) {
		return nil, fmt.Errorf("%w: not valid JSON", ErrCorrupt)
	}
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return nil, fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	e := &Event{}
	var seen uint16
	var err error
	root.ForEach(func(key, val gjson.Result) bool {
		switch key.Str {
		case "v":
			seen |= 1
			e.V, err = intField("v", val)
		case "id":
			seen |= 2
			e.ID, err = strField("id", val)
		case "writer":
			seen |= 4
			e.Writer, err = strField("writer", val)
		case "seq":
			seen |= 8
			e.Seq, err = uintField("seq", val)
		case "lc":
			seen |= 16
			e.LC, err = uintField("lc", val)
		case "at":
			seen |= 32
			var s string
			if s, err = strField("at", val); err == nil {
				if e.At, err = time.Parse(time.RFC3339Nano, s); err != nil {
					err = fmt.Errorf("%w: field at: %q is not an RFC 3339 time", ErrCorrupt, s)
				}
			}
		case "actor":
			e.Actor, err = strField("actor", val)
		case "type":
			seen |= 64
			e.Type, err = strField("type", val)
		case "subject":
			e.Subject, err = strField("subject", val)
		case "idem":
			e.Idem, err = strField("idem", val)
		case "data":
			if val.Type != gjson.Null {
				e.Data = json.RawMessage(val.Raw)
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if seen&1 == 0 {
		return nil, fmt.Errorf("%w: missing envelope version v", ErrCorrupt)
	}
	if e.V > Version {
		return nil, fmt.Errorf("%w: envelope version %d, this spool understands up to %d; upgrade spool", ErrNewerVersion, e.V, Version)
	}
	if e.V < 1 {
		return nil, fmt.Errorf("%w: envelope version %d", ErrCorrupt, e.V)
	}
	for e.V < Version {
		up, ok := upcasters[e.V]
		if !ok {
			return nil, fmt.Errorf("%w: no upcaster from envelope version %d", ErrCorrupt, e.V)
		}
		if err := up(e); err != nil {
			return nil, fmt.Errorf("upcast from version %d: %w", e.V, err)
		}
		e.V++
	}
	for _, f := range []struct {
		bit  uint16
		name string
	}{{2, "id"}, {4, "writer"}, {8, "seq"}, {16, "lc"}, {32, "at"}, {64, "type"}} {
		if seen&f.bit == 0 {
			return nil, fmt.Errorf("%w: missing field %s", ErrCorrupt, f.name)
		}
	}
	if e.ID == "" || e.Writer == "" || e.Type == "" || e.Seq == 0 || e.LC == 0 {
		return nil, fmt.Errorf("%w: id, writer, type, seq and lc must be set", ErrCorrupt)
	}
	return e, nil
}

func strField(name string, v gjson.Result) (string, error) {
	if v.Type != gjson.String {
		return "", fmt.Errorf("%w: field %s must be a string", ErrCorrupt, name)
	}
	return v.Str, nil
}

func uintField(name string, v gjson.Result) (uint64, error) {
	n, err := strconv.ParseUint(v.Raw, 10, 64)
	if v.Type != gjson.Number || err != nil {
		return 0, fmt.Errorf("%w: field %s must be a non-negative integer", ErrCorrupt, name)
	}
	return n, nil
}

func intField(name string, v gjson.Result) (int, error) {
	n, err := strconv.Atoi(v.Raw)
	if v.Type != gjson.Number || err != nil {
		return 0, fmt.Errorf("%w: field %s must be an integer", ErrCorrupt, name)
	}
	return n, nil
}
