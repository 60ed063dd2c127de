package projectiontest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// Hostile describes a domain to its fuzz target: anyone who can push can
// write an event, so a fold must take whatever the log holds, interleaved
// with what spool writes, without panicking, without allocating more than
// a bound per event (never from a count an event names), and leave a state
// that survives its snapshot and keeps its invariants.
//
// A domain's FuzzXxx seeds the corpus with Seed and runs Fold on every
// input:
//
//	func FuzzFold(f *testing.F) {
//		h := projectiontest.Hostile{Specs: []projections.Spec{jobs.Spec}, NewClone: newClone, Types: types}
//		h.Seed(f)
//		f.Fuzz(h.Fold)
//	}
//
// The input is read as a program: each step either runs one of the
// clone's commands (valid events, as spool appends them) or makes a
// hostile event: a type of the catalogue (now and then another), a subject
// the log has seen, a hostile one (paths, "..", options, very long,
// unicode) or the input's own bytes, and data taken from an event of that
// type (or Samples) with values replaced by hostile ones (huge, negative,
// nested, of the wrong type, long arrays), at a time that may be far off.
// SPOOL_FUZZ_DEBUG=1 logs every event folded (go test -v -run
// FuzzFold/<input> shows what a failing input folds).
type Hostile struct {
	// Specs are the domain's projections; each folds every event.
	Specs []projections.Spec
	// NewClone makes the model of a clone whose commands give the valid
	// events (nil: none). It folds every event too.
	NewClone func(writer string) Clone
	// Types is the domain's catalogue.
	Types []string
	// Samples is realistic data per type, for types the clone's commands
	// rarely or never append; hostile data starts from it or from an event
	// of the type seen so far.
	Samples map[string][]any
	// Subjects are realistic subjects besides those the events bring.
	Subjects []string
}

// MaxSteps bounds the events one input makes.
const MaxSteps = 64

// allocBound is what folding one event may allocate in one projection: a
// fixed allowance and a multiple of its size, never a count the event
// names. The multiple is encoding/json's: decoding an array of small
// values of the wrong type into structs ([0,0,…] as blockers) allocates
// the struct and an error for every element, some 400 bytes for every 2
// of the payload (measured: 20 MB for 100 KB).
func allocBound(e *eventlog.Event) uint64 {
	return 1<<20 + 256*uint64(len(e.Data)+len(e.Subject)+len(e.Actor)+len(e.Type))
}

// Seed adds a few small inputs to f's corpus: valid commands only, hostile
// events only, and the two mixed.
func (h Hostile) Seed(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 4, 5, 6, 1, 7, 8, 9, 0, 10, 11, 12, 1, 13, 14, 15})
	f.Add([]byte("\x02\x00\x03\x04\x05\x06\x07\x02\x01\x10\x20\x30\x02\x02\x11\x21\x31\x41\x05\x03\x12\x22"))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x03\x01\x02\x05\x01\x07\x00\x09\x09\x09\x04\x02\x06\x06\x00\x01\x01\x01"))
	f.Add([]byte("\x01\x07\x08\x00\x00\x00\x00\x00\x00\x00\x06\x03\x02\x01\x02\x0c\x02\x0d\x07\x03\x04\x05\x06\x07\x08"))
	for seed := range uint64(4) { // longer ones, as random as a fuzzer's
		r := rand.New(rand.NewPCG(seed, 0xf022))
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
}

