package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

var testAt = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// testLog is a log in a temporary directory that records its warnings.
type testLog struct {
	*Log
	mu    sync.Mutex
	warns []string
}

func newTestLog(t *testing.T) *testLog {
	t.Helper()
	root := t.TempDir()
	return openTestLog(filepath.Join(root, "events"), filepath.Join(root, "private"))
}

func openTestLog(dir, private string) *testLog {
	tl := &testLog{}
	tl.Log = Open(Options{Dir: dir, PrivateDir: private, LockTimeout: 5 * time.Second,
		Warn: func(msg string) { tl.mu.Lock(); tl.warns = append(tl.warns, msg); tl.mu.Unlock() }})
	return tl
}

func (tl *testLog) warnings() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]string(nil), tl.warns...)
}

func appendN(t *testing.T, l *Log, n int) []Event {
	t.Helper()
	var out []Event
	for i := range n {
		evs, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "test.appended", Subject: fmt.Sprint(i), Data: map[string]int{"i": i}}}, AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
	}
	return out
}

// readAll reads the whole log in replay order.
func readAll(t *testing.T, l *Log) []*Event {
	t.Helper()
	events, err := tryReadAll(l)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func tryReadAll(l *Log) ([]*Event, error) {
	r, err := l.Read(nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var events []*Event
	for {
		e, _, err := r.Next()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		events = append(events, e)
	}
}

func writerFile(t *testing.T, l *Log) string {
	t.Helper()
	w, err := l.WriterID()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(l.Dir(), w+Ext)
}

func mustCheckClean(t *testing.T, l *Log) *CheckReport {
	t.Helper()
	rep, err := l.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("Check found problems: %v", rep.Problems)
	}
	return rep
}

func TestAppendAndRead(t *testing.T) {
	l := newTestLog(t)
	appended := appendN(t, l.Log, 5)
	got := readAll(t, l.Log)
	if len(got) != 5 {
		t.Fatalf("read %d events, want 5", len(got))
	}
	for i, e := range got {
		if e.ID != appended[i].ID || e.Seq != uint64(i+1) || e.LC != uint64(i+1) || e.Subject != fmt.Sprint(i) {
			t.Errorf("event %d: %+v", i, e)
		}
		if want, _ := e.computeID(); want != e.ID {
			t.Errorf("event %d: id %s is not the content hash %s", i, e.ID, want)
		}
	}
	rep := mustCheckClean(t, l.Log)
	if rep.Events != 5 || rep.Files != 1 {
		t.Fatalf("Check = %+v", rep)
	}
}

func TestAppendRefusesInvalidDrafts(t *testing.T) {
	l := newTestLog(t)
	for _, d := range []Draft{
		{Type: "NoDots"},
		{Type: "task.created", Data: func() {}},
		{Type: "task.created", Data: jsonRaw(`{"broken":`)},
	} {
		_, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "ok.first"}, d}, AppendOptions{})
		if !errors.Is(err, ErrInvalidDraft) {
			t.Errorf("draft %+v: err = %v, want ErrInvalidDraft", d, err)
		}
	}
	if events := readAll(t, l.Log); len(events) != 0 {
		t.Fatalf("a refused batch appended %d events", len(events))
	}
}

