package projections

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// ledger is a test projection that uses event data: it sums data.n per
// subject and lists every id in the order applied, so any difference in
// order or coverage shows. Data it cannot use is skipped, as the rule says.
type ledger struct {
	IDs     []string       `json:"ids"`
	Sums    map[string]int `json:"sums"`
	Skipped int            `json:"skipped"`
}

func (l *ledger) Apply(e *eventlog.Event) error {
	if e.Type != "ledger.added" {
		return nil
	}
	l.IDs = append(l.IDs, e.ID)
	var data struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(e.Data, &data); err != nil {
		l.Skipped++
		return nil
	}
	l.Sums[e.Subject] += data.N
	return nil
}

func (l *ledger) MarshalState() ([]byte, error) { return json.Marshal(l) }
func (l *ledger) UnmarshalState(b []byte) error { return json.Unmarshal(b, l) }
func (l *ledger) WorkTreePaths() []string       { return []string{"out/ledger.json"} }
func (l *ledger) Files() ([]File, error) {
	b, err := json.MarshalIndent(l, "", " ")
	if err != nil {
		return nil, err
	}
	return []File{{Path: "out/ledger.json", Data: append(b, '\n'), WorkTree: true}}, nil
}

// fixture is a repository root with one engine over a shared events dir;
// clones append to the same dir (as one machine) or to their own (and are
// merged by copying files, as git would).
type fixture struct {
	t       *testing.T
	root    string
	events  string
	news    atomic.Int64 // projections created: every rebuild creates one
	hookFor func(e *eventlog.Event)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	return &fixture{t: t, root: root, events: filepath.Join(root, ".spool", "events")}
}

func (f *fixture) specs() []Spec {
	return []Spec{
		StatsSpec,
		{Name: "ledger", Version: 1, New: func() Projection {
			f.news.Add(1)
			return &hooked{ledger: &ledger{Sums: map[string]int{}}, f: f}
		}},
	}
}

// hooked lets a test act in the middle of a fold.
type hooked struct {
	*ledger
	f *fixture
}

func (h *hooked) Apply(e *eventlog.Event) error {
	if h.f.hookFor != nil {
		h.f.hookFor(e)
	}
	return h.ledger.Apply(e)
}

func (f *fixture) engine() *Engine {
	log := eventlog.Open(eventlog.Options{Dir: f.events, PrivateDir: filepath.Join(f.root, "private")})
	return &Engine{Log: log, Root: f.root, StateDir: filepath.Join(f.root, ".spool", "state"), Specs: f.specs()}
}

// writer is a clone appending to dir.
func (f *fixture) writer(name, dir string) *eventlog.Log {
	return eventlog.Open(eventlog.Options{Dir: dir, PrivateDir: filepath.Join(f.root, "private-"+name)})
}

func (f *fixture) add(l *eventlog.Log, n int, drafts ...eventlog.Draft) {
	f.t.Helper()
	if len(drafts) == 0 {
		for i := range n {
			drafts = append(drafts, eventlog.Draft{Type: "ledger.added", Subject: fmt.Sprint("s", i%3), Data: map[string]int{"n": i + 1}})
		}
	}
	if _, err := l.Append(context.Background(), t0, "ada", drafts, eventlog.AppendOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// catchUp is what a command does: load snapshots, catch up, save.
func (f *fixture) catchUp(names ...string) *View {
	f.t.Helper()
	v, err := f.engine().Open(names...)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := v.CatchUp(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		f.t.Fatal(err)
	}
	return v
}

// rendered is every file and state of a view, keyed by path.
func rendered(t *testing.T, v *View) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, it := range v.items {
		files, err := it.proj.Files()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			out[f.Path] = string(f.Data)
		}
		state, err := it.proj.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		out["state:"+it.spec.Name] = string(state)
	}
	return out
}

