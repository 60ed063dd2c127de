package projections

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// counter counts events; its file says how many.
type counter struct{ n int }

func (c *counter) Apply(*eventlog.Event) error   { c.n++; return nil }
func (c *counter) MarshalState() ([]byte, error) { return []byte(strconv.Itoa(c.n)), nil }
func (c *counter) UnmarshalState(b []byte) error {
	var err error
	c.n, err = strconv.Atoi(string(b))
	return err
}
func (c *counter) Files() ([]File, error) {
	return []File{{Path: "count.txt", Data: []byte(strconv.Itoa(c.n))}}, nil
}

func appendN(t *testing.T, l *eventlog.Log, n int) {
	t.Helper()
	drafts := make([]eventlog.Draft, n)
	for i := range drafts {
		drafts[i] = eventlog.Draft{Type: "test.tick"}
	}
	if _, err := l.Append(context.Background(), time.Unix(0, 0), "t", drafts, eventlog.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// countEngine is an engine of one projection, a counter saved every
// 1/amortize of its events (0: at every catch-up), over a log in a
// directory of its own.
func countEngine(t *testing.T, amortize int) (root string, log *eventlog.Log, en *Engine) {
	root = t.TempDir()
	log = eventlog.Open(eventlog.Options{Dir: filepath.Join(root, "events"), PrivateDir: filepath.Join(root, "private")})
	en = &Engine{Log: log, Root: root, StateDir: filepath.Join(root, "state"),
		Specs: []Spec{{Name: "count", Version: 1, Amortize: amortize, New: func() Projection { return &counter{} }}}}
	return root, log, en
}

// An amortized projection saves only when more than 1/Amortize of its events
// are unsaved; in between, commands catch up in memory and see every event.
func TestAmortizedSaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, log, en := countEngine(t, 10)
	onDisk := func() string {
		b, _ := os.ReadFile(filepath.Join(root, "count.txt"))
		return string(b)
	}
	step := func(add int, wantSeen int, wantSave bool, wantDisk string) {
		t.Helper()
		appendN(t, log, add)
		v, err := en.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		if got := v.Get("count").(*counter).n; got != wantSeen {
			t.Fatalf("seen %d events, want %d", got, wantSeen)
		}
		if v.NeedsSave() != wantSave {
			t.Fatalf("NeedsSave = %v, want %v", v.NeedsSave(), wantSave)
		}
		if err := v.Save(); err != nil {
			t.Fatal(err)
		}
		if got := onDisk(); got != wantDisk {
			t.Fatalf("on disk %q, want %q", got, wantDisk)
		}
	}
	step(100, 100, true, "100") // no snapshot yet: always saved
	step(5, 105, false, "100")  // 5 unsaved of 105: within a tenth
	step(5, 110, false, "100")  // 10 of 110: still within
	step(2, 112, true, "112")   // 12 of 112: saved
	step(1, 113, false, "112")  // and lagging again
	v, err := en.Replay(ctx)    // a rebuild always saves
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil || onDisk() != "113" {
		t.Fatalf("replay saved %q, %v", onDisk(), err)
	}
	diffs, stale, _, err := en.Verify(ctx)
	if err != nil || len(diffs) != 0 || len(stale) != 0 {
		t.Fatalf("verify: %v %v %v", diffs, stale, err)
	}
	appendN(t, log, 1)
	v, _ = en.Open()
	v.CatchUp(ctx)
	v.Save()
	if _, stale, _, _ := en.Verify(ctx); !bytes.Equal([]byte(stale[0]), []byte("count")) {
		t.Fatalf("a lagging projection is reported stale, got %v", stale)
	}
}

// A writer file touched in place (same inode and bytes, another mtime, as
// git or an editor may leave it) costs one prefix checksum, not one per
// command: the catch-up stamps the mark with the file's stat again and the
// snapshot is saved, even for a projection whose saves are amortized.
func TestTouchedFileIsChecksummedOnce(t *testing.T) {
	ctx := context.Background()
	_, log, en := countEngine(t, 1000)
	// read is what a command that only reads does (store.Read).
	read := func() {
		t.Helper()
		v, err := en.Open()
		if err != nil {
			t.Fatal(err)
		}
		stale, err := v.Stale()
		if err != nil {
			t.Fatal(err)
		}
		if stale {
			if _, err := v.CatchUp(ctx); err != nil {
				t.Fatal(err)
			}
			if v.NeedsSave() {
				if _, err := v.CatchUp(ctx); err != nil { // again, under the lock
					t.Fatal(err)
				}
				if err := v.Save(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := v.Get("count").(*counter).n; got != 20 {
			t.Fatalf("seen %d events, want 20", got)
		}
	}
	appendN(t, log, 20)
	read()
	files, err := log.Files()
	if err != nil || len(files) != 1 {
		t.Fatal(files, err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(files[0], later, later); err != nil {
		t.Fatal(err)
	}
	before := prefixChecks.Load()
	read()
	read()
	read()
	if n := prefixChecks.Load() - before; n != 1 {
		t.Fatalf("the touched file's prefix was checksummed %d times in three reads, want 1", n)
	}
	// The saved mark has the file's new stat: the next command's check is a stat.
	cp, ok := en.peekCheckpoint(en.Specs[0])
	st, _ := os.Stat(files[0])
	if m := cp.Marks[eventlog.WriterOf(files[0])]; !ok || m.MTime != st.ModTime().UnixNano() {
		t.Fatalf("saved mark %+v, file mtime %d", m, st.ModTime().UnixNano())
	}
}

// KnownStarts gives where the latest checkpoint says each writer file's
// applied lines end, as a read of the file finds them, and only while the
// file holds them as a catch-up trusts it: grown, yes; changed in place at
// the same size, or its last applied line changed, or replaced, no.
func TestKnownStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, log, en := countEngine(t, 0)
	if got := en.KnownStarts(); len(got) != 0 {
		t.Fatalf("no snapshot yet: %v", got)
	}
	appendN(t, log, 7)
	v, err := en.Replay(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	files, _ := log.Files()
	w := eventlog.WriterOf(files[0])
	var end eventlog.Start // where a whole read stands after the last line
	r, err := log.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, pos, err := r.Next()
		if err != nil {
			break
		}
		end = pos.Start()
	}
	r.Close()
	if got := en.KnownStarts(); got[w] != end {
		t.Fatalf("known %+v, want %+v", got[w], end)
	}
	saved, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// An earlier line changed in place, the size the same: the stat no
	// longer says the file is the one saved (a catch-up checksums it).
	if err := os.WriteFile(files[0], bytes.Replace(saved, []byte(`"test.tick"`), []byte(`"test.tack"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := en.KnownStarts(); len(got) != 0 {
		t.Fatalf("a line changed in place, the same size: known %v", got)
	}
	if err := os.WriteFile(files[0], saved, 0o644); err != nil {
		t.Fatal(err)
	}
	appendN(t, log, 3) // grown: known again
	if got := en.KnownStarts(); got[w] != end {
		t.Fatalf("after an append: known %+v, want %+v", got[w], end)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	edited := slices.Clone(lines)
	edited[6] = bytes.Replace(edited[6], []byte(`"test.tick"`), []byte(`"test.tock"`), 1)
	if err := os.WriteFile(files[0], bytes.Join(edited, nil), 0o644); err != nil { // in place: the last line applied changed
		t.Fatal(err)
	}
	if got := en.KnownStarts(); len(got) != 0 {
		t.Fatalf("the last line applied changed in place: known %v", got)
	}
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := en.KnownStarts(); got[w] != end {
		t.Fatalf("put back: known %+v, want %+v", got[w], end)
	}
	other := bytes.Replace(b, []byte(`"test.tick"`), []byte(`"test.tock"`), 1)
	if err := os.WriteFile(files[0]+".new", other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(files[0]+".new", files[0]); err != nil { // replaced, as git does
		t.Fatal(err)
	}
	if got := en.KnownStarts(); len(got) != 0 {
		t.Fatalf("a replaced file: known %v", got)
	}
}