// Fold is the fuzz body: it folds the events input describes and checks
// what the rule requires of every fold.
func (h Hostile) Fold(t *testing.T, input []byte) {
	in := &program{b: input}
	projs := make([]projections.Projection, len(h.Specs))
	for i, s := range h.Specs {
		projs[i] = s.New()
	}
	var clone Clone
	if h.NewClone != nil {
		clone = h.NewClone("0123456789abcdef")
	}
	g := &hostileGen{h: h, in: in, seen: map[string][]json.RawMessage{}, subjects: slices.Clone(h.Subjects)}
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var seq uint64
	var before, after runtime.MemStats
	for step := 0; step < MaxSteps && !in.done(); step++ {
		now = now.Add(time.Duration(1+in.byte()) * time.Minute)
		var events []*eventlog.Event
		if op := in.byte(); op%3 == 0 && clone != nil {
			r := rand.New(rand.NewPCG(in.uint64(), uint64(step)))
			actor, drafts, err := clone.Command(r, now)
			if err != nil {
				continue
			}
			for _, d := range drafts {
				e, err := d.Event(actor, now)
				if err != nil {
					t.Fatalf("a command's draft does not marshal: %v", err)
				}
				events = append(events, e)
			}
		} else {
			events = append(events, g.event(now))
		}
		for _, e := range events {
			seq++
			e.V, e.ID, e.Writer, e.Seq, e.LC = 1, fmt.Sprintf("%024x", seq), "0123456789abcdef", seq, seq
			// Through the log's own encoding, as a reader gives it (a
			// string of invalid UTF-8 comes back with U+FFFD).
			line, err := e.Encode()
			if err != nil {
				continue
			}
			if e, err = eventlog.Decode(line); err != nil {
				continue // no reader gives it
			}
			g.saw(e)
			if os.Getenv("SPOOL_FUZZ_DEBUG") != "" {
				t.Logf("%s %q %.200s", e.Type, short(e.Subject), e.Data)
			}
			// As the engine folds it: an event no projection can keep (its
			// time) is skipped, one with an offset folded in UTC.
			e, ok := projections.Usable(e)
			if !ok {
				continue
			}
			for i, p := range projs {
				runtime.ReadMemStats(&before)
				if err := p.Apply(e); err != nil {
					t.Fatalf("%s: apply %s %q: %v (a fold never fails: one bad event would stop everyone)", h.Specs[i].Name, e.Type, e.Subject, err)
				}
				runtime.ReadMemStats(&after)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > allocBound(e) {
					t.Fatalf("%s: folding %s %q (%d bytes of data) allocated %d bytes, over %d:\n%s", h.Specs[i].Name, e.Type, short(e.Subject), len(e.Data), grew, allocBound(e), short(string(e.Data)))
				}
			}
			if clone != nil {
				clone.Apply(e)
			}
		}
	}
	for i, p := range projs {
		name := h.Specs[i].Name
		want, err := render(p, false)
		if err != nil {
			t.Fatalf("%s: the state does not render: %v", name, err)
		}
		back := h.Specs[i].New()
		if err := back.UnmarshalState(bytes.Clone(want.state)); err != nil {
			t.Fatalf("%s: the snapshot does not unmarshal: %v", name, err)
		}
		got, err := render(back, false)
		if err != nil {
			t.Fatalf("%s: the restored state does not render: %v", name, err)
		}
		if d := got.diff(want); d != "" {
			t.Fatalf("%s: the snapshot, unmarshalled and marshalled again: %s", name, d)
		}
		if c, ok := p.(projections.Checker); ok {
			if bad := c.Invariants(); len(bad) > 0 {
				t.Fatalf("%s: invariants broken: %q", name, bad)
			}
		}
	}
}

func short(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// program reads an input a byte at a time; past its end every read is 0.
type program struct {
	b []byte
	i int
}

func (p *program) done() bool { return p.i >= len(p.b) }

func (p *program) byte() byte {
	if p.i >= len(p.b) {
		p.i++
		return 0
	}
	p.i++
	return p.b[p.i-1]
}

func (p *program) uint64() uint64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = p.byte()
	}
	return binary.LittleEndian.Uint64(buf[:])
}

// bytes reads a length byte and that many bytes.
func (p *program) bytes() []byte {
	n := int(p.byte())
	out := make([]byte, 0, n)
	for range n {
		out = append(out, p.byte())
	}
	return out
}

// hostileGen makes hostile events from the program and what it saw.
type hostileGen struct {
	h        Hostile
	in       *program
	seen     map[string][]json.RawMessage // data of each type seen, the last few
	subjects []string
}

