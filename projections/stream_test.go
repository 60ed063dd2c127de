package projections

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/table"
)

// streamer writes its state and files as streams (StateWriter, FileWriter)
// as well as whole, the same bytes; calls counts the streamed writes.
type streamer struct {
	ids   []string
	calls *int
}

func (s *streamer) Apply(e *eventlog.Event) error { s.ids = append(s.ids, e.ID); return nil }
func (s *streamer) MarshalState() ([]byte, error) { return []byte(strings.Join(s.ids, "\n")), nil }
func (s *streamer) UnmarshalState(b []byte) error {
	s.ids = nil
	if len(b) > 0 {
		s.ids = strings.Split(string(b), "\n")
	}
	return nil
}

func (s *streamer) WriteState(w io.Writer) error {
	*s.calls++
	for i, id := range s.ids {
		if i > 0 {
			io.WriteString(w, "\n")
		}
		io.WriteString(w, id)
	}
	return nil
}

func (s *streamer) Files() ([]File, error) {
	return []File{{Path: "out/ids.txt", Data: []byte(s.list()), WorkTree: true}, {Path: ".spool/state/n.txt", Data: []byte(s.count())}}, nil
}

func (s *streamer) WriteFiles(emit func(path string, workTree bool, write func(io.Writer) error) error) error {
	*s.calls++
	if err := emit("out/ids.txt", true, func(w io.Writer) error { _, err := io.WriteString(w, s.list()); return err }); err != nil {
		return err
	}
	return emit(".spool/state/n.txt", false, func(w io.Writer) error { _, err := io.WriteString(w, s.count()); return err })
}

func (s *streamer) list() string  { return strings.Join(s.ids, ",") + "\n" }
func (s *streamer) count() string { return fmt.Sprint(len(s.ids)) }

// Save streams what a StateWriter and a FileWriter write, the same bytes as
// a projection that returns them whole; a tracked file whose bytes have not
// changed is left as it is; Verify compares the streams with the disk.
func TestSaveAndVerifyStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	l := replayLog(t, root, 30, 3)
	calls := 0
	en := &Engine{Log: l, Root: root, StateDir: filepath.Join(root, ".spool", "state"),
		Specs: []Spec{{Name: "ids", Version: 1, New: func() Projection { return &streamer{calls: &calls} }}}}
	v, err := en.Replay(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Save(); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Fatalf("%d streamed writes, want the state's (hashed, then written) and the files'", calls)
	}
	want, _ := v.Get("ids").(*streamer).Files()
	for _, f := range want {
		if got, err := os.ReadFile(filepath.Join(root, f.Path)); err != nil || string(got) != string(f.Data) {
			t.Fatalf("%s: %q, %v; want %q", f.Path, got, err, f.Data)
		}
	}
	v2, err := en.Open()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v2.Get("ids").MarshalState(); string(got) != strings.Join(v.Get("ids").(*streamer).ids, "\n") || v2.Events() != 30 {
		t.Fatalf("the snapshot reads back as %q, %d events", got, v2.Events())
	}
	tracked := filepath.Join(root, "out", "ids.txt")
	appendN(t, l, 1)
	v2.CatchUp(ctx)
	os.WriteFile(tracked, []byte("edited\n"), 0o644) // the next save must restore it
	edited, _ := os.Stat(tracked)
	if err := v2.Save(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(tracked)
	if os.SameFile(edited, after) {
		t.Fatal("a changed tracked file was not rewritten")
	}
	// Saved again with the same files (and a checkpoint that miscounts, for
	// Verify below): nothing tracked to rewrite.
	v3, _ := en.Replay(ctx)
	v3.items[0].cp.Events--
	if err := v3.Save(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(tracked); !os.SameFile(after, again) {
		t.Fatal("an unchanged tracked file was rewritten")
	}
	if diffs, stale, _, err := en.Verify(ctx); err != nil || len(stale) != 0 || len(diffs) != 1 || !strings.Contains(diffs[0].Problem, "30 events applied, replay has 31") {
		t.Fatalf("Verify = %v, stale %v, %v", diffs, stale, err)
	}
}

// Verify reads the log once: a snapshot that is missing or that would be
// rebuilt from the whole log is reported stale, not rebuilt a second time
// beside the fresh replay; one that is behind is still caught up and
// compared (the incremental fold against the fresh one).
func TestVerifyReplaysOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.add(f.writer("a", f.events), 6)
	f.catchUp()
	snap := filepath.Join(f.root, ".spool", "state", "ledger.snap")
	good, _ := os.ReadFile(snap)

	os.Remove(snap)
	applied := 0
	f.hookFor = func(*eventlog.Event) { applied++ }
	diffs, stale, _, err := f.engine().Verify(context.Background())
	if err != nil || len(diffs) != 0 || !slices.Equal(stale, []string{"ledger"}) {
		t.Fatalf("Verify = %v, stale %v, %v", diffs, stale, err)
	}
	if applied != 6 {
		t.Fatalf("the ledger applied %d events for a log of 6: the log was replayed more than once", applied)
	}

	// Behind, and tampered: caught up in memory, the difference found.
	os.WriteFile(snap, resum(t, bytes.Replace(good, []byte(`"s0":`), []byte(`"s0":1`), 1)), 0o644)
	f.add(f.writer("a", f.events), 1)
	diffs, stale, _, err = f.engine().Verify(context.Background())
	if err != nil || !slices.Contains(stale, "ledger") {
		t.Fatalf("Verify = %v, stale %v, %v", diffs, stale, err)
	}
	found := false
	for _, d := range diffs {
		found = found || d.Projection == "ledger" && strings.Contains(d.Problem, "7 events applied, replay has 7")
	}
	if !found {
		t.Fatalf("a tampered snapshot behind the log was not caught: %v", diffs)
	}
}