// mustMatchReplay checks that a view and the files on disk equal a fresh replay.
func (f *fixture) mustMatchReplay(v *View) {
	f.t.Helper()
	fresh, err := f.engine().Replay(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	want := rendered(f.t, fresh)
	got := rendered(f.t, v)
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if got[name] != want[name] {
			f.t.Fatalf("%s differs from a fresh replay:\n got %s\nwant %s", name, got[name], want[name])
		}
		if !strings.HasPrefix(name, "state:") {
			disk, err := os.ReadFile(filepath.Join(f.root, name))
			if err != nil || string(disk) != want[name] {
				f.t.Fatalf("%s on disk differs from a fresh replay (%v):\n got %s\nwant %s", name, err, disk, want[name])
			}
		}
	}
	diffs, stale, _, err := f.engine().Verify(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	if len(diffs) > 0 || len(stale) > 0 {
		f.t.Fatalf("Verify after catch-up: diffs %v stale %v", diffs, stale)
	}
}

func ledgerOf(t *testing.T, v *View) *ledger {
	t.Helper()
	return v.Get("ledger").(*hooked).ledger
}

func TestIncrementalEqualsReplay(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			f := newFixture(t)
			local := []*eventlog.Log{f.writer("a", f.events), f.writer("b", f.events)}
			remote := f.writer("r", filepath.Join(f.root, "remote"))
			names := [][]string{nil, {"stats"}, {"ledger"}, {"ledger", "stats"}}
			for step := 0; step < 60; step++ {
				switch op := rng.IntN(10); {
				case op < 5:
					f.add(local[rng.IntN(len(local))], 1+rng.IntN(3))
				case op < 6:
					// Another clone's events arrive by a merge; they may sort
					// before what was applied.
					f.add(remote, 1+rng.IntN(2))
					b, err := os.ReadFile(filepath.Join(f.root, "remote", mustWriter(t, remote)+eventlog.Ext))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(f.events, mustWriter(t, remote)+eventlog.Ext), b, 0o644); err != nil {
						t.Fatal(err)
					}
				default:
					f.catchUp(names[rng.IntN(len(names))]...)
				}
			}
			v := f.catchUp()
			f.mustMatchReplay(v)
			if n := len(ledgerOf(t, v).IDs); n == 0 {
				t.Fatal("nothing applied")
			}
		})
	}
}

func mustWriter(t *testing.T, l *eventlog.Log) string {
	t.Helper()
	w, err := l.WriterID()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestCatchUpIsIncremental(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.writer("a", f.events)
	f.add(a, 5)
	f.catchUp()
	before := f.news.Load()
	f.add(a, 3)
	v := f.catchUp()
	if f.news.Load() != before+1 { // Open creates one to load the snapshot into
		t.Fatalf("catching up 3 new events rebuilt the projection (%d creations)", f.news.Load()-before)
	}
	if n := len(ledgerOf(t, v).IDs); n != 8 {
		t.Fatalf("ledger has %d ids, want 8", n)
	}
	f.mustMatchReplay(v)
	// Nothing new: nothing changes, nothing is written.
	v, _ = f.engine().Open()
	if stale, err := v.Stale(); err != nil || stale {
		t.Fatalf("Stale = %v, %v after a catch-up", stale, err)
	}
	if changed, err := v.CatchUp(context.Background()); err != nil || changed {
		t.Fatalf("CatchUp = %v, %v with nothing new", changed, err)
	}
}

func TestMergedEventBeforeCheckpointRebuilds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.writer("a", f.events)
	remote := f.writer("r", filepath.Join(f.root, "remote"))
	f.add(remote, 2) // lc 1, 2: before a's events once merged
	f.add(a, 4)      // lc 1..4
	f.catchUp()
	before := f.news.Load()
	rw := mustWriter(t, remote)
	b, _ := os.ReadFile(filepath.Join(f.root, "remote", rw+eventlog.Ext))
	os.WriteFile(filepath.Join(f.events, rw+eventlog.Ext), b, 0o644)
	v := f.catchUp()
	if f.news.Load() < before+2 {
		t.Fatal("events sorting before the checkpoint were applied without a rebuild")
	}
	ids := ledgerOf(t, v).IDs
	if len(ids) != 6 {
		t.Fatalf("%d ids, want 6", len(ids))
	}
	f.mustMatchReplay(v)
}