func (g *hostileGen) saw(e *eventlog.Event) {
	if len(e.Data) > 0 && len(e.Data) < 4096 && json.Valid(e.Data) {
		list := append(g.seen[e.Type], e.Data)
		if len(list) > 8 {
			list = list[1:]
		}
		g.seen[e.Type] = list
	}
	if e.Subject != "" && len(e.Subject) < 200 && !slices.Contains(g.subjects, e.Subject) {
		g.subjects = append(g.subjects, e.Subject)
	}
}

// hostileSubjects are subjects a path, an option or a parser could trip on.
var hostileSubjects = []string{
	"", ".", "..", "../../victim", "../../../../etc/passwd", "/etc/passwd", "a/b", `a\b`, "-rf", "--upload-pack=touch x",
	"job-x/../../victim", "sched-../x", "prd/../../x", "feature/../x", "merge/-1", "merge/0", "merge/99999999999999999999",
	"worker/", "worker/../x", "quota//", "plan/", "proposal/../x", "feedback/x", "prd-file/../../x", "task-1\x00", "é✓\u202e",
	strings.Repeat("a", 4096), "sp-" + strings.Repeat("9", 200), "bd-a1b2.1", "sp-4mx5", "job-4mx5", "sched-4mx5",
}

// hostileValues are JSON values a fold could allocate from, loop over,
// overflow with or choke on.
var hostileValues = func() []string {
	vals := []string{
		`1e18`, `-1`, `0`, `1`, `10000`, `10001`, `1000000000`, `9223372036854775807`, `-9223372036854775808`,
		`18446744073709551615`, `1e308`, `-1e308`, `1.5`, `""`, `"../../victim"`, `"/etc/passwd"`, `"--index-output=/tmp/x"`,
		`"-d"`, `"é✓\u202e\u0000"`, `null`, `true`, `false`, `[]`, `{}`, `[1,2,3]`, `{"a":1}`, `"x"`,
		`"2026-03-02T09:00:00Z"`, `"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59.999999999Z"`, `"1677-01-01T00:00:00Z"`,
		`"2263-01-01T00:00:00Z"`, `"2026-03-02T09:00:00+13:00"`, `"not a time"`, `"approved"`, `"merged"`, `"running"`, `"queued"`, `"in_progress"`,
		`"urgent"`, `"daily"`, `"@every 1s"`, `"* * * * *"`, `"0 0 30 2 *"`, `"0000000000000000000000000000000000000000"`,
		`"` + strings.Repeat("x", 1<<16) + `"`,
	}
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	deepObj := strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500)
	zeros := "[" + strings.TrimSuffix(strings.Repeat("0,", 50_000), ",") + "]"
	strs := "[" + strings.TrimSuffix(strings.Repeat(`"sp-1",`, 5000), ",") + "]"
	return append(vals, deep, deepObj, zeros, strs)
}()

var hostileTimes = []time.Time{
	{}, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	time.Unix(0, 0).UTC(), time.Date(2026, 3, 2, 9, 0, 0, 0, time.FixedZone("", 13*3600)),
}

func (g *hostileGen) event(now time.Time) *eventlog.Event {
	in := g.in
	e := &eventlog.Event{Actor: []string{"mallory@example.com", "ada", "", "root", "\x00"}[in.byte()%5], At: now}
	switch b := in.byte(); {
	case b%29 == 0 && len(g.h.Types) > 0:
		e.Type = g.h.Types[int(in.byte())%len(g.h.Types)] + ".v2"
	case b%31 == 1:
		e.Type = string(in.bytes())
	case len(g.h.Types) > 0:
		e.Type = g.h.Types[int(b)%len(g.h.Types)]
	default:
		e.Type = "x.y"
	}
	switch b := in.byte(); b % 6 {
	case 0, 1, 2:
		if len(g.subjects) > 0 {
			e.Subject = g.subjects[int(in.byte())%len(g.subjects)]
			break
		}
		fallthrough
	case 3:
		e.Subject = hostileSubjects[int(in.byte())%len(hostileSubjects)]
	case 4: // a seen subject's namespace, a hostile rest
		if len(g.subjects) > 0 {
			prefix, _, _ := strings.Cut(g.subjects[int(in.byte())%len(g.subjects)], "/")
			e.Subject = prefix + "/" + hostileSubjects[int(in.byte())%len(hostileSubjects)]
			break
		}
		fallthrough
	default:
		e.Subject = string(in.bytes())
	}
	if b := in.byte(); b%7 == 0 {
		e.At = hostileTimes[int(in.byte())%len(hostileTimes)]
	} else if b%7 == 1 {
		e.At = now.Add(-time.Duration(in.uint64() % uint64(1<<62)))
	}
	e.Data = g.data(e.Type)
	return e
}

