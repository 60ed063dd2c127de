package eventlog

// The decoder as it was before it read lines in place (commit 0c27cb5):
// the reference FuzzDecodeMatchesReference holds the hot path to.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// fieldsAtRef walks the members of a top-level JSON object that gjson.Valid has
// already accepted, calling fn with each key and the byte range of its raw
// value. It is the replay hot path: one pass, no float parsing, no
// allocation for plain keys.
func fieldsAtRef(s string, fn func(key string, start, end int) error) error {
	i := skipSpaceRef(s, 0)
	if i >= len(s) || s[i] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	i = skipSpaceRef(s, i+1)
	if i < len(s) && s[i] == '}' {
		return nil
	}
	for i < len(s) {
		end := skipStringRef(s, i)
		key := s[i:end]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unquoteRef(key)
		} else {
			key = key[1 : len(key)-1]
		}
		i = skipSpaceRef(s, end)
		i = skipSpaceRef(s, i+1) // ':'
		end = skipValueRef(s, i)
		if err := fn(key, i, end); err != nil {
			return err
		}
		i = skipSpaceRef(s, end)
		if i >= len(s) || s[i] == '}' {
			return nil
		}
		i = skipSpaceRef(s, i+1) // ','
	}
	return nil
}

func skipSpaceRef(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipStringRef returns the index after the string starting at s[i] == '"'.
func skipStringRef(s string, i int) int {
	for j := i + 1; j < len(s); {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s)
		}
		j += k
		// The quote ends the string unless an odd run of backslashes escapes it.
		n := 0
		for b := j - 1; b > i && s[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(s)
}

// skipValueRef returns the index after the value starting at s[i].
func skipValueRef(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipStringRef(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = skipStringRef(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	j := i
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '\r' {
		j++
	}
	return j
}

// unquoteRef decodes a JSON string literal with escapes (rare in keys and values).
func unquoteRef(raw string) string {
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		return raw
	}
	return s
}

// stringValueRef decodes raw as a JSON string.
func stringValueRef(name, raw string) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", fmt.Errorf("%w: field %s must be a string", ErrCorrupt, name)
	}
	if strings.IndexByte(raw, '\\') >= 0 {
		return unquoteRef(raw), nil
	}
	return raw[1 : len(raw)-1], nil
}