func TestTornTailRepair(t *testing.T) {
	l := newTestLog(t)
	appendN(t, l.Log, 3)
	path := writerFile(t, l.Log)
	intact, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := []byte(`{"v":1,"id":"half a line, the writer was kil`)
	if err := os.WriteFile(path, append(append([]byte{}, intact...), torn...), 0o644); err != nil {
		t.Fatal(err)
	}

	// Readers skip the torn tail and say so; Check reports it.
	r, err := l.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Torn(); len(got) != 1 || got[0] != path {
		t.Fatalf("Torn() = %v", got)
	}
	r.Close()
	rep, err := l.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "torn tail") || rep.Problems[0].Line != 4 {
		t.Fatalf("Check problems = %v", rep.Problems)
	}

	// The next Begin repairs it: backup, truncate, warn.
	s, err := l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, intact) {
		t.Fatalf("after repair the file is\n%q\nwant\n%q", after, intact)
	}
	backups, _ := filepath.Glob(filepath.Join(l.opt.PrivateDir, "torn", "*"))
	if len(backups) != 1 {
		t.Fatalf("backups: %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, torn) {
		t.Fatalf("backup holds %q, want %q", b, torn)
	}
	if w := l.warnings(); len(w) != 1 || !strings.Contains(w[0], "torn tail") || !strings.Contains(w[0], backups[0]) {
		t.Fatalf("warnings = %q", w)
	}
	if s.Version() != s.Writer()+":3" {
		t.Fatalf("version after repair = %q", s.Version())
	}
	evs, err := s.Append(testAt, "ada", []Draft{{Type: "test.after"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != 4 {
		t.Fatalf("seq after repair = %d, want 4", evs[0].Seq)
	}
	mustCheckClean(t, l.Log)
}

func TestTornTailOnlyLine(t *testing.T) {
	// A file that is nothing but a torn line is emptied, not deleted.
	l := newTestLog(t)
	path := writerFile(t, l.Log)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(`{"v":1,"id"`), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "test.first"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq != 1 || evs[0].LC != 1 {
		t.Fatalf("first event after repair: %+v", evs[0])
	}
	mustCheckClean(t, l.Log)
}

func TestMidFileCorruption(t *testing.T) {
	for _, c := range []struct {
		name, bad string
		want      error
	}{
		{"garbage", "this is not json\n", ErrCorrupt},
		{"newer envelope", strings.Replace(validLine, `"v":1`, `"v":2`, 1) + "\n", ErrNewerVersion},
		{"blank line", "\n", ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 4)
			path := writerFile(t, l.Log)
			b, _ := os.ReadFile(path)
			lines := bytes.SplitAfter(b, []byte{'\n'})
			lines[1] = []byte(c.bad) // line 2 of 4
			if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
				t.Fatal(err)
			}
			events, err := tryReadAll(l.Log)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Read: err = %v, want a *LineError", err)
			}
			if le.Path != path || le.Line != 2 {
				t.Fatalf("LineError at %s:%d, want %s:2", le.Path, le.Line, path)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), path+":2:") {
				t.Fatalf("message %q does not name file and line", err)
			}
			if len(events) != 1 {
				t.Fatalf("read %d events before the bad line, want 1", len(events))
			}
			rep, err := l.Check()
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) == 0 || rep.Problems[0].Line != 2 {
				t.Fatalf("Check problems = %v", rep.Problems)
			}
		})
	}
}

func TestCorruptLastLineRefusesBegin(t *testing.T) {
	// The last line is what Begin reads to continue seq and lc: a bad one
	// must stop the append, not be repaired away as a torn tail.
	l := newTestLog(t)
	appendN(t, l.Log, 2)
	path := writerFile(t, l.Log)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"v\":1}\n")
	f.Close()
	before, _ := os.ReadFile(path)
	_, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "test.x"}}, AppendOptions{})
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want a corrupt *LineError at line 3", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused append changed the file")
	}
}