// data is a payload of typ with hostile values put in.
func (g *hostileGen) data(typ string) json.RawMessage {
	in := g.in
	var base json.RawMessage
	samples := g.seen[typ]
	for _, s := range g.h.Samples[typ] {
		b, err := json.Marshal(s)
		if err == nil {
			samples = append(samples, b)
		}
	}
	if len(samples) > 0 {
		base = samples[int(in.byte())%len(samples)]
	}
	switch in.byte() % 8 {
	case 0:
		return base // as it was: a valid event of another subject, time or actor
	case 1:
		if raw := in.bytes(); json.Valid(raw) {
			return raw
		}
		return json.RawMessage(hostileValues[int(in.byte())%len(hostileValues)])
	case 2:
		return json.RawMessage(hostileValues[int(in.byte())%len(hostileValues)])
	}
	var v any
	if len(base) == 0 || json.Unmarshal(base, &v) != nil {
		v = map[string]any{}
	}
	for n := 1 + int(in.byte()%4); n > 0; n-- {
		v = g.mutate(v, 0)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return base
	}
	return b
}

// hostileTimeValues are times as JSON a snapshot may not keep: out of
// int64 nanoseconds since 1970, or with an offset.
var hostileTimeValues = []string{`"0001-01-01T00:00:00Z"`, `"0001-01-01T00:00:00.000000001Z"`, `"9999-12-31T23:59:59.999999999Z"`,
	`"1677-01-01T00:00:00Z"`, `"2263-01-01T00:00:00Z"`, `"2026-03-02T09:00:00+13:00"`, `"2026-03-02T09:00:00.5-07:00"`}

// mutate replaces a value somewhere in v (an object's field, an array's
// element, or v) with a hostile one, or removes a field.
func (g *hostileGen) mutate(v any, depth int) any {
	in := g.in
	hostile := func(cur any) any {
		var h any
		if s, ok := cur.(string); ok && in.byte()%2 == 0 {
			if _, err := time.Parse(time.RFC3339Nano, s); err == nil { // a time: another time, far off
				json.Unmarshal([]byte(hostileTimeValues[int(in.byte())%len(hostileTimeValues)]), &h)
				return h
			}
		}
		if b := in.byte(); b%5 == 0 { // a number from the input
			return json.Number(fmt.Sprint(int64(in.uint64())))
		}
		d := json.NewDecoder(strings.NewReader(hostileValues[int(in.byte())%len(hostileValues)]))
		d.UseNumber()
		if d.Decode(&h) != nil {
			return nil
		}
		return h
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b := in.byte()
		if len(keys) == 0 || b%11 == 0 {
			x[[]string{"segments", "gpus", "priority", "entry_id", "attempt", "order", "slots", "index", "deps", "blockers", "comments", "extra"}[int(in.byte())%12]] = hostile(nil)
			return x
		}
		k := keys[int(b)%len(keys)]
		switch in.byte() % 6 {
		case 0:
			delete(x, k)
		case 1, 2:
			if depth < 4 {
				x[k] = g.mutate(x[k], depth+1)
				break
			}
			fallthrough
		default:
			x[k] = hostile(x[k])
		}
		return x
	case []any:
		if len(x) > 0 && depth < 4 && in.byte()%2 == 0 {
			i := int(in.byte()) % len(x)
			x[i] = g.mutate(x[i], depth+1)
			return x
		}
		return append(x, hostile(nil))
	}
	return hostile(v)
}
