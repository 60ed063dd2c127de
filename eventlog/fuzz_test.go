package eventlog

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
	"time"
)

func FuzzDecode(f *testing.F) {
	f.Add([]byte(validLine))
	f.Add([]byte(validLine + "\n"))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b"}`))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00+05:30","type":"a.b","data":{ "x" : [ 1 , 2 ] }}`))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","subject":"\u00e9\ud83d\ude00\n","data":"<&>"}`))
	f.Add([]byte(`{"v":1,"v":2,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b"}`))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","more":true,"sig":"U1NIU0lH"}`))
	f.Add([]byte(`{"v":1,"sig":"x","id":"a","writer":"w","seq":1,"lc":1,"at":"2026-01-01T00:00:00Z","type":"a.b","sig":1}`))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":2,"prev":"0123456789abcdef01234567","lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b"}`))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":2,"prev":"","lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b"}`))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":2,"prev":7,"lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b"}`))
	f.Add([]byte(`{"v":1,"prev":"x\u0041","id":"a","writer":"w","seq":2,"lc":2,"at":"2026-01-01T00:00:00Z","type":"a.b","prev":"y"}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":0}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte("{\"v\":1,\"id\":\"\xff\",\"writer\":\"w\",\"seq\":1,\"lc\":1,\"at\":\"2026-01-01T00:00:00Z\",\"type\":\"a.b\"}"))
	f.Add([]byte(`{"v":1,"id":"a","writer":"w","seq":18446744073709551615,"lc":1,"at":"9999-12-31T23:59:59.999999999Z","type":"a.b"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := Decode(line)
		if err != nil {
			if e != nil {
				t.Fatal("an error with an event")
			}
			return
		}
		enc, err := e.Encode()
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", line, err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("accepted %q, re-encoded as %q, which does not decode: %v", line, enc, err)
		}
		enc2, err := again.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("not stable:\n%s%s", enc, enc2)
		}
		if e.ID != again.ID || e.Writer != again.Writer || e.Seq != again.Seq || e.LC != again.LC ||
			!e.At.Equal(again.At) || e.Actor != again.Actor || e.Type != again.Type ||
			e.Subject != again.Subject || e.Idem != again.Idem || e.Sig != again.Sig || e.Prev != again.Prev {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", e, again)
		}
	})
}

func repair(t *testing.T, l *Log, path string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := l.repairTail(fh, path); err != nil {
		t.Fatal(err)
	}
}

func FuzzTornTail(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Add([]byte(validLine + "\n"))
	f.Add([]byte(validLine + "\n" + validLine[:20]))
	f.Add([]byte("no newline at all"))
	f.Add([]byte("a\nb\nc"))
	f.Add([]byte("\n\n\nx"))
	f.Add(bytes.Repeat([]byte("y"), 9000))
	f.Add(append(bytes.Repeat([]byte("z\n"), 3000), bytes.Repeat([]byte("t"), 5000)...))
	f.Add(append([]byte("head\n"), bytes.Repeat([]byte("t"), 4096)...))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		l := Open(Options{Dir: filepath.Join(dir, "events"), PrivateDir: filepath.Join(dir, "private")})
		os.MkdirAll(l.opt.Dir, 0o755)
		path := filepath.Join(l.opt.Dir, "w"+Ext)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		repair(t, l, path)
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) > 0 && after[len(after)-1] != '\n' {
			t.Fatalf("after repair the file ends in %q", after[len(after)-1])
		}
		if !bytes.HasPrefix(content, after) {
			t.Fatal("repair changed the kept prefix")
		}
		removed := content[len(after):]
		if bytes.IndexByte(removed, '\n') >= 0 {
			t.Fatalf("repair removed complete lines: %q", removed)
		}
		backups, _ := filepath.Glob(filepath.Join(l.opt.PrivateDir, "torn", "*"))
		switch {
		case len(removed) == 0 && len(backups) != 0:
			t.Fatalf("backup written for an intact file: %v", backups)
		case len(removed) > 0 && len(backups) != 1:
			t.Fatalf("%d backups for %d removed bytes", len(backups), len(removed))
		case len(removed) > 0:
			b, _ := os.ReadFile(backups[0])
			if !bytes.Equal(b, removed) {
				t.Fatalf("backup holds %q, removed %q", b, removed)
			}
			if !strings.HasPrefix(filepath.Base(backups[0]), "w"+Ext+".") {
				t.Fatalf("backup name %s", backups[0])
			}
		}
		// Repairing again changes nothing.
		repair(t, l, path)
		if again, _ := os.ReadFile(path); !bytes.Equal(again, after) {
			t.Fatal("a second repair changed the file")
		}
	})
}

