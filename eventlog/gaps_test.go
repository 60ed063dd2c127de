package eventlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// A copy of the line before is dropped with a warning (a line duplicated
// in place, which repair removes); a copy that was edited (the same writer,
// seq, lc and id, other content) is not a copy: it is corrupt, for readers
// and for Check, and nothing of it is folded.
func TestEditedCopyOfPreviousLineIsCorrupt(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(line []byte) []byte
		copied bool // an exact copy: dropped
	}{
		{"exact copy", func(line []byte) []byte { return line }, true},
		{"data edited", func(line []byte) []byte { return bytes.Replace(line, []byte(`"i":1`), []byte(`"i":7`), 1) }, false},
		{"type edited", func(line []byte) []byte {
			return bytes.Replace(line, []byte(`"test.appended"`), []byte(`"test.appendee"`), 1)
		}, false},
		{"actor edited", func(line []byte) []byte { return bytes.Replace(line, []byte(`"ada"`), []byte(`"eve"`), 1) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 2)
			path := writerFile(t, l.Log)
			whole, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(whole, []byte{'\n'})
			last := lines[len(lines)-2]
			copied := c.edit(bytes.Clone(last))
			if c.copied != bytes.Equal(copied, last) {
				t.Fatalf("the edit left %q", copied)
			}
			if err := os.WriteFile(path, append(whole, copied...), 0o644); err != nil {
				t.Fatal(err)
			}

			r, err := l.ReadQuiet(nil)
			if err != nil {
				t.Fatal(err)
			}
			var events []*Event
			for {
				var e *Event
				e, _, err = r.Next()
				if err != nil {
					break
				}
				events = append(events, e)
			}
			dropped := r.Dropped()
			r.Close()
			rep, cerr := l.Check()
			if cerr != nil {
				t.Fatal(cerr)
			}
			if c.copied {
				if err != io.EOF || len(events) != 2 || dropped != 1 {
					t.Fatalf("an exact copy: %d events, %d dropped, %v; want 2, 1 dropped", len(events), dropped, err)
				}
				if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "copy of line 2") {
					t.Fatalf("Check: %v", rep.Problems)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrCorrupt) || le.Line != 3 || dropped != 0 || len(events) != 2 {
				t.Fatalf("an edited copy: %d events, %d dropped, %v; want corrupt line 3, none dropped", len(events), dropped, err)
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Line != 3 || strings.Contains(rep.Problems[0].Message, "copy of line") {
				t.Fatalf("Check calls an edited copy %v", rep.Problems)
			}
		})
	}
}

// A file that ends inside a batch (a crash between its lines) is torn:
// Torn names it once it is read to its end, and no event of the batch is
// read, whether events come before the batch or not. A file that ends
// after a whole batch is not torn.
func TestTornReportsAFileEndingInsideABatch(t *testing.T) {
	batch := []Draft{{Type: "a.one", Subject: "x"}, {Type: "a.two", Subject: "x"}, {Type: "a.three", Subject: "x"}}
	for _, c := range []struct {
		name   string
		before int // single events before the batch
		keep   int // lines of the batch left
		torn   bool
	}{
		{"one line of three, after an event", 1, 1, true},
		{"two lines of three, after an event", 1, 2, true},
		{"two lines of three, nothing before", 0, 2, true},
		{"the whole batch", 1, 3, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, c.before)
			if _, err := l.Append(context.Background(), testAt, "ada", batch, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			path := writerFile(t, l.Log)
			whole, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(whole, []byte{'\n'})
			if err := os.WriteFile(path, bytes.Join(lines[:c.before+c.keep], nil), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := l.Read(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			n := 0
			for {
				if _, _, err := r.Next(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				n++
			}
			want := c.before
			if !c.torn {
				want += len(batch)
			}
			if n != want {
				t.Fatalf("read %d events, want %d", n, want)
			}
			if got := r.Torn(); c.torn != (len(got) == 1 && got[0] == path) || !c.torn && len(got) != 0 {
				t.Fatalf("Torn() = %v, want torn: %v", got, c.torn)
			}
		})
	}
}

// MaxLine counts the newline: a line of exactly MaxLine bytes is an event,
// one byte more is corrupt, for readers and for Check; Append writes the
// one and refuses the other.
func TestMaxLineBoundary(t *testing.T) {
	for _, extra := range []int{0, 1} {
		refused := extra > 0
		t.Run("read and check, "+map[bool]string{false: "MaxLine", true: "MaxLine+1"}[refused], func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 1)
			w, err := l.WriterID()
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(writerFile(t, l.Log), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(overlongEvent(t, w, 2, extra))
			f.Close()
			events, err := tryReadAll(l.Log)
			var le *LineError
			switch {
			case refused && (!errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "longer than")):
				t.Fatalf("a line of MaxLine+1 bytes: %d events, %v; want corrupt line 2", len(events), err)
			case !refused && (err != nil || len(events) != 2 || len(events[1].Data) < MaxLine/2):
				t.Fatalf("a line of MaxLine bytes: %d events, %v; want 2", len(events), err)
			}
			if !refused { // and a read resumes after it
				r, err := l.Read(nil)
				if err != nil {
					t.Fatal(err)
				}
				var pos Pos
				for range 2 {
					if _, pos, err = r.Next(); err != nil {
						t.Fatal(err)
					}
				}
				r.Close()
				r, err = l.Read(map[string]Start{w: pos.Start()})
				if err != nil {
					t.Fatalf("resuming after a line of MaxLine bytes: %v", err)
				}
				if _, _, err := r.Next(); err != io.EOF {
					t.Fatalf("resumed after the last line: %v, want EOF", err)
				}
				r.Close()
			}
			rep, err := l.Check()
			if err != nil {
				t.Fatal(err)
			}
			if refused != (len(rep.Problems) == 1 && rep.Problems[0].Line == 2 && strings.Contains(rep.Problems[0].Message, "longer than")) ||
				!refused && len(rep.Problems) != 0 {
				t.Fatalf("Check: %v", rep.Problems)
			}
		})
	}

	t.Run("append", func(t *testing.T) {
		// The line a draft with an empty blob makes, in a log like the
		// ones below: each byte of blob is a byte of line.
		probe := newTestLog(t)
		appendN(t, probe.Log, 1)
		blob := func(n int) []Draft {
			return []Draft{{Type: "a.b", Data: map[string]string{"blob": strings.Repeat("x", n)}}}
		}
		if _, err := probe.Append(context.Background(), testAt, "ada", blob(0), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		whole, err := os.ReadFile(writerFile(t, probe.Log))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(whole, []byte{'\n'})
		base := len(lines[len(lines)-2])
		for _, extra := range []int{0, 1} {
			l := newTestLog(t)
			appendN(t, l.Log, 1)
			evs, err := l.Append(context.Background(), testAt, "ada", blob(MaxLine-base+extra), AppendOptions{})
			if extra > 0 {
				if !errors.Is(err, ErrInvalidDraft) || len(readAll(t, l.Log)) != 1 {
					t.Fatalf("a draft of MaxLine+1 bytes: %v; want ErrInvalidDraft and nothing appended", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("a draft of exactly MaxLine bytes: %v", err)
			}
			whole, _ := os.ReadFile(writerFile(t, l.Log))
			if got := len(whole) - len(lines[0]); len(evs) != 1 || got != MaxLine {
				t.Fatalf("appended a line of %d bytes, want %d", got, MaxLine)
			}
			if got := readAll(t, l.Log); len(got) != 2 {
				t.Fatalf("%d events read back, want 2", len(got))
			}
			mustCheckClean(t, l.Log)
		}
	})
}