// rewrite replaces a writer file, optionally keeping its size and mtime.
func rewrite(t *testing.T, path string, change func([]byte) []byte, keepStat bool) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, change(b), 0o644); err != nil {
		t.Fatal(err)
	}
	if keepStat {
		if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// reencodeLast gives the last line of a writer file another subject of the
// same length: the log stays readable, the projection must notice.
func reencodeLast(t *testing.T, b []byte) []byte {
	t.Helper()
	lines := bytes.SplitAfter(b, []byte{'\n'})
	last := len(lines) - 2
	e, err := eventlog.Decode(lines[last])
	if err != nil {
		t.Fatal(err)
	}
	e.Subject = strings.Repeat("z", len(e.Subject))
	if e.ID, err = e.ContentID(); err != nil {
		t.Fatal(err)
	}
	line, _ := e.Encode()
	if len(line) != len(lines[last]) {
		t.Fatalf("rewritten line changed length")
	}
	lines[last] = line
	return bytes.Join(lines, nil)
}

func TestRewrittenFileRebuilds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(t *testing.T, f *fixture, path string)
	}{
		{"truncated by a reset", func(t *testing.T, f *fixture, path string) {
			rewrite(t, path, func(b []byte) []byte {
				lines := bytes.SplitAfter(b, []byte{'\n'})
				return bytes.Join(lines[:2], nil)
			}, false)
		}},
		{"same size, other content", func(t *testing.T, f *fixture, path string) {
			rewrite(t, path, func(b []byte) []byte { return reencodeLast(t, b) }, false)
		}},
		{"same size and mtime, other content", func(t *testing.T, f *fixture, path string) {
			// A rewrite within the file system's timestamp granularity.
			rewrite(t, path, func(b []byte) []byte { return reencodeLast(t, b) }, true)
		}},
		{"line under the mark changed, then appended", func(t *testing.T, f *fixture, path string) {
			rewrite(t, path, func(b []byte) []byte { return reencodeLast(t, b) }, false)
			f.add(f.writer("a", f.events), 1)
		}},
		{"file removed", func(t *testing.T, f *fixture, path string) {
			os.Remove(path)
		}},
		{"file replaced by another writer's", func(t *testing.T, f *fixture, path string) {
			// As many files as marks, but one of the marked ones is gone (a
			// checkout of a branch that never merged that writer).
			f.add(f.writer("b", f.events), 2)
			f.catchUp()
			os.Remove(path)
			f.add(f.writer("c", f.events), 2) // sorts after everything applied
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			a := f.writer("a", f.events)
			f.add(f.writer("b", f.events), 1)
			f.add(a, 4)
			f.catchUp()
			c.edit(t, f, filepath.Join(f.events, mustWriter(t, a)+eventlog.Ext))
			before := f.news.Load()
			v := f.catchUp()
			if f.news.Load() < before+2 { // one to load the snapshot, one to rebuild
				t.Fatal("a rewritten file did not trigger a rebuild")
			}
			f.mustMatchReplay(v)
		})
	}
}

func TestTornTailRepairAfterCatchUp(t *testing.T) {
	t.Parallel()
	// A reader may catch up while a crashed writer's torn line is on disk;
	// the repair that follows must not leave the projection wrong.
	f := newFixture(t)
	a := f.writer("a", f.events)
	f.add(a, 3)
	path := filepath.Join(f.events, mustWriter(t, a)+eventlog.Ext)
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"v":1,"id":"torn`)
	fh.Close()
	f.catchUp()
	f.add(a, 2) // Begin repairs the tail first
	v := f.catchUp()
	f.mustMatchReplay(v)
	if n := len(ledgerOf(t, v).IDs); n != 5 {
		t.Fatalf("%d ids, want 5", n)
	}
}

func TestAppendDuringCatchUpIsNotMissed(t *testing.T) {
	t.Parallel()
	// git may add lines to a writer file (a merge or pull does not take
	// spool's lock) while a command reads it; the next command must apply them.
	f := newFixture(t)
	a := f.writer("a", f.events)
	remote := f.writer("r", filepath.Join(f.root, "remote"))
	f.add(a, 3)
	f.add(remote, 2)
	rpath := filepath.Join(f.root, "remote", mustWriter(t, remote)+eventlog.Ext)
	lpath := filepath.Join(f.events, mustWriter(t, remote)+eventlog.Ext)
	b, _ := os.ReadFile(rpath)
	os.WriteFile(lpath, b, 0o644)
	f.catchUp()
	f.add(remote, 2)
	full, _ := os.ReadFile(rpath)
	last := ""
	f.hookFor = func(e *eventlog.Event) {
		// While the last event is applied, the rest of the merge lands.
		if e.Writer == mustWriter(t, a) && e.Seq == 4 {
			last = e.ID
			os.WriteFile(lpath, full, 0o644)
		}
	}
	f.add(a, 1)
	f.catchUp()
	f.hookFor = nil
	if last == "" {
		t.Fatal("hook never ran")
	}
	v := f.catchUp()
	f.mustMatchReplay(v)
}