// FuzzRead feeds one writer file to the reader and to Check: neither may
// panic, and they must agree on what is in the file.
func FuzzRead(f *testing.F) {
	good := strings.Replace(validLine, `"writer":"w1"`, `"writer":"w"`, 1)
	f.Add([]byte(good + "\n"))
	f.Add([]byte(good + "\n" + good + "\n"))
	f.Add([]byte(good + "\n{bad\n" + good + "\n"))
	f.Add([]byte(good + "\n" + good[:30]))
	f.Add([]byte(validLine + "\n"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(good + "\r\n"))
	// Valid lines of writer w, chained by prev, then the same duplicated,
	// reordered and dropped, with a forged prev, and with prev taken off.
	lines := validFile(f, 3)
	f.Add(bytes.Join(lines, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[1], lines[1], lines[2]}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[2], lines[1]}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[2]}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[1], bytes.Replace(lines[2], []byte(`"prev":"`), []byte(`"prev":"0`), 1)}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[1], bytes.Replace(lines[2], []byte(`"prev":"`), []byte(`"prex":"`), 1)}, nil))
	f.Add(bytes.Join([][]byte{lines[1], lines[2]}, nil))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		l := Open(Options{Dir: dir, PrivateDir: filepath.Join(dir, "private")})
		if err := os.WriteFile(filepath.Join(dir, "w"+Ext), content, 0o644); err != nil {
			t.Fatal(err)
		}
		events, readErr := tryReadAll(l)
		rep, err := l.Check()
		if err != nil {
			t.Fatal(err)
		}
		// What verify relies on to read the log once: a read that ends
		// without error, torn file or dropped line means Check finds nothing.
		quiet, quietErr := l.ReadQuiet(nil)
		var torn []string
		var dropped int
		if quietErr == nil {
			for quietErr == nil {
				_, _, quietErr = quiet.Next()
			}
			quiet.Close()
			torn, dropped = quiet.Torn(), quiet.Dropped()
		}
		if clean := quietErr == io.EOF && len(torn) == 0 && dropped == 0; clean != (len(rep.Problems) == 0) {
			t.Fatalf("a read that ended in %v, torn %v, %d dropped; Check found %v", quietErr, torn, dropped, rep.Problems)
		}
		if quietErr != io.EOF && (readErr == nil || quietErr.Error() != readErr.Error()) {
			t.Fatalf("ReadQuiet ended in %v, Read in %v", quietErr, readErr)
		}
		if readErr == nil {
			if rep.Events != len(events) {
				t.Fatalf("Read gave %d events, Check counted %d", len(events), rep.Events)
			}
			for _, e := range events {
				if e.Writer != "w" {
					t.Fatalf("event of writer %q read from w's file", e.Writer)
				}
			}
			// What Read accepts, Check may only note as never acknowledged
			// (a torn tail, an unfinished batch) or as a dropped copy.
			for _, p := range rep.Problems {
				if !strings.Contains(p.Message, "torn tail") && !strings.Contains(p.Message, "unfinished batch") &&
					!strings.Contains(p.Message, "copy of line") {
					t.Fatalf("Read accepted the file, Check found %v", p)
				}
			}
			return
		}
		var le *LineError
		if !errors.As(readErr, &le) {
			t.Fatalf("Read failed without a line: %v", readErr)
		}
		for _, p := range rep.Problems {
			if p.Line == le.Line {
				return
			}
		}
		t.Fatalf("Read stopped at line %d (%v); Check found %v", le.Line, readErr, rep.Problems)
	})
}

