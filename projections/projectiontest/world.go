package projectiontest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// start is when every log begins: a fixed date, so a seed gives the same
// bytes on every machine.
var start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// world is a team's repository: clones, each with its own log and
// projections, that append commands and exchange writer files.
type world struct {
	tb     testing.TB
	suite  Suite
	rng    *rand.Rand // drives what happens, the clones' commands included; checks have their own
	now    time.Time
	clones []*clone // clones[0] is the hub, the repository most checks read
	// unknownPercent of the commands carry events of types no spool knows.
	unknownPercent int
	unknown        map[string]bool // ids of those events
	refused        int             // commands the domain refused
	// afterStep, when set, runs after every step (the catch-up check).
	afterStep func()
}

// clone is one clone of the repository: a root with .spool/events and
// .spool/state, and the private directory git never sees.
type clone struct {
	name   string
	writer string
	root   string
	log    *eventlog.Log
	engine *projections.Engine
	model  Clone
	seq    uint64        // the last seq it appended
	skew   time.Duration // its clock is off by this much (but never goes back)
	view   *projections.View
}

const clones = 3

func newWorld(tb testing.TB, s Suite, seed uint64, unknownPercent int) *world {
	tb.Helper()
	w := &world{tb: tb, suite: s, rng: rand.New(rand.NewPCG(seed, 0x5e11)), now: start,
		unknownPercent: unknownPercent, unknown: map[string]bool{}}
	dir := tb.TempDir()
	for i := range clones {
		c := &clone{name: fmt.Sprintf("clone%d", i), root: filepath.Join(dir, fmt.Sprintf("clone%d", i))}
		// Writer ids are random in spool; here they come from the seed, so
		// that a seed always gives the same log (and the same ties in replay
		// order).
		c.writer = fmt.Sprintf("%016x", w.rng.Uint64())
		private := filepath.Join(c.root, ".git", "spool")
		if err := os.MkdirAll(private, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(private, "writer"), []byte(c.writer+"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		c.log = eventlog.Open(eventlog.Options{Dir: filepath.Join(c.root, ".spool", "events"), PrivateDir: private})
		c.engine = &projections.Engine{Log: c.log, Root: c.root, StateDir: filepath.Join(c.root, ".spool", "state"), Specs: []projections.Spec{s.Spec}}
		c.model = s.NewClone(c.writer)
		if i > 0 {
			c.skew = time.Duration(w.rng.IntN(240)-120) * time.Second
		}
		w.clones = append(w.clones, c)
	}
	return w
}

// build runs the steps, then merges every clone into the hub and the hub
// into every clone, so that all clones end with the same log.
func (w *world) build() {
	w.tb.Helper()
	steps := w.suite.Steps
	if steps == 0 {
		steps = 120
	}
	steps *= max(*scaleFlag, 1)
	for range steps {
		switch op := w.rng.IntN(20); {
		case op < 14:
			w.command(w.clones[w.rng.IntN(len(w.clones))])
		case op < 19:
			a, b := w.rng.IntN(len(w.clones)), w.rng.IntN(len(w.clones)-1)
			if b >= a {
				b++
			}
			w.merge(w.clones[a], w.clones[b])
		default:
			w.now = w.now.Add(time.Duration(1+w.rng.IntN(3)) * time.Hour) // a night: leases run out
		}
		if w.afterStep != nil {
			w.afterStep()
		}
	}
	hub := w.clones[0]
	for _, c := range w.clones[1:] {
		w.merge(c, hub)
	}
	for _, c := range w.clones[1:] {
		w.merge(hub, c)
	}
	w.tb.Logf("log: %s", w.summary())
}

// summary counts the hub's events by type.
func (w *world) summary() string {
	byType := map[string]int{}
	events := readAll(w.tb, w.clones[0].log)
	for _, e := range events {
		byType[e.Type]++
	}
	types := slices.Sorted(maps.Keys(byType))
	parts := make([]string, len(types))
	for i, typ := range types {
		parts[i] = fmt.Sprintf("%s %d", typ, byType[typ])
	}
	// The fingerprint shows that a seed run again wrote the same log.
	sum := sha256.New()
	for _, path := range files(w.tb, w.clones[0].log) {
		b, err := os.ReadFile(path)
		if err != nil {
			w.tb.Fatal(err)
		}
		sum.Write(b)
	}
	return fmt.Sprintf("%d events (%d of unknown types) by %d writers, %d commands refused, sha256 %x: %s",
		len(events), len(w.unknown), len(w.clones), w.refused, sum.Sum(nil)[:6], strings.Join(parts, ", "))
}

// command runs one command on c: decide, then append under the lock with
// one fsync, as the CLI does.
func (w *world) command(c *clone) {
	w.tb.Helper()
	w.now = w.now.Add(time.Duration(w.rng.IntN(180)) * time.Second)
	at := w.now.Add(c.skew)
	var actor string
	var drafts []eventlog.Draft
	for range 4 {
		a, d, err := c.model.Command(w.rng, at)
		if err != nil {
			w.refused++
			continue
		}
		if len(d) > 0 {
			actor, drafts = a, d
			break
		}
	}
	var unknownAt []int
	if w.rng.IntN(100) < w.unknownPercent {
		drafts, unknownAt = w.withUnknown(drafts)
	}
	if len(drafts) == 0 {
		return
	}
	if actor == "" {
		actor = "nobody@example.com"
	}
	events, err := c.log.Append(context.Background(), at, actor, drafts, eventlog.AppendOptions{})
	if err != nil {
		w.tb.Fatalf("%s appends %s: %v", c.name, typesOf(drafts), err)
	}
	for _, i := range unknownAt {
		w.unknown[events[i].ID] = true
	}
	for i := range events {
		e := &events[i]
		// A draft whose idempotency key is in the log already yields the
		// first event instead: the clone has folded it.
		if e.Writer == c.writer && e.Seq > c.seq {
			c.seq = e.Seq
			c.model.Apply(e)
		}
	}
}

// withUnknown mixes events of types no spool knows into a command: a type
// of no namespace spool has, and types inside the domain's namespace,
// shaped like its own events (same subject, same data), that a fold must
// not take for them. It returns where they are in the batch.
func (w *world) withUnknown(drafts []eventlog.Draft) ([]eventlog.Draft, []int) {
	out := slices.Clone(drafts)
	unknown := make([]bool, len(out))
	for range 1 + w.rng.IntN(2) {
		var d eventlog.Draft
		switch op := w.rng.IntN(3); {
		case op == 0 || len(drafts) == 0:
			d = eventlog.Draft{Type: "future.thing", Subject: w.pickSubject(drafts), Data: w.someData()}
		case op == 1:
			like := drafts[w.rng.IntN(len(drafts))]
			ns, _, _ := strings.Cut(like.Type, ".")
			d = eventlog.Draft{Type: ns + ".frobnicated", Subject: like.Subject, Data: like.Data}
		default:
			like := drafts[w.rng.IntN(len(drafts))]
			d = eventlog.Draft{Type: like.Type + ".v2", Subject: like.Subject, Data: like.Data}
		}
		i := w.rng.IntN(len(out) + 1)
		out = slices.Insert(out, i, d)
		unknown = slices.Insert(unknown, i, true)
	}
	var at []int
	for i, u := range unknown {
		if u {
			at = append(at, i)
		}
	}
	return out, at
}

func (w *world) pickSubject(drafts []eventlog.Draft) string {
	if len(drafts) > 0 && w.rng.IntN(2) == 0 {
		return drafts[w.rng.IntN(len(drafts))].Subject
	}
	return []string{"", "thing-1", "sp-zzzz", "merge/1"}[w.rng.IntN(4)]
}

func (w *world) someData() any {
	switch w.rng.IntN(5) {
	case 0:
		return nil
	case 1:
		return json.RawMessage(`"just a string"`)
	case 2:
		return json.RawMessage(`[1,2,{"nested":true}]`)
	case 3:
		return json.RawMessage(`{"from":"pending","to":"merged","entry_id":1,"attempt":7,"title":"not a task"}`)
	}
	return map[string]any{"n": w.rng.IntN(100), "note": "from a newer spool ✓"}
}

// merge brings from's files to to, as a pull through git does: for every
// writer the longer file wins (a writer file only grows). git writes a
// file it changes either in place or as a new file renamed over the old.
func (w *world) merge(from, to *clone) {
	w.tb.Helper()
	changed := false
	for _, path := range files(w.tb, from.log) {
		name := filepath.Base(path)
		ours, err := os.ReadFile(filepath.Join(to.log.Dir(), name))
		if err != nil && !os.IsNotExist(err) {
			w.tb.Fatal(err)
		}
		theirs, err := os.ReadFile(path)
		if err != nil {
			w.tb.Fatal(err)
		}
		if len(theirs) <= len(ours) {
			continue
		}
		if !bytes.HasPrefix(theirs, ours) {
			w.tb.Fatalf("%s's copy of %s is not a prefix of %s's", to.name, name, from.name)
		}
		w.writeFile(filepath.Join(to.log.Dir(), name), theirs)
		changed = true
	}
	if changed {
		to.refold(w)
	}
}

func (w *world) writeFile(path string, data []byte) {
	w.tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.tb.Fatal(err)
	}
	if w.rng.IntN(2) == 0 {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			w.tb.Fatal(err)
		}
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		w.tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		w.tb.Fatal(err)
	}
}

// refold gives the clone a model of its whole log, merged events included.
func (c *clone) refold(w *world) {
	w.tb.Helper()
	c.model = w.suite.NewClone(c.writer)
	for _, e := range readAll(w.tb, c.log) {
		c.model.Apply(e)
	}
}

func files(tb testing.TB, l *eventlog.Log) []string {
	tb.Helper()
	paths, err := l.Files()
	if err != nil {
		tb.Fatal(err)
	}
	return paths
}

// readAll returns the log's events in replay order.
func readAll(tb testing.TB, l *eventlog.Log) []*eventlog.Event {
	tb.Helper()
	r, err := l.Read(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var out []*eventlog.Event
	for {
		e, _, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
	}
}

func typesOf(drafts []eventlog.Draft) string {
	types := make([]string, len(drafts))
	for i, d := range drafts {
		types[i] = d.Type
	}
	return strings.Join(types, ",")
}
