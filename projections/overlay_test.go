package projections

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

// overCounter is a counter whose overlay is its count: what a test needs
// to tell which events the next command loads and which it applies.
type overCounter struct {
	counter
	applied int // events applied since it was loaded
}

func (c *overCounter) Apply(e *eventlog.Event) error { c.applied++; return c.counter.Apply(e) }
func (c *overCounter) WriteOverlay(w io.Writer) error {
	_, err := io.WriteString(w, strconv.Itoa(c.n))
	return err
}
func (c *overCounter) UnmarshalOverlay(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err == nil {
		c.n = n
	}
	return err
}

// overlayEngine is countEngine's engine with the counter overlaid every
// overlay events.
func overlayEngine(t *testing.T, amortize, overlay int) (root string, log *eventlog.Log, en *Engine) {
	root, log, en = countEngine(t, amortize)
	en.Specs[0].Overlay = overlay
	en.Specs[0].New = func() Projection { return &overCounter{} }
	return root, log, en
}

// command is one command: a view opened, caught up and saved; it returns
// how many events the view loaded and how many it applied.
func command(t *testing.T, en *Engine) (loaded, applied int) {
	t.Helper()
	v, err := en.Open()
	if err != nil {
		t.Fatal(err)
	}
	loaded = v.Events()
	if _, err := v.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	return loaded, v.Get("count").(*overCounter).applied
}

// keptSave is a view kept open catching up and saving, as watch does.
func keptSave(t *testing.T, v *View) {
	t.Helper()
	if _, err := v.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
}

// A save put off writes an overlay once Overlay events are unsaved, and
// the next command loads it and applies only what came after; the save
// of the snapshot removes it.
func TestOverlays(t *testing.T) {
	t.Parallel()
	root, log, en := overlayEngine(t, 10, 3)
	over := filepath.Join(root, "state", "count.over")
	step := func(add, wantLoaded, wantApplied int, wantOverlay bool) {
		t.Helper()
		appendN(t, log, add)
		loaded, applied := command(t, en)
		if loaded != wantLoaded || applied != wantApplied {
			t.Fatalf("loaded %d events and applied %d, want %d and %d", loaded, applied, wantLoaded, wantApplied)
		}
		if _, err := os.Stat(over); (err == nil) != wantOverlay {
			t.Fatalf("overlay on disk: %v, want %v", err == nil, wantOverlay)
		}
	}
	step(100, 0, 100, false) // no snapshot: saved
	step(2, 100, 2, false)   // 2 unsaved: neither
	step(2, 100, 4, true)    // 4: an overlay
	step(1, 104, 1, true)    // loaded; 1 since the overlay: none written
	step(2, 104, 3, true)    // 3 since: a new one
	step(4, 107, 4, true)    // 11 of 111 unsaved, but 4 since the overlay
	step(1, 111, 1, false)   // 12 of 112: the snapshot saved, the overlay gone
	step(3, 112, 3, true)    // and a new one over it
	if b, _ := os.ReadFile(filepath.Join(root, "count.txt")); string(b) != "112" {
		t.Fatalf("count.txt %q: an overlay leaves the files as the snapshot had them", b)
	}
	// verify compares the state with the overlay; the files lag.
	diffs, stale, _, err := en.Verify(context.Background())
	if err != nil || len(diffs) != 0 || len(stale) != 1 {
		t.Fatalf("verify: %v, stale %v, %v", diffs, stale, err)
	}
}