func TestReadOtherWritersFileWithWrongWriter(t *testing.T) {
	l := newTestLog(t)
	appendN(t, l.Log, 1)
	b, _ := os.ReadFile(writerFile(t, l.Log))
	if err := os.WriteFile(filepath.Join(l.Dir(), "impostor"+Ext), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := tryReadAll(l.Log)
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, ErrCorrupt) || WriterOf(le.Path) != "impostor" {
		t.Fatalf("err = %v", err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	first, err := l.Append(ctx, testAt, "ada", []Draft{{Type: "hook.fired", Subject: "a", Idem: "commit-1"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l.Log, 2)
	path := writerFile(t, l.Log)
	before, _ := os.ReadFile(path)

	// A retry, at another time and by another actor, appends nothing.
	again, err := l.Append(ctx, testAt.Add(time.Hour), "bob", []Draft{{Type: "hook.fired", Subject: "b", Idem: "commit-1"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].ID != first[0].ID || again[0].Subject != "a" || again[0].Seq != 1 {
		t.Fatalf("retry returned %+v, want the first event %+v", again, first[0])
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("an idempotent retry appended")
	}

	// One batch: a known key, a new key twice, and a draft without a key.
	out, err := l.Append(ctx, testAt, "ada", []Draft{
		{Type: "hook.fired", Idem: "commit-1"},
		{Type: "hook.fired", Subject: "x", Idem: "commit-2"},
		{Type: "note.added"},
		{Type: "hook.fired", Subject: "y", Idem: "commit-2"},
	}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 {
		t.Fatalf("got %d events", len(out))
	}
	if out[0].ID != first[0].ID {
		t.Errorf("known key: got %+v", out[0])
	}
	if out[1].Seq != 4 || out[2].Seq != 5 || out[3].ID != out[1].ID || out[3].Subject != "x" {
		t.Errorf("batch = %+v", out)
	}
	events := readAll(t, l.Log)
	if len(events) != 5 {
		t.Fatalf("log holds %d events, want 5", len(events))
	}
	mustCheckClean(t, l.Log)

	// A key is found in another writer's file too (a merged clone).
	other := openTestLog(l.Dir(), filepath.Join(t.TempDir(), "other"))
	out, err = other.Append(ctx, testAt, "bob", []Draft{{Type: "hook.fired", Idem: "commit-2"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].ID != events[3].ID {
		t.Fatalf("other writer: got %+v, want %+v", out[0], events[3])
	}
	if files, _ := l.Files(); len(files) != 1 {
		t.Fatalf("the other writer appended: %v", files)
	}

	// A key that only appears inside data is not a key.
	out, err = l.Append(ctx, testAt, "ada", []Draft{
		{Type: "note.added", Data: map[string]string{"idem": "commit-3"}},
		{Type: "hook.fired", Idem: "commit-3"},
	}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out[1].ID == out[0].ID || out[1].Idem != "commit-3" {
		t.Fatalf("data field mistaken for a key: %+v", out)
	}
}

func TestIdempotencyKeyNeedingEscapes(t *testing.T) {
	l := newTestLog(t)
	for _, key := range []string{`quo"te`, `back\slash`, "tab\tnew\nline", "<html>&", "line\u2028sep", "ünï"} {
		a, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "x.y", Idem: key}}, AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "x.y", Idem: key}}, AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a[0].ID != b[0].ID {
			t.Errorf("key %q appended twice", key)
		}
	}
	if n := len(readAll(t, l.Log)); n != 6 {
		t.Fatalf("%d events, want 6", n)
	}
}

func TestExpectedVersion(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	s, err := l.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	empty := s.Version()
	if empty != "" {
		t.Fatalf("empty log version = %q", empty)
	}
	if _, err := s.Append(testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{ExpectVersion: &empty}); err != nil {
		t.Fatal(err)
	}
	v1 := s.Version()
	if v1 != s.Writer()+":1" {
		t.Fatalf("version = %q", v1)
	}
	s.Close()

	// Another writer appends; the first one's view is now out of date.
	other := openTestLog(l.Dir(), filepath.Join(t.TempDir(), "other"))
	appendN(t, other.Log, 1)

	s, err = l.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := writerFile(t, l.Log)
	before, _ := os.ReadFile(path)
	_, err = s.Append(testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{ExpectVersion: &v1})
	if !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("err = %v, want ErrVersionMismatch", err)
	}
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Expected != v1 || ve.Actual != s.Version() {
		t.Fatalf("err = %#v, want a *VersionError from %q to %q", err, v1, s.Version())
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused append changed the file")
	}
	current := s.Version()
	if !strings.Contains(current, ",") {
		t.Fatalf("version of two writers = %q", current)
	}
	if _, err := s.Append(testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{ExpectVersion: &current}); err != nil {
		t.Fatal(err)
	}
	// The session follows its own appends.
	next := s.Version()
	if next == current {
		t.Fatal("version did not move after an append")
	}
	if _, err := s.Append(testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{ExpectVersion: &next}); err != nil {
		t.Fatal(err)
	}
}

func TestLamportClockFollowsOtherWriters(t *testing.T) {
	root := t.TempDir()
	a := openTestLog(filepath.Join(root, "events"), filepath.Join(root, "a"))
	b := openTestLog(filepath.Join(root, "events"), filepath.Join(root, "b"))
	appendN(t, a.Log, 5)
	evs := appendN(t, b.Log, 1)
	if evs[0].LC != 6 || evs[0].Seq != 1 {
		t.Fatalf("b's first event: lc %d seq %d, want lc 6 seq 1", evs[0].LC, evs[0].Seq)
	}
	evs = appendN(t, a.Log, 1)
	if evs[0].LC != 7 || evs[0].Seq != 6 {
		t.Fatalf("a's sixth event: lc %d seq %d, want lc 7 seq 6", evs[0].LC, evs[0].Seq)
	}
	events := readAll(t, a.Log)
	for i := 1; i < len(events); i++ {
		if !events[i-1].Before(events[i]) {
			t.Fatalf("read out of order at %d", i)
		}
	}
}

func TestLockTimeout(t *testing.T) {
	l := newTestLog(t)
	appendN(t, l.Log, 1)
	holder := flock.New(l.LockPath())
	if ok, err := holder.TryLock(); !ok || err != nil {
		t.Fatalf("hold the lock: %v %v", ok, err)
	}
	short := Open(Options{Dir: l.opt.Dir, PrivateDir: l.opt.PrivateDir, LockTimeout: 50 * time.Millisecond})
	path := writerFile(t, l.Log)
	before, _ := os.ReadFile(path)
	_, err := short.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{})
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("err = %v, want ErrLockTimeout", err)
	}
	if !strings.Contains(err.Error(), l.LockPath()) {
		t.Errorf("message %q does not name the lock", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("appended without the lock")
	}
	// A cancelled context is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := short.Begin(ctx); err == nil || errors.Is(err, ErrLockTimeout) {
		t.Fatalf("cancelled: err = %v", err)
	}

	holder.Unlock()
	if _, err := short.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{}); err != nil {
		t.Fatalf("after release: %v", err)
	}
	if _, err := os.Stat(l.LockPath()); err != nil {
		t.Fatalf("the lock file must stay: %v", err)
	}
}

func TestWriterID(t *testing.T) {
	l := newTestLog(t)
	a, err := l.WriterID()
	if err != nil {
		t.Fatal(err)
	}
	if !ValidWriter(a) || len(a) != 16 {
		t.Fatalf("writer id %q", a)
	}
	if b, _ := l.WriterID(); b != a {
		t.Fatalf("writer id changed: %q then %q", a, b)
	}
	if b, _ := openTestLog(l.Dir(), filepath.Join(t.TempDir(), "x")).WriterID(); b == a {
		t.Fatal("two clones got the same writer id")
	}
}

func TestWriterIDConcurrentFirstUse(t *testing.T) {
	l := newTestLog(t)
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := l.WriterID()
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("racing first uses disagree: %v", ids)
		}
	}
}