// validFile returns n lines of writer w as spool appends them.
func validFile(f *testing.F, n int) [][]byte {
	dir := f.TempDir()
	private := filepath.Join(dir, "private")
	os.MkdirAll(private, 0o755)
	os.WriteFile(filepath.Join(private, "writer"), []byte("w\n"), 0o644)
	l := Open(Options{Dir: dir, PrivateDir: private})
	for i := range n {
		if _, err := l.Append(context.Background(), time.Unix(int64(i), 0), "a", []Draft{{Type: "t.x", Subject: fmt.Sprint(i)}}, AppendOptions{}); err != nil {
			f.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "w"+Ext))
	if err != nil {
		f.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
}

// FuzzRepair: whatever a writer file holds, a repair either leaves it alone
// (Left says why) or gives a file that breaks no rule and keeps every
// complete event it had.
func FuzzRepair(f *testing.F) {
	lines := validFile(f, 4)
	f.Add(bytes.Join(lines, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[1], lines[1], lines[2], lines[3], lines[2]}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[3], lines[2], lines[1]}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[2], []byte(`{"v":1,`)}, nil))
	f.Add(bytes.Join([][]byte{lines[0], lines[2], lines[1], lines[3], lines[3]}, nil))
	f.Add(bytes.Join([][]byte{lines[2], lines[3]}, nil))
	f.Fuzz(func(t *testing.T, content []byte) {
		out, rep := repairLines(content, "w")
		if len(rep.Left) > 0 {
			return
		}
		r := newRules("w")
		got := map[string]bool{}
		for n, raw := range bytes.SplitAfter(out, []byte{'\n'}) {
			if len(raw) == 0 {
				continue
			}
			e, sp, err := decode(raw)
			if err != nil || raw[len(raw)-1] != '\n' {
				t.Fatalf("repaired line %d does not decode: %v %q", n+1, err, raw)
			}
			if b := r.check(raw, e, sp, n+1); b != nil {
				t.Fatalf("repaired line %d breaks a rule: %s", n+1, b.msg)
			}
			got[e.ID] = true
		}
		for _, raw := range bytes.SplitAfter(content, []byte{'\n'}) {
			e, sp, err := decode(raw)
			if err != nil || len(raw) == 0 || raw[len(raw)-1] != '\n' || e.More || !newRules("w").idMatches(raw, e, sp) {
				continue
			}
			if !got[e.ID] {
				t.Fatalf("repair lost event %s", e.ID)
			}
		}
	})
}

