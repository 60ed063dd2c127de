package eventlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editLines rewrites the writer file of l through edit, which gets its lines
// (each with its '\n') and returns the new ones.
func editLines(t *testing.T, path string, edit func(lines [][]byte) [][]byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if err := os.WriteFile(path, bytes.Join(edit(lines), nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reencode decodes line, lets change edit the event and encodes it again
// (keeping the old id unless change sets one).
func reencode(t *testing.T, line []byte, change func(e *Event)) []byte {
	t.Helper()
	e, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	change(e)
	out, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func withID(t *testing.T, e *Event) {
	t.Helper()
	id, err := e.computeID()
	if err != nil {
		t.Fatal(err)
	}
	e.ID = id
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, lines [][]byte) [][]byte
		line int
		msg  string
	}{
		{"unparsable line", func(t *testing.T, l [][]byte) [][]byte {
			l[1] = []byte("{oops\n")
			return l
		}, 2, "not valid JSON"},
		{"newer envelope", func(t *testing.T, l [][]byte) [][]byte {
			l[2] = bytes.Replace(l[2], []byte(`"v":1`), []byte(`"v":7`), 1)
			return l
		}, 3, "newer spool"},
		{"torn tail", func(t *testing.T, l [][]byte) [][]byte {
			return append(l, []byte(`{"v":1,"id":"abc`))
		}, 5, "torn tail"},
		{"foreign writer", func(t *testing.T, l [][]byte) [][]byte {
			l[3] = reencode(t, l[3], func(e *Event) { e.Writer = "someone-else"; withID(t, e) })
			return l
		}, 4, `writer "someone-else" in the file of writer`},
		{"seq gap", func(t *testing.T, l [][]byte) [][]byte {
			return append(l[:1], l[2:]...)
		}, 2, "seq 3 follows 1 (want 2)"},
		{"seq repeated", func(t *testing.T, l [][]byte) [][]byte {
			l[2] = reencode(t, l[2], func(e *Event) { e.Seq = 2 })
			return l
		}, 3, "seq 2 follows 2 (want 3)"},
		{"seq not from 1", func(t *testing.T, l [][]byte) [][]byte {
			for i := range l {
				l[i] = reencode(t, l[i], func(e *Event) { e.Seq += 10 })
			}
			return l
		}, 1, "seq 11 follows 0 (want 1)"},
		{"lc backwards", func(t *testing.T, l [][]byte) [][]byte {
			l[3] = reencode(t, l[3], func(e *Event) { e.LC = 1; withID(t, e) })
			return l
		}, 4, "lc 1 goes back from 3"},
		{"edited line", func(t *testing.T, l [][]byte) [][]byte {
			l[1] = reencode(t, l[1], func(e *Event) { e.Subject = "tampered" })
			return l
		}, 2, "does not match the content"},
		{"overlong line", func(t *testing.T, l [][]byte) [][]byte {
			l[1] = reencode(t, l[1], func(e *Event) {
				e.Data = []byte(`"` + strings.Repeat("x", MaxLine) + `"`)
				withID(t, e)
			})
			return l
		}, 2, "longer than"},
		{"duplicated event", func(t *testing.T, l [][]byte) [][]byte {
			dup := reencode(t, l[3], func(e *Event) { e.Seq = 5 })
			return append(l, dup)
		}, 5, "already used at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 4)
			path := writerFile(t, l.Log)
			mustCheckClean(t, l.Log)
			editLines(t, path, func(lines [][]byte) [][]byte { return c.edit(t, lines) })
			rep, err := l.Check()
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) == 0 {
				t.Fatal("Check found no problem")
			}
			p := rep.Problems[0]
			if p.Path != path || p.Line != c.line || !strings.Contains(p.Message, c.msg) {
				t.Fatalf("first problem %v, want line %d mentioning %q (all: %v)", p, c.line, c.msg, rep.Problems)
			}
			if !strings.Contains(p.String(), filepath.Base(path)) {
				t.Fatalf("String() = %q", p.String())
			}
		})
	}
}

func TestCheckDuplicateAcrossFiles(t *testing.T) {
	l := newTestLog(t)
	appendN(t, l.Log, 2)
	path := writerFile(t, l.Log)
	b, _ := os.ReadFile(path)
	// The same file twice under another name: an id hashes its writer, so a
	// copy in another writer's file is a line of a foreign writer.
	other := filepath.Join(l.Dir(), "zzz"+Ext)
	os.WriteFile(other, b, 0o644)
	rep, err := l.Check()
	if err != nil {
		t.Fatal(err)
	}
	var foreign int
	for _, p := range rep.Problems {
		if p.Path == other && strings.Contains(p.Message, `in the file of writer "zzz"`) {
			foreign++
		}
	}
	if foreign != 2 || len(rep.Problems) != 2 || rep.Events != 4 || rep.Files != 2 {
		t.Fatalf("report %+v", rep)
	}
}

func TestCheckEmpty(t *testing.T) {
	l := newTestLog(t)
	rep := mustCheckClean(t, l.Log)
	if rep.Events != 0 || rep.Files != 0 || rep.Problems == nil {
		t.Fatalf("report %+v (problems must be [] for JSON)", rep)
	}
}