func TestWriterIDFileLeftEmptyByACrash(t *testing.T) {
	// A process killed between creating the writer file and writing it
	// leaves it empty; the clone must still be able to append.
	for _, content := range []string{"", "\n", "not a valid id!\n"} {
		l := newTestLog(t)
		os.MkdirAll(l.opt.PrivateDir, 0o755)
		if err := os.WriteFile(filepath.Join(l.opt.PrivateDir, "writer"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("content %q: %v", content, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("content %q: Append hangs", content)
		}
		id, err := l.WriterID()
		if err != nil || !ValidWriter(id) {
			t.Fatalf("content %q: writer id %q, %v", content, id, err)
		}
		if again, _ := l.WriterID(); again != id {
			t.Fatalf("writer id not stable: %q then %q", id, again)
		}
	}
}

func TestLogAcrossOpenHandles(t *testing.T) {
	// Two handles on one clone (two commands) share the writer, seq and lc.
	root := t.TempDir()
	a := openTestLog(filepath.Join(root, "events"), filepath.Join(root, "p"))
	b := openTestLog(filepath.Join(root, "events"), filepath.Join(root, "p"))
	appendN(t, a.Log, 2)
	evs := appendN(t, b.Log, 1)
	if evs[0].Seq != 3 || evs[0].LC != 3 {
		t.Fatalf("second handle: %+v", evs[0])
	}
	if files, _ := a.Files(); len(files) != 1 {
		t.Fatalf("files %v", files)
	}
}

func TestFilesIgnoresOtherEntries(t *testing.T) {
	l := newTestLog(t)
	appendN(t, l.Log, 1)
	os.WriteFile(filepath.Join(l.Dir(), ".gitkeep"), nil, 0o644)
	os.WriteFile(filepath.Join(l.Dir(), "README.md"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(l.Dir(), "sub"+Ext), 0o755)
	files, err := l.Files()
	if err != nil || len(files) != 1 {
		t.Fatalf("Files = %v, %v", files, err)
	}
	if got := readAll(t, l.Log); len(got) != 1 {
		t.Fatalf("read %d", len(got))
	}
	// No directory at all is an empty log.
	empty := openTestLog(filepath.Join(t.TempDir(), "none"), t.TempDir())
	if files, err := empty.Files(); err != nil || files != nil {
		t.Fatalf("Files of a missing dir = %v, %v", files, err)
	}
	if got := readAll(t, empty.Log); len(got) != 0 {
		t.Fatal("events in a missing dir")
	}
}

func TestReadFromOffsets(t *testing.T) {
	l := newTestLog(t)
	appendN(t, l.Log, 5)
	r, err := l.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	var third Pos
	for i := 0; i < 3; i++ {
		_, pos, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		third = pos
	}
	r.Close()
	b, _ := os.ReadFile(writerFile(t, l.Log))
	line := bytes.SplitAfter(b, []byte{'\n'})[2]
	if third.Line != 3 || third.Len != int64(len(line)) || third.CRC != LineCRC(line) || !bytes.HasSuffix(b[:third.Offset], line) {
		t.Fatalf("pos of the third event = %+v", third)
	}
	r, err = l.Read(map[string]Start{third.Writer: third.Start()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	e, pos, err := r.Next()
	if err != nil || e.Seq != 4 || pos.Line != 4 {
		t.Fatalf("resumed at %+v %+v %v", e, pos, err)
	}
}

// A resume reads the line before its offset again: a line changed in place
// with its length kept (and still an event) is refused as corrupt, as one
// that no longer decodes is, never read as the line read before.
func TestResumeAfterChangedLine(t *testing.T) {
	cases := []struct {
		name, old, new string
	}{
		{"still an event", `"i":2`, `"i":7`},
		{"no longer an event", `"i":2`, `"i"+2`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 5)
			r, err := l.Read(nil)
			if err != nil {
				t.Fatal(err)
			}
			var third Pos
			for range 3 {
				if _, third, err = r.Next(); err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
			path := writerFile(t, l.Log)
			b, _ := os.ReadFile(path)
			line := b[third.Offset-third.Len : third.Offset]
			if !bytes.Contains(line, []byte(c.old)) {
				t.Fatalf("line 3 %q has no %s", line, c.old)
			}
			copy(line, bytes.Replace(line, []byte(c.old), []byte(c.new), 1))
			f, _ := os.OpenFile(path, os.O_WRONLY, 0) // in place: same inode, same size
			f.WriteAt(b, 0)
			f.Close()
			r, err = l.Read(map[string]Start{third.Writer: third.Start()})
			if err == nil {
				e, pos, nerr := r.Next()
				r.Close()
				t.Fatalf("resumed after a changed line: %+v at %+v, %v", e, pos, nerr)
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want corrupt line 3", err)
			}
		})
	}
}

func TestReadRefusesOverlongLine(t *testing.T) {
	// Garbage, and a well-formed event a little over the limit (Append
	// refuses to write one): both corrupt, with the hint every other
	// broken line has. A torn tail of any length is still a torn tail.
	cases := []struct {
		name string
		line func(t *testing.T, l *Log) []byte
	}{
		{"garbage", func(*testing.T, *Log) []byte {
			return append(bytes.Repeat([]byte("x"), 2*MaxLine), '\n')
		}},
		{"valid event", func(t *testing.T, l *Log) []byte {
			w, err := l.WriterID()
			if err != nil {
				t.Fatal(err)
			}
			return overlongEvent(t, w, 2, 100)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 1)
			path := writerFile(t, l.Log)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(c.line(t, l.Log))
			f.Close()
			_, err := tryReadAll(l.Log)
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "longer than") {
				t.Fatalf("err = %v", err)
			}
			if le.Hint != CorruptHint {
				t.Fatalf("hint = %q, want CorruptHint", le.Hint)
			}
		})
	}
	t.Run("torn", func(t *testing.T) {
		l := newTestLog(t)
		appendN(t, l.Log, 1)
		f, _ := os.OpenFile(writerFile(t, l.Log), os.O_APPEND|os.O_WRONLY, 0)
		f.Write(bytes.Repeat([]byte("x"), 2*MaxLine))
		f.Close()
		if events, err := tryReadAll(l.Log); err != nil || len(events) != 1 {
			t.Fatalf("%d events, %v; want 1 and the torn tail skipped", len(events), err)
		}
	})
}

// overlongEvent is a well-formed line of writer w, seq and lc seq, whose
// id matches its content, extra bytes longer than MaxLine (newline included).
func overlongEvent(t *testing.T, w string, seq uint64, extra int) []byte {
	t.Helper()
	var err error
	e := &Event{V: 1, Writer: w, Seq: seq, LC: seq, At: testAt, Actor: "ada", Type: "a.b", Data: jsonRaw(`{"blob":""}`)}
	if e.ID, err = e.ContentID(); err != nil {
		t.Fatal(err)
	}
	small, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	e.Data = jsonRaw(`{"blob":"` + strings.Repeat("x", MaxLine+extra-len(small)) + `"}`)
	if e.ID, err = e.ContentID(); err != nil {
		t.Fatal(err)
	}
	line, err := e.Encode()
	if err != nil || len(line) != MaxLine+extra {
		t.Fatalf("overlong line of %d bytes, %v", len(line), err)
	}
	return line
}

func jsonRaw(s string) json.RawMessage { return json.RawMessage(s) }

func TestAppendInvalidUTF8(t *testing.T) {
	// The log is UTF-8: a draft that is not is refused, and a line that is
	// not is corrupt, so that every id stays the hash of what is on disk.
	l := newTestLog(t)
	for _, d := range []Draft{
		{Type: "a.b", Subject: "bad\xff"},
		{Type: "a.b", Idem: "\xc3"},
		{Type: "a.b", Data: jsonRaw("{\"x\":\"\xfe\"}")},
	} {
		if _, err := l.Append(context.Background(), testAt, "ada", []Draft{d}, AppendOptions{}); !errors.Is(err, ErrInvalidDraft) {
			t.Errorf("draft %q: err = %v, want ErrInvalidDraft", d, err)
		}
	}
	if _, err := l.Append(context.Background(), testAt, "\xffada", []Draft{{Type: "a.b"}}, AppendOptions{}); !errors.Is(err, ErrInvalidDraft) {
		t.Errorf("actor: err = %v, want ErrInvalidDraft", err)
	}
	// Invalid strings inside Go data are replaced by encoding/json, consistently.
	if _, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.b", Data: map[string]string{"x": "\xff"}}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCheckClean(t, l.Log)
	if n := len(readAll(t, l.Log)); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	line := strings.Replace(validLine, `"T-1"`, "\"T\xff1\"", 1)
	if _, err := Decode([]byte(line)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode of invalid UTF-8: err = %v, want ErrCorrupt", err)
	}
}

func TestAppendRefusesOverlongLine(t *testing.T) {
	// Readers refuse lines over MaxLine as corrupt: an append must not
	// write one, or every later read of the log fails.
	l := newTestLog(t)
	appendN(t, l.Log, 1)
	big := map[string]string{"blob": strings.Repeat("x", MaxLine)}
	_, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.b", Data: big}}, AppendOptions{})
	if !errors.Is(err, ErrInvalidDraft) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("err = %v, want ErrInvalidDraft naming the size", err)
	}
	if got := readAll(t, l.Log); len(got) != 1 {
		t.Fatalf("%d events, want 1", len(got))
	}
	// Just under the limit is fine.
	fits := map[string]string{"blob": strings.Repeat("x", MaxLine-1024)}
	if _, err := l.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.b", Data: fits}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l.Log); len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
	mustCheckClean(t, l.Log)
}

func TestIdempotentRetryWithStaleExpectedVersion(t *testing.T) {
	// A retry carries the expected version of the first attempt, which
	// moved the log: it must still get the first event, not a conflict.
	l := newTestLog(t)
	appendN(t, l.Log, 1)
	s, err := l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := s.Version()
	first, err := s.Append(testAt, "ada", []Draft{{Type: "a.b", Idem: "req-1"}}, AppendOptions{ExpectVersion: &v})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err = l.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	again, err := s.Append(testAt, "ada", []Draft{{Type: "a.b", Idem: "req-1"}}, AppendOptions{ExpectVersion: &v})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if again[0].ID != first[0].ID {
		t.Fatalf("retry returned %+v, want %+v", again[0], first[0])
	}
	// A batch that would append something still checks the version.
	_, err = s.Append(testAt, "ada", []Draft{{Type: "a.b", Idem: "req-1"}, {Type: "a.c"}}, AppendOptions{ExpectVersion: &v})
	if !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("err = %v, want ErrVersionMismatch", err)
	}
	if n := len(readAll(t, l.Log)); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}