// FuzzReceive: whatever a copy of a writer file holds, Receive leaves the
// local file keeping every rule, and a chained local file only ever grows:
// what it had stays, byte for byte, at its start.
func FuzzReceive(f *testing.F) {
	lines := validFile(f, 4)
	f.Add(bytes.Join(lines[:3], nil), bytes.Join(lines, nil))
	f.Add(bytes.Join(lines, nil), bytes.Join(lines[:2], nil))
	f.Add(bytes.Join(lines, nil), bytes.Join([][]byte{lines[0], lines[1], lines[3]}, nil))
	f.Add(bytes.Join(lines[:2], nil), bytes.Join([][]byte{lines[0], lines[1], lines[3]}, nil))
	f.Add(bytes.Join(lines[:2], nil), bytes.Join([][]byte{lines[0], bytes.Replace(lines[1], []byte(`"prev":"`), []byte(`"prex":"`), 1)}, nil))
	f.Add([]byte{}, bytes.Join(lines, nil))
	f.Fuzz(func(t *testing.T, local, copy []byte) {
		dir := t.TempDir()
		private := filepath.Join(dir, "private")
		os.MkdirAll(private, 0o755)
		os.WriteFile(filepath.Join(private, "writer"), []byte("v\n"), 0o644)
		l := Open(Options{Dir: filepath.Join(dir, "events"), PrivateDir: private})
		os.MkdirAll(l.Dir(), 0o755)
		path := filepath.Join(l.Dir(), "w"+Ext)
		if err := os.WriteFile(path, local, 0o644); err != nil {
			t.Fatal(err)
		}
		if rep, err := l.Check(); err != nil || len(rep.Problems) > 0 {
			return // a local file that breaks the rules is repair's business
		}
		s, err := l.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Receive("w"+Ext, copy, "fuzz"); err != nil {
			return
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := l.Check(); err != nil || len(rep.Problems) > 0 {
			t.Fatalf("after Receive the file breaks the rules: %v %v", err, rep.Problems)
		}
		if Chained(local) && !bytes.HasPrefix(after, local) {
			t.Fatalf("a chained file changed:\n%s\nbecame\n%s", local, after)
		}
		had := map[string]bool{}
		for _, raw := range bytes.SplitAfter(after, []byte{'\n'}) {
			if e, err := Decode(raw); err == nil {
				had[e.ID] = true
			}
		}
		for _, raw := range bytes.SplitAfter(local, []byte{'\n'}) {
			if e, err := Decode(raw); err == nil && !had[e.ID] {
				t.Fatalf("event %s lost", e.ID)
			}
		}
	})
}

// Whatever a writer file holds, About answers or fails with an error,
// never a panic; from a place a whole read stood at, it finds what a whole
// read finds.
func FuzzAbout(f *testing.F) {
	lines := validFile(f, 3)
	whole := bytes.Join(lines, nil)
	f.Add(whole, uint16(1), uint16(40))
	f.Add(whole, uint16(2), uint16(700))
	f.Add(bytes.Join([][]byte{lines[0], lines[0], lines[1], lines[2]}, nil), uint16(2), uint16(300))
	f.Add([]byte("{\\\"subject\n\n"), uint16(3), uint16(2))
	f.Fuzz(func(t *testing.T, content []byte, at, size uint16) {
		dir := t.TempDir()
		l := Open(Options{Dir: dir, PrivateDir: filepath.Join(dir, "private")})
		if err := os.WriteFile(filepath.Join(dir, "w"+Ext), content, 0o644); err != nil {
			t.Fatal(err)
		}
		defer func(was int64) { aboutBuf = was }(aboutBuf)
		aboutBuf = max(1, int64(size))
		all := func(*Event) bool { return true }
		events, starts := readWithStarts(l)
		if len(starts) == 0 { // a place no read stood at: an answer or an error
			l.About(context.Background(), "s", all, map[string]Start{"w": {Offset: int64(at), Len: 1}}, "")
			l.About(context.Background(), "", all, map[string]Start{"w": {Offset: int64(at)}}, "")
			return
		}
		longest := 0 // reads hold the longest line, as MaxLine's do
		for _, line := range bytes.SplitAfter(content, []byte("\n")) {
			longest = max(longest, len(line))
		}
		aboutBuf = max(aboutBuf, int64(longest)+1)
		known := map[string]Start{"w": starts[int(at)%len(starts)]}
		// A subject index at another place (past known: not used).
		index := filepath.Join(dir, "subjects")
		if _, err := l.IndexSubjects(context.Background(), index, map[string]Start{"w": starts[int(size)%len(starts)]}, -1); err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			var want []string
			for _, w := range events {
				if w.Subject == e.Subject {
					want = append(want, w.ID)
				}
			}
			for _, x := range []string{"", index} {
				got, _, err := l.About(context.Background(), e.Subject, all, known, x)
				if err != nil || !slices.Equal(ids(got), want) {
					t.Fatalf("%q from %+v, index %q: %v (%v), want %v", e.Subject, known["w"], x, ids(got), err, want)
				}
			}
		}
	})
}

// readWithStarts is a whole read's events and where it stood after each,
// both nil when the read fails.
func readWithStarts(l *Log) ([]*Event, []Start) {
	r, err := l.ReadQuiet(nil)
	if err != nil {
		return nil, nil
	}
	defer r.Close()
	var events []*Event
	var starts []Start
	for {
		e, pos, err := r.Next()
		if err == io.EOF {
			return events, starts
		}
		if err != nil {
			return nil, nil
		}
		events, starts = append(events, e), append(starts, pos.Start())
	}
}