// uintValueRef decodes raw as a non-negative JSON integer.
func uintValueRef(name, raw string) (uint64, error) {
	if raw == "" || len(raw) > 20 {
		return 0, fmt.Errorf("%w: field %s must be a non-negative integer", ErrCorrupt, name)
	}
	var n uint64
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if c < '0' || c > '9' || (k == 0 && c == '0' && len(raw) > 1) {
			return 0, fmt.Errorf("%w: field %s must be a non-negative integer", ErrCorrupt, name)
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, fmt.Errorf("%w: field %s is too large", ErrCorrupt, name)
		}
		n = n*10 + d
	}
	return n, nil
}
func decodeRef(line []byte) (*Event, spans, error) {
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
	err := fieldsAtRef(s, func(key string, start, end int) error {
		raw := s[start:end]
		var err error
		switch key {
		case "v":
			seen |= 1
			var n uint64
			n, err = uintValueRef("v", raw)
			v = int(min(n, 1<<31))
		case "id":
			seen |= 2
			sp.idStart, sp.idEnd = start, end
			e.ID, err = stringValueRef("id", raw)
		case "writer":
			seen |= 4
			e.Writer, err = stringValueRef("writer", raw)
		case "seq":
			seen |= 8
			sp.seqStart, sp.seqEnd = start, end
			e.Seq, err = uintValueRef("seq", raw)
		case "prev":
			e.Prev, err = stringValueRef("prev", raw)
		case "lc":
			seen |= 16
			e.LC, err = uintValueRef("lc", raw)
		case "at":
			seen |= 32
			var t string
			if t, err = stringValueRef("at", raw); err == nil {
				if e.At, err = time.Parse(time.RFC3339Nano, t); err != nil {
					err = fmt.Errorf("%w: field at: %q is not an RFC 3339 time", ErrCorrupt, t)
				}
			}
		case "actor":
			e.Actor, err = stringValueRef("actor", raw)
		case "type":
			seen |= 64
			e.Type, err = stringValueRef("type", raw)
		case "subject":
			e.Subject, err = stringValueRef("subject", raw)
		case "idem":
			e.Idem, err = stringValueRef("idem", raw)
		case "data":
			if raw != "null" {
				e.Data = json.RawMessage(raw)
			}
		case "sig":
			if e.Sig, err = stringValueRef("sig", raw); err == nil {
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

// FuzzDecodeMatchesReference holds decode, with and without a decoder that
// interns, to the reference: the same event (time included, to the
// location), the same spans, the same error.
func FuzzDecodeMatchesReference(f *testing.F) {
	for _, line := range decodeSeeds {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want, wantSp, wantErr := decodeRef(line)
		for _, d := range []*decoder{nil, newDecoder("w"), newDecoder("w1")} {
			got, gotSp, gotErr := d.decode(line)
			switch {
			case (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error():
				t.Fatalf("%q: error %v, want %v", line, gotErr, wantErr)
			case gotErr != nil:
				if got != nil {
					t.Fatal("an error with an event")
				}
				continue
			case !reflect.DeepEqual(got, want) || want.At.Location() == time.UTC && got.At != want.At:
				t.Fatalf("%q:\n got %#v\nwant %#v", line, got, want)
			case gotSp != wantSp:
				t.Fatalf("%q: spans %+v, want %+v", line, gotSp, wantSp)
			}
		}
	})
}

var decodeSeeds = []string{
	validLine,
	validLine + "\n",
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00+05:30","type":"a.b","data":{ "x" : [ 1 , 2 ] }}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","subject":"\u00e9\ud83d\ude00\n","data":"<&>"}`,
	`{"v":1,"id":"a\"b","writer":"w\u0031","seq":1,"lc":1,"at":"2026-01-01T00:00:00.5Z","actor":"\u0061","type":"a.b","idem":"i\\","sig":"s\/"}`,
	`{"v":1,"v":2,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","id":"b","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","data":{"a":1},"data":null}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","more":true,"sig":"U1NIU0lH"}`,
	`{"v":1,"sig":"x","id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","sig":1}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-02-30T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T24:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:60Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00.Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00.1234567891Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01t00:00:00z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"+026-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2024-02-29T23:59:59.999999999Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00,5Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"0000-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":7,"type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","more":1}`,
	`{"v":1,"id":"a","writer":"w","seq":2,"prev":"0123456789abcdef01234567","lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":2,"prev":"","lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"id":"a","writer":"w","seq":2,"prev":null,"lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b"}`,
	`{"v":1,"prev":"p\u0041","id":"a","writer":"w","seq":2,"lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b","prev":"q"}`,
	`{"v":2}`,
	`{"v":0}`,
	`{}`,
	`[]`,
	`null`,
	"{\"v\":1,\"id\":\"\xff\",\"writer\":\"w\",\"seq\":1,\"lc\":1,\"at\":\"2026-01-01T00:00:00Z\",\"type\":\"a.b\"}",
	`{"v":1,"id":"a","writer":"w","seq":18446744073709551615,"lc":1,"at":"9999-12-31T23:59:59.999999999Z","type":"a.b"}`,
}

// TestDecodeMatchesReference runs the seeds without -fuzz, and every line
// of a generated log, interned, against the reference.
func TestDecodeMatchesReference(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir, "w", 2000, 1, 1); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "w"+Ext))
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder("w")
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		want, wantSp, _ := decodeRef(line)
		got, gotSp, err := d.decode(line)
		if err != nil || !reflect.DeepEqual(got, want) || got.At != want.At || gotSp != wantSp { // all UTC
			t.Fatalf("%q: got %+v %v, want %+v", line, got, err, want)
		}
	}
}

// TestDecodedEventsHoldNoLine: an event's strings do not share the line's
// bytes (a projection keeping a task id must not keep its whole line), and
// what repeats (writer, actor, type) is shared from event to event.
func TestDecodedEventsHoldNoLine(t *testing.T) {
	d := newDecoder("w1")
	line := []byte(validLine + "\n")
	e1, _, err := d.decode(line)
	if err != nil {
		t.Fatal(err)
	}
	copy(line, bytes.Repeat([]byte{'#'}, len(line))) // the reader's buffer, reused
	want, _ := Decode([]byte(validLine))
	if !reflect.DeepEqual(e1, want) {
		t.Fatalf("the event changed with the line it was read from:\n%+v\n%+v", e1, want)
	}
	e2, _, err := d.decode([]byte(validLine))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{e1.Writer, e2.Writer}, {e1.Actor, e2.Actor}, {e1.Type, e2.Type}} {
		if unsafe.StringData(p[0]) != unsafe.StringData(p[1]) {
			t.Errorf("%q is not shared between events", p[0])
		}
	}
	if unsafe.StringData(e1.Subject) == unsafe.StringData(e2.Subject) {
		t.Error("subjects are interned: they are as many as the tasks")
	}
	line = []byte(validLine)
	allocs := testing.AllocsPerRun(100, func() { d.decode(line) })
	if allocs > 3 { // the event, its strings, its data
		t.Errorf("decode allocates %v times a line, want at most 3", allocs)
	}
}