func TestMissingOrGarbledSnapshot(t *testing.T) {
	t.Parallel()
	cases := map[string]func(path string){
		"missing":            func(p string) { os.Remove(p) },
		"empty":              func(p string) { os.WriteFile(p, nil, 0o644) },
		"no newline":         func(p string) { os.WriteFile(p, []byte(`{"name":"ledger"}`), 0o644) },
		"garbage checkpoint": func(p string) { os.WriteFile(p, []byte("%%%\n{}"), 0o644) },
		"truncated state": func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-5], 0o644)
		},
		"other projection's": func(p string) {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stats.snap"))
			os.WriteFile(p, b, 0o644)
		},
		"older version": func(p string) {
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"version":1`), []byte(`"version":0`), 1), 0o644)
		},
		"no marks": func(p string) {
			b, _ := os.ReadFile(p)
			head, body, _ := bytes.Cut(b, []byte{'\n'})
			var cp map[string]any
			json.Unmarshal(head, &cp)
			delete(cp, "marks")
			head, _ = json.Marshal(cp)
			os.WriteFile(p, append(append(head, '\n'), body...), 0o644)
		},
		"a directory": func(p string) { os.Remove(p); os.Mkdir(p, 0o755) },
		"stats state with null maps": func(p string) {
			p = filepath.Join(filepath.Dir(p), "stats.snap")
			b, _ := os.ReadFile(p)
			head, _, _ := bytes.Cut(b, []byte{'\n'})
			os.WriteFile(p, append(head, "\n{\"events\":4,\"by_type\":null,\"by_writer\":null}"...), 0o644)
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			a := f.writer("a", f.events)
			f.add(a, 4)
			f.catchUp()
			snap := filepath.Join(f.root, ".spool", "state", "ledger.snap")
			damage(snap)
			f.add(a, 1)
			v, err := f.engine().Open()
			if err != nil {
				t.Fatal(err)
			}
			if stale, err := v.Stale(); err != nil || !stale {
				t.Fatalf("Stale = %v, %v with a damaged snapshot", stale, err)
			}
			if _, err := v.CatchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			if name == "a directory" {
				if err := v.Save(); err == nil {
					t.Fatal("saving over a directory succeeded")
				}
				return
			}
			if err := v.Save(); err != nil {
				t.Fatal(err)
			}
			f.mustMatchReplay(v)
			if n := len(ledgerOf(t, v).IDs); n != 5 {
				t.Fatalf("%d ids, want 5", n)
			}
		})
	}
}

func TestSaveSweepsStaleTempFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(f.writer("a", f.events), 2)
	tmp := filepath.Join(f.root, ".spool", "state", ".tmp")
	os.MkdirAll(tmp, 0o755)
	for _, name := range []string{"ledger.json.123", ".stats.snap4242", "x"} {
		os.WriteFile(filepath.Join(tmp, name), []byte("left by a crash"), 0o644)
	}
	f.catchUp()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("stale temp files left: %v", entries)
	}
}

func TestReplayTwiceIsByteIdentical(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(f.writer("a", f.events), 20)
	f.add(f.writer("b", f.events), 0,
		eventlog.Draft{Type: "other.thing", Subject: "é"},
		eventlog.Draft{Type: "ledger.added", Subject: "s9", Data: map[string]int{"n": 3}})
	f.add(f.writer("a", f.events), 5)
	var snaps [2]map[string]string
	for i := range snaps {
		v, err := f.engine().Replay(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		snaps[i] = rendered(t, v)
		// And through Save, into a second state dir.
		en := f.engine()
		en.StateDir = filepath.Join(f.root, fmt.Sprint("state", i))
		v, err = en.Replay(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Save(); err != nil {
			t.Fatal(err)
		}
	}
	if len(snaps[0]) != 4 {
		t.Fatalf("rendered %d files and states, want 4", len(snaps[0]))
	}
	for k, a := range snaps[0] {
		if snaps[1][k] != a {
			t.Fatalf("%s differs between two replays", k)
		}
	}
	for _, name := range []string{"stats.snap", "ledger.snap"} {
		a, _ := os.ReadFile(filepath.Join(f.root, "state0", name))
		b, _ := os.ReadFile(filepath.Join(f.root, "state1", name))
		_, a, _ = bytes.Cut(a, []byte{'\n'})
		_, b, _ = bytes.Cut(b, []byte{'\n'})
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s state differs between two replays", name)
		}
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.add(f.writer("a", f.events), 6)
		f.catchUp()
		return f
	}
	t.Run("clean", func(t *testing.T) {
		f := setup(t)
		diffs, stale, _, err := f.engine().Verify(context.Background())
		if err != nil || len(diffs) != 0 || len(stale) != 0 {
			t.Fatalf("Verify = %v, %v, %v", diffs, stale, err)
		}
	})
	t.Run("hand-edited file", func(t *testing.T) {
		f := setup(t)
		path := filepath.Join(f.root, "stats.json")
		b, _ := os.ReadFile(path)
		os.WriteFile(path, bytes.Replace(b, []byte(`"events": 6`), []byte(`"events": 7`), 1), 0o644)
		mustDiffer(t, f, "stats", "stats.json", "differs from a fresh replay")
	})
	t.Run("deleted work-tree file", func(t *testing.T) {
		// git clean -x removes it: the projection is stale, and the next
		// view of it writes it again.
		f := setup(t)
		path := filepath.Join(f.root, "out", "ledger.json")
		want, _ := os.ReadFile(path)
		os.Remove(path)
		diffs, stale, _, err := f.engine().Verify(context.Background())
		if err != nil || len(diffs) != 0 || !slices.Equal(stale, []string{"ledger"}) {
			t.Fatalf("Verify = %v, stale %v, %v", diffs, stale, err)
		}
		v, err := f.engine().Open("ledger")
		if err != nil {
			t.Fatal(err)
		}
		if stale, err := v.Stale(); err != nil || !stale {
			t.Fatalf("a view missing its work-tree file is not stale (%v)", err)
		}
		if err := v.Save(); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != string(want) {
			t.Fatalf("after the save: %q, want %q", got, want)
		}
	})
	t.Run("tampered snapshot state", func(t *testing.T) {
		// Edited by hand: the checksum says so, and commands rebuild it.
		f := setup(t)
		path := filepath.Join(f.root, ".spool", "state", "ledger.snap")
		b, _ := os.ReadFile(path)
		os.WriteFile(path, bytes.Replace(b, []byte(`"s0":`), []byte(`"s0":1`), 1), 0o644)
		mustDiffer(t, f, "ledger", path, "does not match its checksum")
		var warned []string
		en := f.engine()
		en.Warn = func(m string) { warned = append(warned, m) }
		v, err := en.Open("ledger")
		if err != nil || len(warned) != 1 || !strings.Contains(warned[0], "rebuilt from the log") {
			t.Fatalf("open: %v, warnings %q", err, warned)
		}
		if stale, _ := v.Stale(); !stale {
			t.Fatal("the damaged snapshot was loaded")
		}
	})
	t.Run("wrong snapshot state, checksum and all", func(t *testing.T) {
		// What a bug in a fold would write: only the fresh replay tells.
		f := setup(t)
		path := filepath.Join(f.root, ".spool", "state", "ledger.snap")
		b, _ := os.ReadFile(path)
		os.WriteFile(path, resum(t, bytes.Replace(b, []byte(`"s0":`), []byte(`"s0":1`), 1)), 0o644)
		mustDiffer(t, f, "ledger", path, "snapshot state differs")
	})
	t.Run("tampered checkpoint count", func(t *testing.T) {
		f := setup(t)
		path := filepath.Join(f.root, ".spool", "state", "ledger.snap")
		b, _ := os.ReadFile(path)
		os.WriteFile(path, bytes.Replace(b, []byte(`"events":6`), []byte(`"events":5`), 1), 0o644)
		mustDiffer(t, f, "ledger", filepath.Join(f.root, ".spool", "state", "ledger.snap"), "5 events applied, replay has 6")
	})
	t.Run("stale", func(t *testing.T) {
		f := setup(t)
		f.add(f.writer("a", f.events), 1)
		diffs, stale, _, err := f.engine().Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Neither the files nor the state of a stale projection are
		// compared: the next command brings them up to date.
		if !slices.Equal(stale, []string{"stats", "ledger"}) || len(diffs) != 0 {
			t.Fatalf("Verify = %v, stale %v", diffs, stale)
		}
	})
}

func mustDiffer(t *testing.T, f *fixture, proj, path, problem string) {
	t.Helper()
	diffs, _, _, err := f.engine().Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		if d.Projection == proj && d.Path == path && strings.Contains(d.Problem, problem) {
			return
		}
	}
	t.Fatalf("Verify = %+v, want %s %s %q", diffs, proj, path, problem)
}

func TestUndecodableDataDoesNotWedge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.writer("a", f.events)
	f.add(a, 2)
	f.catchUp()
	f.add(a, 0,
		eventlog.Draft{Type: "ledger.added", Subject: "s0", Data: json.RawMessage(`"a string"`)},
		eventlog.Draft{Type: "ledger.added", Subject: "s0", Data: json.RawMessage(`[1,2,3]`)},
		eventlog.Draft{Type: "ledger.added", Subject: "s0", Data: json.RawMessage(`{"n":"seven"}`)},
		eventlog.Draft{Type: "ledger.added", Subject: "s0", Data: json.RawMessage(`{"n":1e999}`)},
		eventlog.Draft{Type: "ledger.added", Subject: "s0"},
		eventlog.Draft{Type: "from.the_future", Subject: "s0", Data: json.RawMessage(`{"n":100}`)},
	)
	f.add(a, 1)
	v := f.catchUp()
	l := ledgerOf(t, v)
	if len(l.IDs) != 8 || l.Skipped != 5 || l.Sums["s0"] != 2 {
		t.Fatalf("ledger = %+v", l)
	}
	stats := v.Get("stats").(*Stats)
	if stats.Events != 9 || stats.ByType["from.the_future"] != 1 {
		t.Fatalf("stats = %+v", stats)
	}
	f.mustMatchReplay(v)
}

func TestOpenUnknownProjection(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.engine().Open("stats", "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err = %v", err)
	}
}

func TestEmptyLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	v := f.catchUp()
	f.mustMatchReplay(v)
	if v.Events() != 0 {
		t.Fatal("events in an empty log")
	}
	if stale, err := f.engine().Open(); err != nil {
		t.Fatal(err)
	} else if s, _ := stale.Stale(); s {
		t.Fatal("stale after saving an empty log")
	}
}

// A writer file replaced by one that begins with the same bytes (git
// checking out or merging a branch where it grew) is caught up, not rebuilt.
func TestReplacedFileWithSamePrefixCatchesUp(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.writer("a", f.events)
	f.add(a, 4)
	f.catchUp()
	path := filepath.Join(f.events, mustWriter(t, a)+eventlog.Ext)
	b, _ := os.ReadFile(path)
	f.add(a, 2)
	grown, _ := os.ReadFile(path)
	// As git writes: a new file (another inode) renamed into place.
	os.WriteFile(path+".new", grown, 0o644)
	os.Rename(path+".new", path)
	before := f.news.Load()
	v := f.catchUp()
	if f.news.Load() != before+1 { // the snapshot is loaded, nothing rebuilt
		t.Fatalf("a replaced file with the applied prefix was rebuilt (%d projections made)", f.news.Load()-before)
	}
	f.mustMatchReplay(v)
	if len(b) >= len(grown) {
		t.Fatal("fixture did not grow the file")
	}
}

// A line under the mark edited as sed -i does (a new file renamed into
// place), then an append by spool: the append must not launder the edit.
func TestEditUnderTheMarkThenAppendIsCaught(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.writer("a", f.events)
	f.add(a, 3)
	f.add(a, 1)
	f.catchUp()
	path := filepath.Join(f.events, mustWriter(t, a)+eventlog.Ext)
	b, _ := os.ReadFile(path)
	b = bytes.Replace(b, []byte(`"n":2`), []byte(`"n":7`), 1) // same length; the id no longer matches
	os.WriteFile(path+".sed", b, 0o644)
	os.Rename(path+".sed", path)
	f.add(a, 1)
	v, err := f.engine().Open()
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.CatchUp(context.Background())
	var le *eventlog.LineError
	if !errors.As(err, &le) || !errors.Is(err, eventlog.ErrCorrupt) || le.Line != 2 {
		t.Fatalf("catch-up after an edit under the mark: %v, want corrupt line 2", err)
	}
}

// A fresh clone: the first command that needs a projection rebuilds every
// stale one in the same pass over the log, and saves them all.
func TestRebuildsEveryStaleProjectionInOnePass(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(f.writer("a", f.events), 5)
	en := f.engine()
	passes := 0
	en.Progress = func(_ int, done bool) {
		if done {
			passes++
		}
	}
	v, err := en.Open("stats")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !v.NeedsSave() {
		t.Fatal("nothing to save after a rebuild")
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	if passes != 1 {
		t.Fatalf("%d passes over the log, want 1", passes)
	}
	// The ledger was rebuilt and saved too: opening it reads no event again.
	passes = 0
	v, _ = en.Open("ledger")
	if _, err := v.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if passes != 0 || ledgerOf(t, v).Sums["s0"] == 0 {
		t.Fatalf("ledger after the shared rebuild: passes %d, sums %v", passes, ledgerOf(t, v).Sums)
	}
	f.mustMatchReplay(v)
}

// spilling is a ledger that says where it was asked to spill.
type spilling struct {
	*ledger
	dirs *[]string
}

func (s *spilling) Spill(dir string) error {
	*s.dirs = append(*s.dirs, dir)
	return nil
}

// Only a fold nobody decides on spills: Rebuild and Verify's fresh replay,
// not Replay or a command's catching up; and only with a SpillDir.
func TestOnlyRebuildAndVerifySpill(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(f.writer("a", f.events), 5)
	var dirs []string
	en := f.engine()
	en.Specs = []Spec{{Name: "ledger", Version: 1, New: func() Projection {
		return &spilling{ledger: &ledger{Sums: map[string]int{}}, dirs: &dirs}
	}}}
	ctx := context.Background()
	if _, err := en.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 0 {
		t.Fatalf("spilled without a SpillDir: %v", dirs)
	}
	en.SpillDir = filepath.Join(f.root, "spill")
	check := func(what string, want int) {
		t.Helper()
		if len(dirs) != want {
			t.Fatalf("after %s: %d spills, want %d", what, len(dirs), want)
		}
	}
	if _, err := en.Replay(ctx); err != nil {
		t.Fatal(err)
	}
	check("Replay", 0)
	if n, err := en.Rebuild(ctx); err != nil || n != 5 {
		t.Fatalf("Rebuild: %d events, %v", n, err)
	}
	check("Rebuild", 1)
	f.add(f.writer("a", f.events), 2)
	v, err := en.Open()
	if err == nil {
		_, err = v.CatchUp(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	check("a catch-up", 1)
	if _, err := en.VerifyAll(ctx); err != nil {
		t.Fatal(err)
	}
	check("Verify", 2)
	if dirs[0] != en.SpillDir || dirs[1] != en.SpillDir {
		t.Fatalf("spilled to %v, want %s", dirs, en.SpillDir)
	}
}

// resum gives a snapshot whose state was changed the checksum of its new
// state, as spool would have written it.
func resum(t *testing.T, snap []byte) []byte {
	t.Helper()
	head, body, _ := bytes.Cut(snap, []byte{'\n'})
	var cp Checkpoint
	if err := json.Unmarshal(head, &cp); err != nil {
		t.Fatal(err)
	}
	cp.Sum = bodySum(body)
	head, _ = json.Marshal(cp)
	return append(append(head, '\n'), body...)
}

// A work-tree file whose directory is a committed link leading outside the
// work tree (or into .git) is not written there, nor taken for missing on
// every command; verify reports it. A link that stays inside is followed.
func TestWorkTreeFilesStayInTheWorkTree(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		target func(root, outside string) string // where out/ leads
		inside bool
	}{
		{"outside", func(root, outside string) string { return outside }, false},
		{"into .git", func(root, outside string) string {
			os.MkdirAll(filepath.Join(root, ".git", "o"), 0o755)
			return ".git/o"
		}, false},
		{"inside", func(root, outside string) string { os.MkdirAll(filepath.Join(root, "real"), 0o755); return "real" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			outside := t.TempDir()
			target := c.target(f.root, outside)
			if err := os.Symlink(target, filepath.Join(f.root, "out")); err != nil {
				t.Fatal(err)
			}
			f.add(f.writer("a", f.events), 3)
			f.catchUp("ledger")
			if !filepath.IsAbs(target) {
				target = filepath.Join(f.root, target)
			}
			_, err := os.Stat(filepath.Join(target, "ledger.json"))
			if written := err == nil; written != c.inside {
				t.Fatalf("written through out -> %s: %v", target, written)
			}
			if v, err := f.engine().Open("ledger"); err != nil || v.en.missingWorkTreeFile(v.items[0]) {
				t.Fatalf("taken for missing (%v): every command would rewrite it", err)
			}
			diffs, _, _, err := f.engine().Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if reported := len(diffs) == 1 && strings.Contains(diffs[0].Problem, "outside the work tree"); reported == c.inside || !c.inside && len(diffs) != 1 {
				t.Fatalf("verify: %+v", diffs)
			}
		})
	}
}

// An event at a time no snapshot keeps (before 1678, after 2262, the zero
// time: anyone who can push can write any) is skipped by every
// projection, its place in the log still marked; one with an offset is
// folded as the same instant in UTC. A fresh replay and a snapshot agree.
func TestEventsAtTimesNoSnapshotKeepsAreSkipped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := f.writer("a", f.events)
	for _, at := range []time.Time{t0, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), t0.In(time.FixedZone("", 13*3600))} {
		d := eventlog.Draft{Type: "ledger.added", Subject: "s", Data: map[string]int{"n": 1}}
		// Append writes UTC: write the forged line's time by hand.
		if _, err := l.Append(context.Background(), at, "ada", []eventlog.Draft{d}, eventlog.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(f.events, mustWriter(t, l)+eventlog.Ext)
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	// Append holds a writer's times (never before the last), so the times
	// that go back are forged too, each line chained to the forged one
	// before it.
	prev := ""
	for i, want := range []string{"", "2300-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1600-01-01T00:00:00Z", "2026-07-02T01:00:00+13:00"} {
		e, err := eventlog.Decode([]byte(lines[i]))
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			prev = e.ID
			continue
		}
		e.At, _ = time.Parse(time.RFC3339, want)
		e.Prev = prev
		if e.ID, err = e.ContentID(); err != nil {
			t.Fatal(err)
		}
		prev = e.ID
		line, _ := e.Encode()
		if !strings.Contains(string(line), want) {
			t.Fatalf("set-up: %s", line)
		}
		lines[i] = strings.TrimSuffix(string(line), "\n")
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	v := f.catchUp("ledger")
	l2, _ := As[*hooked](v, "ledger")
	if got := l2.Sums["s"]; got != 2 || len(l2.IDs) != 2 {
		t.Fatalf("folded %d events summing %d, want the two at 2026", len(l2.IDs), got)
	}
	diffs, _, _, err := f.engine().Verify(context.Background())
	if err != nil || len(diffs) != 0 {
		t.Fatalf("verify: %v %v", diffs, err)
	}
	for at, want := range map[time.Time]bool{t0: true, {}: false, time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC): false,
		time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC): false, time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC): true} {
		if _, ok := KeptTime(at); ok != want && !at.IsZero() {
			t.Errorf("KeptTime(%v) = %v", at, ok)
		}
		if _, ok := Usable(&eventlog.Event{At: at}); ok != want {
			t.Errorf("Usable at %v = %v", at, ok)
		}
	}
}

// mappedLedger is a ledger read from a mapping of its snapshot
// (MappedUnmarshaler), counting the mappings and their releases.
type mappedLedger struct {
	*ledger
	mapped, released *atomic.Int64
	fail             bool
}

func (m *mappedLedger) UnmarshalChecked(b []byte) error { return m.UnmarshalState(b) }
func (m *mappedLedger) UnmarshalMapped(b []byte, release func()) error {
	m.mapped.Add(1)
	if m.fail {
		return errors.New("refused")
	}
	defer release() // json.Unmarshal copies what it keeps
	m.released.Add(1)
	return m.UnmarshalState(b)
}

// The engine hands a MappedUnmarshaler its snapshot mapped, and releases
// the mapping itself when the checksum does not match or the projection
// refuses it (then the state is folded from the log).
func TestMappedSnapshotIsReleasedOnRefusal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(f.writer("a", f.events), 5)
	var mapped, released atomic.Int64
	fail := false
	en := f.engine()
	en.Specs = []Spec{{Name: "ledger", Version: 1, New: func() Projection {
		return &mappedLedger{ledger: &ledger{Sums: map[string]int{}}, mapped: &mapped, released: &released, fail: fail}
	}}}
	ctx := context.Background()
	if _, err := en.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	open := func() *ledger {
		t.Helper()
		v, err := en.Open()
		if err == nil {
			_, err = v.CatchUp(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		p, _ := As[*mappedLedger](v, "ledger")
		return p.ledger
	}
	if l := open(); mapped.Load() != 1 || released.Load() != 1 || len(l.IDs) != 5 {
		t.Fatalf("mapped %d, released %d, %d ids", mapped.Load(), released.Load(), len(l.IDs))
	}
	path := en.snapshotPath("ledger")
	unmapped := func(what string) {
		t.Helper()
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			return // not Linux: nothing to look at
		}
		if bytes.Contains(maps, []byte(path)) {
			t.Fatalf("%s: the snapshot is still mapped", what)
		}
	}
	unmapped("read")
	fail = true
	if l := open(); mapped.Load() != 2 || len(l.IDs) != 5 {
		t.Fatalf("refused: mapped %d, %d ids", mapped.Load(), len(l.IDs))
	}
	unmapped("refused")
	fail = false
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 1 // the body, its size kept
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if l := open(); mapped.Load() != 2 || len(l.IDs) != 5 {
		t.Fatalf("damaged: mapped %d, %d ids", mapped.Load(), len(l.IDs))
	}
	unmapped("damaged")
}
