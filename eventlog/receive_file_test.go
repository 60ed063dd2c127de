package eventlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

var errLocalBroken = errors.New("the local file breaks the rules")

// Ways to receive a copy.
const (
	viaReceive = iota
	viaReceiveFrom
	viaReceiveFromKnown // what the copy shares with the local file, up to a line's end, known
)

// receiveBoth runs Receive, ReceiveFrom and ReceiveFromKnown on logs that
// hold local as writer w's file, with copy arriving; it returns each one's
// file after, and what each said.
func receiveBoth(t *testing.T, local, copy []byte) (after [3][]byte, res [3]Received, errs [3]error) {
	t.Helper()
	run := func(how int) ([]byte, Received, error) {
		dir := t.TempDir()
		private := filepath.Join(dir, "private")
		os.MkdirAll(private, 0o755)
		os.WriteFile(filepath.Join(private, "writer"), []byte("v\n"), 0o644)
		l := Open(Options{Dir: filepath.Join(dir, "events"), PrivateDir: private})
		path := filepath.Join(l.Dir(), "w"+Ext)
		if local != nil {
			os.MkdirAll(l.Dir(), 0o755)
			if err := os.WriteFile(path, local, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err := l.Check(); err != nil || len(rep.Problems) > 0 {
			return nil, Received{}, errLocalBroken
		}
		s, err := l.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var res Received
		whole := func(w io.Writer) error { _, err := w.Write(copy); return err }
		switch how {
		case viaReceive:
			res, err = s.Receive("w"+Ext, copy, "fuzz")
		case viaReceiveFrom:
			res, err = s.ReceiveFrom("w"+Ext, whole, "fuzz")
		case viaReceiveFromKnown:
			n := 0
			for n < len(local) && n < len(copy) && local[n] == copy[n] {
				n++
			}
			n = bytes.LastIndexByte(copy[:n], '\n') + 1
			known := Known{Size: int64(n), Lines: bytes.Count(copy[:n], newline)}
			rest := func(w io.Writer) error { _, err := w.Write(copy[n:]); return err }
			res, err = s.ReceiveFromKnown("w"+Ext, known, rest, whole, "fuzz")
		}
		after, _ := os.ReadFile(path)
		if left, _ := os.ReadDir(l.tmpDir()); len(left) > 0 {
			t.Fatalf("ReceiveFrom left %d files in %s", len(left), l.tmpDir())
		}
		return after, res, err
	}
	for how := range after {
		after[how], res[how], errs[how] = run(how)
	}
	return
}

// FuzzReceiveFrom: streaming a copy in (a fresh clone's writer files, and
// a copy that extends a local file) does what Receive does with its
// bytes: the same file after, the same events added, the same copy refused
// for the same reason; with Whole's look at the tail at its real size and
// at a few bytes (the fallback to Receive). A local file that breaks the
// rules is left out: ReceiveFrom does not judge its lines again. Same is
// said only of a file that is the copy.
func FuzzReceiveFrom(f *testing.F) {
	lines := validFile(f, 4)
	all := bytes.Join(lines, nil)
	f.Add([]byte(nil), all, false)
	f.Add([]byte(nil), all, true)
	f.Add([]byte(nil), append(bytes.Clone(all), '\n'), false) // whole: taken as checked while it was written
	f.Add([]byte(nil), append(bytes.Clone(all), `{"torn`...), false)
	f.Add([]byte(nil), bytes.Join([][]byte{lines[0], lines[1], lines[3]}, nil), false)
	f.Add([]byte(nil), bytes.Replace(all, []byte(`"seq":2`), []byte(`"seq":9`), 1), true)
	f.Add([]byte{}, all, false)
	f.Add(bytes.Join(lines[:2], nil), all, false)
	whole := append(bytes.Clone(all), '\n') // validFile's last line has no newline
	two := bytes.Join(lines[:2], nil)
	f.Add([]byte(nil), bytes.Replace(whole, []byte(`"seq":2`), []byte(`"seq":9`), 1), false) // whole, a rule broken: checked as it was written
	f.Add([]byte(nil), bytes.Join([][]byte{lines[0], lines[1], lines[0]}, nil), false)       // whole, a line twice
	f.Add(bytes.Join(lines[:1], nil), whole, false)                                          // one line, then more: streamed onto it
	f.Add(two, whole, false)                                                                 // two, then more
	f.Add(bytes.Join(lines[:3], nil), two, false)                                            // the copy is a prefix
	f.Add(two, bytes.Join([][]byte{lines[0], lines[2]}, nil), false)                         // it differs
	f.Add(two, bytes.Replace(whole, []byte(`"seq":3`), []byte(`"seq":9`), 1), false)         // what it adds breaks a rule
	f.Add(two, bytes.Join([][]byte{lines[0], lines[1], lines[1], lines[2]}, nil), false)     // a line copied in place
	if e, err := Decode(lines[2]); err == nil {                                              // a line without prev after lines with it
		e.Prev = ""
		e.ID, _ = e.computeID()
		if b, err := e.Encode(); err == nil {
			f.Add(two, append(bytes.Clone(two), b...), false) // Encode ends it with a newline
		}
	}
	f.Add([]byte(nil), []byte{}, false)
	f.Fuzz(func(t *testing.T, local, copy []byte, smallTail bool) {
		if smallTail {
			defer func(was int64) { wholeTail = was }(wholeTail)
			wholeTail = 16
		}
		after, res, errs := receiveBoth(t, local, copy)
		if errs[viaReceive] == errLocalBroken {
			return // a local file that breaks the rules is repair's business
		}
		a := res[viaReceive]
		for _, how := range []int{viaReceiveFrom, viaReceiveFromKnown} {
			if (errs[viaReceive] == nil) != (errs[how] == nil) {
				t.Fatalf("Receive: %v; way %d: %v", errs[viaReceive], how, errs[how])
			}
			if errs[viaReceive] != nil {
				return
			}
			if !bytes.Equal(after[viaReceive], after[how]) {
				t.Fatalf("the file after Receive:\n%q\nafter way %d:\n%q", after[viaReceive], how, after[how])
			}
			b := res[how]
			if a.Added != b.Added || a.Problem != b.Problem || (a.Quarantined == "") != (b.Quarantined == "") || a.Forked != b.Forked {
				t.Fatalf("Receive said %+v, way %d %+v", a, how, b)
			}
			if b.Same && !bytes.Equal(after[how], copy) {
				t.Fatalf("way %d says the file %q is the copy %q", how, after[how], copy)
			}
			if b.Held && !bytes.HasPrefix(after[how], copy) {
				t.Fatalf("way %d says the file %q begins with the copy %q", how, after[how], copy)
			}
		}
	})
}

// A copy left in the log's tmp directory by a ReceiveFrom that was killed
// is removed by the next one; nothing else there is touched.
func TestReceiveFromRemovesAKilledOnesCopy(t *testing.T) {
	tl, s := receiver(t)
	tmp := tl.tmpDir()
	os.MkdirAll(tmp, 0o755)
	stale := filepath.Join(tmp, "a-123"+receivingSuffix)
	other := filepath.Join(tmp, ".a.jsonl.tmp")
	os.WriteFile(stale, []byte("half a copy"), 0o644)
	os.WriteFile(other, []byte("not ReceiveFrom's"), 0o644)
	lines := writerLines(t, "a", 3)
	if _, err := s.ReceiveFrom("a"+Ext, func(w io.Writer) error { _, err := w.Write(join(lines)); return err }, "origin"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed copy is still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another file of the tmp directory was removed: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(tl.Dir(), "a"+Ext)); !bytes.Equal(got, join(lines)) {
		t.Fatalf("a's file is %q", got)
	}
}

// A copy whose stream fails part way (git killed in the middle of a blob)
// is not received: the error comes back, the log has no such file, the
// tmp directory is empty, and a copy streamed after it is received whole.
func TestReceiveFromAStreamThatFails(t *testing.T) {
	tl, s := receiver(t)
	lines := join(writerLines(t, "a", 400))
	broken := errors.New("git cat-file: killed")
	_, err := s.ReceiveFrom("a"+Ext, func(w io.Writer) error {
		for off := 0; off < len(lines)/2; off += 1000 { // pieces, so the check is reading meanwhile
			if _, err := w.Write(lines[off:min(off+1000, len(lines)/2)]); err != nil {
				return err
			}
		}
		return broken
	}, "origin")
	if !errors.Is(err, broken) {
		t.Fatalf("ReceiveFrom: %v, want the stream's error", err)
	}
	if _, err := os.Stat(filepath.Join(tl.Dir(), "a"+Ext)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a's file after a failed stream: %v", err)
	}
	if left, _ := os.ReadDir(tl.tmpDir()); len(left) > 0 {
		t.Fatalf("%d files left in %s", len(left), tl.tmpDir())
	}
	res, err := s.ReceiveFrom("a"+Ext, func(w io.Writer) error { _, err := w.Write(lines); return err }, "origin")
	if err != nil || res.Added != 400 || !res.Same {
		t.Fatalf("the copy streamed after: %+v, %v", res, err)
	}
}