// An overlay is a cache: one that does not hold is passed over, and the
// command catches up from the snapshot instead.
func TestOverlayThatDoesNotHold(t *testing.T) {
	t.Parallel()
	root, log, en := overlayEngine(t, 10, 3)
	over := filepath.Join(root, "state", "count.over")
	appendN(t, log, 100)
	command(t, en)
	appendN(t, log, 5)
	command(t, en) // overlay of 105 over the snapshot of 100
	good, err := os.ReadFile(over)
	if err != nil {
		t.Fatal(err)
	}
	content := good[:len(good)-crc32.Size]
	// edited is the overlay with old replaced, its checksum made again
	// when sealed: what only spool's own code could write.
	edited := func(old, new string, sealed bool) []byte {
		b := bytes.Replace(content, []byte(old), []byte(new), 1)
		if sealed {
			return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
		}
		return append(b, good[len(content):]...)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"its count changed", edited("\n105", "\n106", false)},
		{"cut short", good[:len(good)-1]},
		{"no checksum", content},
		{"another base", edited(`"base":"`, `"base":"0`, true)},
		{"another version", edited(`"version":1`, `"version":2`, true)},
		{"another format", edited(`{"format":1,`, `{"format":2,`, true)},
		{"a count that does not read", edited("\n105", "\nmany", true)},
		{"empty", nil},
	} {
		if err := os.WriteFile(over, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := en.Open()
		if err != nil {
			t.Fatal(err)
		}
		if v.Events() != 100 {
			t.Errorf("%s: loaded %d events, want the snapshot's 100", c.name, v.Events())
		}
		if _, err := v.CatchUp(context.Background()); err != nil || v.Get("count").(*overCounter).n != 105 {
			t.Errorf("%s: caught up to %d, %v", c.name, v.Get("count").(*overCounter).n, err)
		}
	}
	// An overlay of an older snapshot, left by a crash before its removal.
	if err := os.WriteFile(over, good, 0o644); err != nil {
		t.Fatal(err)
	}
	appendN(t, log, 10)
	if loaded, _ := command(t, en); loaded != 105 { // 15 of 115: the snapshot is saved
		t.Fatalf("loaded %d", loaded)
	}
	if err := os.WriteFile(over, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if loaded, applied := command(t, en); loaded != 115 || applied != 0 {
		t.Fatalf("over the new snapshot, the old overlay: loaded %d, applied %d", loaded, applied)
	}
}

// keptView is an engine whose snapshot holds 100 events, and a view of it
// kept open.
func keptView(t *testing.T) (root string, log *eventlog.Log, en *Engine, v *View) {
	t.Helper()
	root, log, en = overlayEngine(t, 10, 3)
	appendN(t, log, 100)
	command(t, en)
	v, err := en.Open()
	if err != nil {
		t.Fatal(err)
	}
	return root, log, en, v
}

// A view kept open (watch, the board) that saved its snapshot writes no
// overlay: its projection counts its changes from the snapshot it loaded,
// and an overlay goes over the one on disk.
func TestKeptViewAfterASave(t *testing.T) {
	t.Parallel()
	root, log, en, v := keptView(t)
	for _, n := range []int{4, 11, 5} { // an overlay, a save, then none
		appendN(t, log, n)
		keptSave(t, v)
	}
	if _, err := os.Stat(filepath.Join(root, "state", "count.over")); err == nil {
		t.Fatal("the kept view wrote an overlay over a snapshot it did not load")
	}
	if loaded, applied := command(t, en); loaded != 115 || applied != 5 {
		t.Fatalf("loaded %d, applied %d", loaded, applied)
	}
}

// Nor does a view kept open while another process saved the snapshot
// (spool replay): its overlay would go over a snapshot that is gone.
func TestKeptViewAfterAnotherSaved(t *testing.T) {
	t.Parallel()
	root, log, en, v := keptView(t)
	appendN(t, log, 2)
	r, err := en.Replay(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	keptSave(t, r)
	appendN(t, log, 3)
	keptSave(t, v)
	if _, err := os.Stat(filepath.Join(root, "state", "count.over")); err == nil {
		t.Fatal("the kept view wrote an overlay over a snapshot another process replaced")
	}
	if loaded, applied := command(t, en); loaded != 102 || applied != 3 {
		t.Fatalf("loaded %d, applied %d", loaded, applied)
	}
}
