package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// validLine is a well-formed v1 line; tests derive broken variants from it.
const validLine = `{"v":1,"id":"0123456789abcdef01234567","writer":"w1","seq":3,"lc":7,"at":"2026-01-02T03:04:05.123456789Z","actor":"ada@example.com","type":"task.created","subject":"T-1","idem":"k1","data":{"title":"x"}}`

// withField returns validLine with key set to the raw JSON value raw
// (or removed when raw is "").
func withField(t *testing.T, key, raw string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(validLine), &m); err != nil {
		t.Fatal(err)
	}
	if raw == "" {
		delete(m, key)
	} else {
		m[key] = json.RawMessage(raw)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeValid(t *testing.T) {
	e, err := Decode([]byte(validLine + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Event{V: 1, ID: "0123456789abcdef01234567", Writer: "w1", Seq: 3, LC: 7,
		At:    time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		Actor: "ada@example.com", Type: "task.created", Subject: "T-1", Idem: "k1",
		Data: json.RawMessage(`{"title":"x"}`)}
	if e.V != want.V || e.ID != want.ID || e.Writer != want.Writer || e.Seq != want.Seq || e.LC != want.LC ||
		!e.At.Equal(want.At) || e.Actor != want.Actor || e.Type != want.Type || e.Subject != want.Subject ||
		e.Idem != want.Idem || !bytes.Equal(e.Data, want.Data) {
		t.Fatalf("Decode = %+v\nwant %+v", e, want)
	}
	// Without the trailing newline too.
	if _, err := Decode([]byte(validLine)); err != nil {
		t.Fatalf("without newline: %v", err)
	}
}

func TestDecodeOptionalFields(t *testing.T) {
	for _, key := range []string{"actor", "subject", "idem", "data"} {
		t.Run(key, func(t *testing.T) {
			e, err := Decode([]byte(withField(t, key, "")))
			if err != nil {
				t.Fatalf("without %s: %v", key, err)
			}
			switch key {
			case "actor":
				if e.Actor != "" {
					t.Errorf("actor = %q", e.Actor)
				}
			case "data":
				if e.Data != nil {
					t.Errorf("data = %s", e.Data)
				}
			}
		})
	}
	e, err := Decode([]byte(withField(t, "data", "null")))
	if err != nil || e.Data != nil {
		t.Fatalf("data null: %v, %s", err, e.Data)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		line string
		want error
		msg  string // substring of the error
	}{
		{"empty", ``, ErrCorrupt, "not valid JSON"},
		{"garbage", `hello`, ErrCorrupt, "not valid JSON"},
		{"truncated", validLine[:len(validLine)/2], ErrCorrupt, "not valid JSON"},
		{"array", `[1,2]`, ErrCorrupt, "not a JSON object"},
		{"string", `"x"`, ErrCorrupt, "not a JSON object"},
		{"two values", validLine + validLine, ErrCorrupt, "not valid JSON"},
		{"missing v", withField(t, "v", ""), ErrCorrupt, "missing envelope version"},
		{"missing id", withField(t, "id", ""), ErrCorrupt, "missing field id"},
		{"missing writer", withField(t, "writer", ""), ErrCorrupt, "missing field writer"},
		{"missing seq", withField(t, "seq", ""), ErrCorrupt, "missing field seq"},
		{"missing lc", withField(t, "lc", ""), ErrCorrupt, "missing field lc"},
		{"missing at", withField(t, "at", ""), ErrCorrupt, "missing field at"},
		{"missing type", withField(t, "type", ""), ErrCorrupt, "missing field type"},
		{"v string", withField(t, "v", `"1"`), ErrCorrupt, "field v must be a non-negative integer"},
		{"v float", withField(t, "v", `1.5`), ErrCorrupt, "field v must be a non-negative integer"},
		{"v zero", withField(t, "v", `0`), ErrCorrupt, "envelope version 0"},
		{"v negative", withField(t, "v", `-1`), ErrCorrupt, "field v must be a non-negative integer"},
		{"v newer", withField(t, "v", `2`), ErrNewerVersion, "envelope version 2"},
		{"v much newer", withField(t, "v", `99`), ErrNewerVersion, "upgrade spool"},
		{"id number", withField(t, "id", `12`), ErrCorrupt, "field id must be a string"},
		{"id empty", withField(t, "id", `""`), ErrCorrupt, "must be set"},
		{"writer null", withField(t, "writer", `null`), ErrCorrupt, "field writer must be a string"},
		{"writer empty", withField(t, "writer", `""`), ErrCorrupt, "must be set"},
		{"seq string", withField(t, "seq", `"3"`), ErrCorrupt, "field seq must be a non-negative integer"},
		{"seq negative", withField(t, "seq", `-3`), ErrCorrupt, "field seq must be a non-negative integer"},
		{"seq float", withField(t, "seq", `3.0`), ErrCorrupt, "field seq must be a non-negative integer"},
		{"seq exponent", withField(t, "seq", `3e2`), ErrCorrupt, "field seq must be a non-negative integer"},
		{"seq overflow", withField(t, "seq", `18446744073709551616`), ErrCorrupt, "field seq is too large"},
		{"seq zero", withField(t, "seq", `0`), ErrCorrupt, "must be set"},
		{"lc bool", withField(t, "lc", `true`), ErrCorrupt, "field lc must be a non-negative integer"},
		{"lc zero", withField(t, "lc", `0`), ErrCorrupt, "must be set"},
		{"at number", withField(t, "at", `1700000000`), ErrCorrupt, "field at must be a string"},
		{"at not a time", withField(t, "at", `"yesterday"`), ErrCorrupt, "not an RFC 3339 time"},
		{"at without zone", withField(t, "at", `"2026-01-02T03:04:05"`), ErrCorrupt, "not an RFC 3339 time"},
		{"actor object", withField(t, "actor", `{}`), ErrCorrupt, "field actor must be a string"},
		{"type array", withField(t, "type", `["a.b"]`), ErrCorrupt, "field type must be a string"},
		{"type empty", withField(t, "type", `""`), ErrCorrupt, "must be set"},
		{"subject number", withField(t, "subject", `1`), ErrCorrupt, "field subject must be a string"},
		{"idem false", withField(t, "idem", `false`), ErrCorrupt, "field idem must be a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Decode([]byte(c.line))
			if err == nil {
				t.Fatalf("Decode(%s) = %+v, want an error", c.line, e)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("error %v is not %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

func TestDecodeNewerVersionIsNotCorrupt(t *testing.T) {
	// A newer spool's line is not damage: callers tell the user to upgrade.
	_, err := Decode([]byte(withField(t, "v", "2")))
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("newer version reported as corrupt: %v", err)
	}
}

func TestDecodeIgnoresUnknownKeys(t *testing.T) {
	line := strings.Replace(validLine, `"v":1,`, `"v":1,"future":{"x":[1,2]},"zz":"y",`, 1)
	e, err := Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := Decode([]byte(validLine))
	a, _ := e.Encode()
	b, _ := ref.Encode()
	if !bytes.Equal(a, b) {
		t.Fatalf("unknown keys changed the event:\n%s\n%s", a, b)
	}
}

func TestDecodeCarriesUnknownTypes(t *testing.T) {
	line := withField(t, "type", `"quantum.entangled"`)
	line = strings.Replace(line, `"data":{"title":"x"}`, `"data":{"spin":[1,-1],"nested":{"deep":true}}`, 1)
	e, err := Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != "quantum.entangled" || string(e.Data) != `{"spin":[1,-1],"nested":{"deep":true}}` {
		t.Fatalf("got type %q data %s", e.Type, e.Data)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	events := []Event{
		{V: 1, ID: "a", Writer: "w", Seq: 1, LC: 1, At: at, Type: "a.b"},
		{V: 1, ID: "b", Writer: "w-2", Seq: 99, LC: 1 << 60, At: at, Actor: "bob <b@x>", Type: "task.created",
			Subject: "T&1", Idem: "i\u2028\"q\"", Data: json.RawMessage(`{"html":"<b>&amp;</b>","n":[1,2.5,null],"u":"é\u0000"}`)},
		{V: 1, ID: "c", Writer: "w", Seq: 2, LC: 3, At: at.In(time.FixedZone("x", 3600)), Type: "a.b", Data: json.RawMessage(`"just a string"`)},
	}
	for _, e := range events {
		line, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(line, []byte{'\n'}) || bytes.Count(line, []byte{'\n'}) != 1 {
			t.Fatalf("Encode must give exactly one line: %q", line)
		}
		got, err := Decode(line)
		if err != nil {
			t.Fatalf("Decode(%s): %v", line, err)
		}
		again, err := got.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(line, again) {
			t.Fatalf("round trip changed the line:\n%s%s", line, again)
		}
		if got.ID != e.ID || got.Seq != e.Seq || !got.At.Equal(e.At) || got.Idem != e.Idem || !bytes.Equal(got.Data, e.Data) {
			t.Fatalf("round trip: %+v != %+v", got, e)
		}
	}
	// The envelope's keys in their documented order, and no HTML escaping.
	line, _ := events[1].Encode()
	order := []string{`"v"`, `"id"`, `"writer"`, `"seq"`, `"lc"`, `"at"`, `"actor"`, `"type"`, `"subject"`, `"idem"`, `"data"`}
	last := -1
	for _, k := range order {
		i := bytes.Index(line, []byte(k+":"))
		if i <= last {
			t.Fatalf("key %s out of order in %s", k, line)
		}
		last = i
	}
	if !bytes.Contains(line, []byte(`"bob <b@x>"`)) {
		t.Fatalf("HTML escaped: %s", line)
	}
}

func TestIDIsContentHash(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := Event{V: 1, Writer: "w", Seq: 1, LC: 5, At: at, Actor: "a", Type: "task.created", Subject: "s", Data: json.RawMessage(`{"x":1}`)}
	id := func(e Event) string {
		t.Helper()
		s, err := e.computeID()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ref := id(base)
	if len(ref) != 24 {
		t.Fatalf("id %q: want 24 hex digits", ref)
	}
	same := base
	same.Seq = 42
	same.ID = "whatever"
	if id(same) != ref {
		t.Fatal("seq or the old id changed the id: a renumbering merge would change ids")
	}
	changes := map[string]func(*Event){
		"writer":  func(e *Event) { e.Writer = "x" },
		"lc":      func(e *Event) { e.LC++ },
		"at":      func(e *Event) { e.At = e.At.Add(time.Nanosecond) },
		"actor":   func(e *Event) { e.Actor = "b" },
		"type":    func(e *Event) { e.Type = "task.deleted" },
		"subject": func(e *Event) { e.Subject = "t" },
		"idem":    func(e *Event) { e.Idem = "k" },
		"data":    func(e *Event) { e.Data = json.RawMessage(`{"x":2}`) },
	}
	for name, change := range changes {
		e := base
		change(&e)
		if id(e) == ref {
			t.Errorf("changing %s kept the id", name)
		}
	}
}

func TestBefore(t *testing.T) {
	ev := func(lc uint64, w string, seq uint64) *Event { return &Event{LC: lc, Writer: w, Seq: seq} }
	ordered := []*Event{
		ev(1, "b", 9), ev(2, "a", 5), ev(2, "a", 6), ev(2, "b", 1), ev(3, "a", 1), ev(10, "0", 1),
	}
	for i, a := range ordered {
		for j, b := range ordered {
			if got, want := a.Before(b), i < j; got != want {
				t.Errorf("%+v.Before(%+v) = %v, want %v", *a, *b, got, want)
			}
		}
	}
}

func TestValidType(t *testing.T) {
	for typ, want := range map[string]bool{
		"task.created":     true,
		"merge.claimed":    true,
		"a.b.c":            true,
		"job_run.step_2":   true,
		"x1.y2":            true,
		"":                 false,
		"task":             false,
		"Task.created":     false,
		"task.Created":     false,
		"task..created":    false,
		".task":            false,
		"task.":            false,
		"1task.created":    false,
		"task.2created":    false,
		"task-x.created":   false,
		"task.created ":    false,
		"task.created\n":   false,
		"tâsk.created":     false,
		"spool.init.done":  true,
		"_private.created": false,
	} {
		if got := ValidType(typ); got != want {
			t.Errorf("ValidType(%q) = %v, want %v", typ, got, want)
		}
	}
}
