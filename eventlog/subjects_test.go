package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/table"
)

// The subject index is a cache: damaged anywhere, or of a file since
// replaced, it is not used, and About answers as a whole read does.
// IndexSubjects writes it only when more than slack bytes are not in it.
func TestSubjectIndexIsOnlyACache(t *testing.T) {
	l := subjectsLog(t, 2, 200, 7)
	known := knownAtEnd(t, l)
	index := filepath.Join(t.TempDir(), "subjects.idx")
	if wrote, err := l.IndexSubjects(context.Background(), index, known, 1<<20); err != nil || wrote {
		t.Fatalf("with less than min not indexed: wrote %v, %v", wrote, err)
	}
	if wrote, err := l.IndexSubjects(context.Background(), index, known, 0); err != nil || !wrote {
		t.Fatalf("indexing: wrote %v, %v", wrote, err)
	}
	if wrote, err := l.IndexSubjects(context.Background(), index, known, 0); err != nil || wrote {
		t.Fatalf("an index up to date was written again: %v, %v", wrote, err)
	}
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s3", "none"} {
		aboutIsWhole(t, l, s, known, index, "a good index")
	}
	for i := range len(good) {
		bad := slices.Clone(good)
		bad[i] ^= 0x5a
		os.WriteFile(index, bad, 0o644)
		aboutIsWhole(t, l, "s3", known, index, fmt.Sprintf("byte %d of the index changed", i))
	}
	os.WriteFile(index, good[:len(good)/2], 0o644)
	aboutIsWhole(t, l, "s3", known, index, "the index cut short")
	if wrote, err := l.IndexSubjects(context.Background(), index, known, 0); err != nil || !wrote {
		t.Fatalf("a damaged index was not written again: %v, %v", wrote, err)
	}
	// A file replaced by a copy of itself with its lines changed: the
	// index is not used for it.
	files, _ := l.Files()
	b, _ := os.ReadFile(files[0])
	copied := filepath.Join(t.TempDir(), "copy")
	os.WriteFile(copied, b, 0o644)
	os.Rename(copied, files[0])
	aboutIsWhole(t, l, "s3", known, index, "a file replaced")
	if wrote, err := l.IndexSubjects(context.Background(), index, known, 0); err != nil || !wrote {
		t.Fatalf("the index of a replaced file was not written again: %v, %v", wrote, err)
	}
	aboutIsWhole(t, l, "s3", known, index, "the index written again")
}

// knownAtEnd is where a whole read of l stands at its end, by writer.
func knownAtEnd(t *testing.T, l *Log) map[string]Start {
	t.Helper()
	r, err := l.ReadQuiet(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	known := map[string]Start{}
	for {
		_, pos, err := r.Next()
		if err != nil {
			return known
		}
		known[pos.Writer] = pos.Start()
	}
}

// About's reads hold the longest line of every file, not only of the
// first: a short first file (a teammate's one event) once made it take a
// later file's long lines for a file changed under it.
func TestAboutPastAShortFirstFile(t *testing.T) {
	logs := writersOfOneLog(t, 2)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tl := range logs {
		if _, err := tl.Append(context.Background(), at, "ada", []Draft{{Type: "t.a", Subject: "s"}}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l := logs[0].Log
	files, _ := l.Files()
	long := []Draft{{Type: "t.b", Subject: "s", Data: map[string]string{"text": strings.Repeat("x", 5000)}}}
	for _, tl := range logs {
		if tl.mustWriter(t) == WriterOf(files[1]) {
			for range 3 {
				at = at.Add(time.Second)
				if _, err := tl.Append(context.Background(), at, "ada", long, AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	aboutIsWhole(t, l, "s", knownAtEnd(t, l), "", "a short first file")
}

// A record that passes its checksum and does not decode (a writer's bug,
// or a format changed under the same name) is not used: every file is
// searched.
func TestSubjectIndexRecordThatDoesNotDecode(t *testing.T) {
	l := subjectsLog(t, 1, 20, 3)
	known := knownAtEnd(t, l)
	index := filepath.Join(t.TempDir(), "subjects.idx")
	if _, err := l.IndexSubjects(context.Background(), index, known, -1); err != nil {
		t.Fatal(err)
	}
	x := openSubjects(index)
	if x == nil {
		t.Fatal("the index does not open")
	}
	files := x.files
	x.close()
	var b bytes.Buffer
	w := table.NewWriter(&b, subjectsMagic, 1)
	w.Record("s1", func(e *table.Enc) { e.Uint(3) }) // three places, none there
	w.FinishSummary(nil, func(e *table.Enc) {
		e.Uint(uint64(len(files)))
		for name, ix := range files {
			e.Str(name)
			e.Uint(ix.inode)
			e.Int(ix.end.Offset)
			e.Int(ix.end.Len)
			e.Uint(uint64(ix.end.CRC))
		}
	})
	os.WriteFile(index, b.Bytes(), 0o644)
	if x := openSubjects(index); x == nil {
		t.Fatal("the crafted index does not open")
	} else if _, ok := x.find("s1"); ok {
		t.Fatal("a record that does not decode was found")
	}
	aboutIsWhole(t, l, "s1", known, index, "a record that does not decode")
}

// A copy of a line in other bytes (its whitespace changed) is dropped by a
// read, and so by About, with the index and without.
func TestAboutDropsACopyInOtherBytes(t *testing.T) {
	l := subjectsLog(t, 1, 10, 2)
	files, _ := l.Files()
	b, _ := os.ReadFile(files[0])
	lines := splitLines(b)
	copied := bytes.Replace(lines[4], []byte(`{"v"`), []byte(`{ "v"`), 1)
	os.WriteFile(files[0], slices.Concat(bytes.Join(lines[:5], nil), copied, bytes.Join(lines[5:], nil)), 0o644)
	known := knownAtEnd(t, l)
	index := filepath.Join(t.TempDir(), "subjects.idx")
	if _, err := l.IndexSubjects(context.Background(), index, known, -1); err != nil {
		t.Fatal(err)
	}
	for _, x := range []string{"", index} {
		aboutIsWhole(t, l, "s0", known, x, "a copy in other bytes, index "+x)
	}
}

// subjectsLog is a log of n events by writers writers in turn, about
// subjects s0 to s(subjects-1) in turn.
func subjectsLog(t *testing.T, writers, n, subjects int) *Log {
	t.Helper()
	logs := writersOfOneLog(t, writers)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		d := []Draft{{Type: "t.a", Subject: fmt.Sprint("s", i%subjects)}}
		if _, err := logs[i%writers].Append(context.Background(), at.Add(time.Duration(i)*time.Second), "ada", d, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return logs[0].Log
}