// A file larger than what Verify decodes to name the first difference as a
// JSON path is named by line and byte, read as it is compared.
func TestVerifyLargeFileDifference(t *testing.T) {
	f := newFixture(t)
	f.add(f.writer("a", f.events), 6)
	f.catchUp()
	path := filepath.Join(f.root, "out", "ledger.json")
	b, _ := os.ReadFile(path)
	i := bytes.Index(b, []byte(`"s1"`))
	line := bytes.Count(b[:i], []byte{'\n'}) + 1
	os.WriteFile(path, bytes.Replace(b, []byte(`"s1"`), []byte(`"S1"`), 1), 0o644)
	mustDiffer(t, f, "ledger", "out/ledger.json", `differs from a fresh replay: sums.S1 is`)
	defer func(max int) { detailMax = max }(detailMax)
	detailMax = 16
	mustDiffer(t, f, "ledger", "out/ledger.json", fmt.Sprintf("differs from a fresh replay: first at line %d (byte %d)", line, i+1))
	os.WriteFile(path, b[:len(b)-1], 0o644) // shorter
	mustDiffer(t, f, "ledger", "out/ledger.json", fmt.Sprintf("first at line %d (byte %d)", bytes.Count(b, []byte{'\n'}), len(b)-1))
	os.WriteFile(path, append(b, ' '), 0o644) // longer
	mustDiffer(t, f, "ledger", "out/ledger.json", fmt.Sprintf("first at line %d (byte %d)", bytes.Count(b, []byte{'\n'})+1, len(b)))
}

// frozen is a counter that is a Freezer, large as it says.
type frozen struct {
	counter
	large bool
}

func (f *frozen) Freeze() bool { return f.large }

// A Freezer's files run on a second goroutine: a damaged record they meet
// (a *fault.Error panic, as a table read raises it) is the save's error,
// as on the first goroutine, not a crash of the process; OnLargeSave's
// done runs once they are written, for a large state only.
func TestAlongsideReturnsAFaultAndThaws(t *testing.T) {
	t.Parallel()
	damaged := table.Corrupt("sp-1", errors.New("its checksum does not match"))
	calls := 0
	onLarge := func() func() { calls++; return func() { calls += 10 } }
	for _, large := range []bool{false, true} {
		calls = 0
		wait := alongside(onLarge, &frozen{large: large}, func() error { panic(damaged) })
		if err := wait(); !errors.Is(err, damaged) {
			t.Fatalf("large %v: the files' panic: %v, want the fault itself", large, err)
		}
		if want := map[bool]int{false: 0, true: 11}[large]; calls != want {
			t.Errorf("large %v: OnLargeSave and its done ran %d (1 + 10 each), want %d", large, calls, want)
		}
	}
}