func TestOwnFileReplacedDuringSession(t *testing.T) {
	// git does not take spool's lock: a checkout or merge in the primary
	// worktree may replace this writer's file while a command holds a
	// session. The append must not go to the replaced file (the event would
	// be acknowledged and lost) nor continue a seq it no longer matches.
	check := func(t *testing.T, l *testLog, path string, evs []Event, err error, before []byte) {
		t.Helper()
		if err != nil {
			if !errors.Is(err, ErrVersionMismatch) {
				t.Fatalf("err = %v, want ErrVersionMismatch", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("a refused append changed the file")
			}
			return
		}
		found := false
		for _, e := range readAll(t, l.Log) {
			found = found || e.ID == evs[0].ID
		}
		if !found {
			t.Fatal("acknowledged event is not in the writer file")
		}
		mustCheckClean(t, l.Log)
	}
	t.Run("replaced", func(t *testing.T) {
		l := newTestLog(t)
		appendN(t, l.Log, 2)
		path := writerFile(t, l.Log)
		s, err := l.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b, _ := os.ReadFile(path)
		lines := bytes.SplitAfter(b, []byte{'\n'})
		tmp := path + ".git-tmp"
		os.WriteFile(tmp, lines[0], 0o644) // a branch with one event only
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		evs, err := s.Append(testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{})
		check(t, l, path, evs, err, before)
	})
	t.Run("appeared", func(t *testing.T) {
		l := newTestLog(t)
		path := writerFile(t, l.Log)
		other := newTestLog(t)
		appendN(t, other.Log, 2)
		s, err := l.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// A checkout brings this writer's file from another branch.
		b, _ := os.ReadFile(writerFile(t, other.Log))
		b = bytes.ReplaceAll(b, []byte(`"writer":"`+mustWriterID(t, other.Log)+`"`), []byte(`"writer":"`+s.Writer()+`"`))
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, b, 0o644)
		evs, err := s.Append(testAt, "ada", []Draft{{Type: "a.b"}}, AppendOptions{})
		if err == nil {
			// The ids of the copied lines no longer match: only seq matters here.
			events := readAll(t, l.Log)
			for i, e := range events {
				if e.Seq != uint64(i+1) {
					t.Fatalf("seq %d at line %d after appending to a file that appeared", e.Seq, i+1)
				}
			}
			return
		}
		check(t, l, path, evs, err, b)
	})
}

func mustWriterID(t *testing.T, l *Log) string {
	t.Helper()
	w, err := l.WriterID()
	if err != nil {
		t.Fatal(err)
	}
	return w
}
