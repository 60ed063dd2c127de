package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Last gives the last n matching events a whole read gives, for logs of
// three writers appending in random turns (one of them quiet for a long
// stretch, so its events sort far back), with batches, a torn tail and a
// line copied in place, under filters that match often, rarely or never;
// and a resume from where it ended reads what is appended after.
func TestLastAsWholeRead(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 9))
		logs := writersOfOneLog(t, 3)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 600 + r.IntN(600) {
			w := r.IntN(3)
			if w == 2 && i > 100 && i < 900 {
				w = r.IntN(2) // writer 2 quiet for a stretch
			}
			var drafts []Draft
			for range 1 + r.IntN(3)*r.IntN(2) {
				drafts = append(drafts, Draft{Type: []string{"t.a", "t.b", "t.c"}[r.IntN(3)], Subject: fmt.Sprint("s", r.IntN(40))})
			}
			at = at.Add(time.Second)
			if _, err := logs[w].Append(context.Background(), at, "ada", drafts, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		files, _ := logs[0].Files()
		if seed%2 == 1 { // a line copied in place: dropped with a warning
			b, _ := os.ReadFile(files[0])
			lines := splitLines(b)
			os.WriteFile(files[0], append(b, lines[len(lines)-1]...), 0o644)
		}
		if seed%3 == 2 { // a torn tail
			f, _ := os.OpenFile(files[1], os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"v":1,"torn`)
			f.Close()
		}
		if seed%3 == 0 { // an unfinished batch: a two-event append cut after its first line
			evs, err := logs[0].Append(context.Background(), at.Add(time.Second), "ada", []Draft{{Type: "t.a", Subject: "b1"}, {Type: "t.a", Subject: "b2"}}, AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(logs[0].Dir(), evs[0].Writer+Ext)
			b, _ := os.ReadFile(path)
			lines := splitLines(b)
			os.WriteFile(path, b[:len(b)-len(lines[len(lines)-1])], 0o644)
		}
		l := logs[0].Log
		whole := readAll(t, l)
		for _, m := range []struct {
			name  string
			match func(*Event) bool
		}{
			{"all", func(*Event) bool { return true }},
			{"type", func(e *Event) bool { return e.Type == "t.b" }},
			{"rare", func(e *Event) bool { return e.Subject == "s7" && e.Writer == logs[2].mustWriter(t) }},
			{"none", func(*Event) bool { return false }},
		} {
			var want []*Event
			for _, e := range whole {
				if m.match(e) {
					want = append(want, e)
				}
			}
			for _, n := range []int{1, 3, 64, 65, 300, 5000, math.MaxInt} {
				got, from, err := l.Last(context.Background(), n, m.match, nil)
				if err != nil {
					t.Fatal(err)
				}
				w := want[max(0, len(want)-n):]
				if !slices.EqualFunc(got, w, func(a, b *Event) bool { return a.ID == b.ID }) {
					t.Fatalf("seed %d, %s, last %d: %d events, want %d (%v, want %v)", seed, m.name, n, len(got), len(w), ids(got), ids(w))
				}
				if len(from) != len(files) {
					t.Fatalf("seed %d: ended in %d files of %d", seed, len(from), len(files))
				}
			}
		}
		// A cancelled caller stops Last, which would read the whole log
		// for a filter that matches nothing.
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := l.Last(cancelled, 5, func(*Event) bool { return false }, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("seed %d: Last, cancelled: %v", seed, err)
		}
		// From where Last ended, a read finds only what is appended after.
		_, from, err := l.Last(context.Background(), 5, func(*Event) bool { return true }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := logs[2].Append(context.Background(), at.Add(time.Hour), "ada", []Draft{{Type: "t.z", Subject: "after"}}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rd, err := l.Read(from)
		if err != nil {
			t.Fatal(err)
		}
		var after []string
		for {
			e, _, err := rd.Next()
			if err != nil {
				break
			}
			after = append(after, e.Type)
		}
		rd.Close()
		if !slices.Equal(after, []string{"t.z"}) {
			t.Fatalf("seed %d: after Last's end, read %v", seed, after)
		}
	}
}

// writersOfOneLog opens n writers' logs of one events directory.
func writersOfOneLog(t *testing.T, n int) []*testLog {
	root := t.TempDir()
	var logs []*testLog
	for w := range n {
		logs = append(logs, openTestLog(filepath.Join(root, "events"), filepath.Join(root, fmt.Sprint("private", w))))
	}
	return logs
}

func ids(es []*Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func (tl *testLog) mustWriter(t *testing.T) string {
	w, err := tl.WriterID()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TailStart resumes a read right before a file's last n lines, or at its
// beginning when it has no more: the lines read after it are the file's
// last ones, numbered as a whole read numbers them, whether it counts them
// from the beginning or from a place it knows.
func TestTailStart(t *testing.T) {
	t.Parallel()
	tl := newTestLog(t)
	for i := range 50 {
		if _, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "t.x", Subject: fmt.Sprint(i)}}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := tl.Files()
	// Where a whole read stands after each line: the places a checkpoint
	// may know (TailStart's known).
	known := []Start{{}}
	whole, err := tl.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, pos, err := whole.Next()
		if err != nil {
			break
		}
		known = append(known, pos.Start())
	}
	whole.Close()
	for _, n := range []int{0, 1, 2, 49, 50, 51, 1000} {
		s, err := TailStart(files[0], n, Start{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range known { // counted from a known place, or past it: the same start
			if got, err := TailStart(files[0], n, k); err != nil || got != s {
				t.Fatalf("n %d, known %+v: %+v (%v), want %+v", n, k, got, err, s)
			}
		}
		r, err := tl.Read(map[string]Start{WriterOf(files[0]): s})
		if err != nil {
			t.Fatalf("n %d: %v", n, err)
		}
		var lines []int
		for {
			_, pos, err := r.Next()
			if err != nil {
				break
			}
			lines = append(lines, pos.Line)
		}
		r.Close()
		want := []int{}
		for line := max(1, 51-n); line <= 50; line++ {
			want = append(want, line)
		}
		if !slices.Equal(lines, want) && !(len(lines) == 0 && len(want) == 0) {
			t.Errorf("n %d: lines %v, want %v", n, lines, want)
		}
		if n >= 50 && s != (Start{}) {
			t.Errorf("n %d: start %+v, want the beginning", n, s)
		}
	}
}

// unappendCRC takes bytes off the end of a CRC-32: the checksum of the
// prefix, for every split of random bytes.
func TestUnappendCRC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		b := make([]byte, r.IntN(300))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		whole := crc32.ChecksumIEEE(b)
		for k := range len(b) + 1 {
			if got, want := unappendCRC(whole, b[k:]), crc32.ChecksumIEEE(b[:k]); got != want {
				t.Fatalf("%d bytes, prefix %d: %08x, want %08x", len(b), k, got, want)
			}
		}
	}
}

// About finds a subject's events as a whole read filtered does, whatever
// place of each file it is told the last save read to: in three writers'
// files with batches, a copy of a line in place before that place, and
// subjects that JSON spells with escapes.
func TestAboutAsWholeRead(t *testing.T) { // not parallel: it sets aboutBuf
	full := aboutBuf
	defer func() { aboutBuf = full }()
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 11))
		logs := writersOfOneLog(t, 3)
		subjects := []string{"s1", "s2", "s12", `q"t`, "a<b", "s2x"}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for range 300 + r.IntN(300) {
			var drafts []Draft
			for range 1 + r.IntN(3)*r.IntN(2) {
				drafts = append(drafts, Draft{Type: []string{"t.a", "t.b"}[r.IntN(2)], Subject: subjects[r.IntN(len(subjects))]})
			}
			at = at.Add(time.Second)
			if _, err := logs[r.IntN(3)].Append(context.Background(), at, "ada", drafts, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		files, _ := logs[0].Files()
		b, _ := os.ReadFile(files[0]) // a line copied in place, in the middle: dropped
		lines := splitLines(b)
		k := len(lines) / 2
		os.WriteFile(files[0], slices.Concat(bytes.Join(lines[:k+1], nil), lines[k], bytes.Join(lines[k+1:], nil)), 0o644)
		l := logs[0].Log
		// Places a checkpoint may know: where a whole read stands after
		// none, some or all of each file's lines.
		var all []map[string]Start
		known := map[string]Start{}
		rd, err := l.ReadQuiet(nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			_, pos, err := rd.Next()
			if err != nil {
				break
			}
			known[pos.Writer] = pos.Start()
			if i%97 == 0 {
				all = append(all, maps.Clone(known))
			}
		}
		rd.Close()
		all = append(all, nil, known)
		// A subject index at each place, written whole (at) and grown
		// from the place before (grown): the same bytes.
		dir := t.TempDir()
		indexAt, grown := map[int]string{}, filepath.Join(dir, "grown")
		for i, k := range all {
			indexAt[i] = filepath.Join(dir, fmt.Sprint(i))
			if _, err := l.IndexSubjects(context.Background(), indexAt[i], k, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := l.IndexSubjects(context.Background(), grown, k, -1); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(indexAt[i])
			g, _ := os.ReadFile(grown)
			if k != nil && (len(a) == 0 || !bytes.Equal(a, g)) {
				t.Fatalf("seed %d: the index at place %d grown differs from the one written whole (%d, %d bytes)", seed, i, len(g), len(a))
			}
		}
		whole := readAll(t, l)
		for _, s := range subjects {
			match := func(e *Event) bool { return e.Type == "t.a" }
			var want []string
			for _, e := range whole {
				if e.Subject == s && match(e) {
					want = append(want, e.ID)
				}
			}
			for i, k := range all {
				// No index, the index at this place, and one at another
				// (past it: not used for the files it is past).
				for _, index := range []string{"", indexAt[i], indexAt[r.IntN(len(all))]} {
					for _, size := range []int64{full, 700} { // a few lines a read: lines across reads
						aboutBuf = size
						got, from, err := l.About(context.Background(), s, match, k, index)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(ids(got), want) {
							t.Fatalf("seed %d, %q from %v, index %s, reads of %d: %v, want %v", seed, s, k, index, size, ids(got), want)
						}
						if len(from) != len(files) {
							t.Fatalf("seed %d: ended in %d files of %d", seed, len(from), len(files))
						}
					}
				}
			}
		}
		// The copied line's subject, with reads of every size from about
		// two lines up: the copy and its line fall across two reads too.
		var dup *Event
		for _, e := range whole {
			if bytes.Contains(lines[k], []byte(`"id":"`+e.ID+`"`)) {
				dup = e
			}
		}
		if dup == nil {
			t.Fatalf("seed %d: the copied line's event was not read", seed)
		}
		var want []string
		for _, e := range whole {
			if e.Subject == dup.Subject {
				want = append(want, e.ID)
			}
		}
		for size := int64(520); size < 1400; size += 7 {
			aboutBuf = size
			got, _, err := l.About(context.Background(), dup.Subject, func(*Event) bool { return true }, known, indexAt[len(all)-1])
			if err != nil || !slices.Equal(ids(got), want) {
				t.Fatalf("seed %d, %q, reads of %d: %v (%v), want %v", seed, dup.Subject, size, ids(got), err, want)
			}
		}
		aboutBuf = full
		// A line before the known place that does not decode (the file
		// changed in place since the caller looked) is an error naming
		// it; one whose last known line changed is read whole, and its
		// damage found as a whole read finds it.
		f1 := files[1]
		good, _ := os.ReadFile(f1)
		k1 := known[WriterOf(f1)]
		bad := slices.Clone(good)
		lastKnown := bad[k1.Offset-k1.Len : k1.Offset]
		if i := bytes.Index(lastKnown, []byte(`"type":"t.`)); i >= 0 { // t.a and t.b swapped: it still decodes
			lastKnown[i+10] ^= 'a' ^ 'b'
		}
		os.WriteFile(f1, bad, 0o644)
		if _, _, err := l.About(context.Background(), "s1", func(*Event) bool { return true }, known, ""); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("seed %d: the last known line changed: %v", seed, err)
		}
		bad = slices.Clone(good)
		first := bytes.IndexByte(good, '\n') + 1
		copy(bad[first:], `{"v":1,"subject":"s1","x":`)
		os.WriteFile(f1, bad, 0o644)
		_, _, err = l.About(context.Background(), "s1", func(*Event) bool { return true }, known, "")
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 {
			t.Fatalf("seed %d: line 2 does not decode: %v", seed, err)
		}
		os.WriteFile(f1, good, 0o644)
		// A cancelled caller (an MCP client gone) stops the search.
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := l.About(cancelled, "s1", func(*Event) bool { return true }, known, ""); !errors.Is(err, context.Canceled) {
			t.Fatalf("seed %d: About, cancelled: %v", seed, err)
		}
		// A file whose known line is now another's (cut back, then
		// written on, since the caller looked) is read whole.
		if err := os.Truncate(f1, k1.Offset-k1.Len); err != nil {
			t.Fatal(err)
		}
		for _, tl := range logs {
			if tl.mustWriter(t) == WriterOf(f1) {
				if _, err := tl.Append(context.Background(), at.Add(time.Hour), "ada", []Draft{{Type: "t.a", Subject: "s1"}, {Type: "t.a", Subject: "a much longer subject than before"}}, AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, index := range []string{"", indexAt[len(all)-1]} {
			aboutIsWhole(t, l, "s1", known, index, fmt.Sprintf("seed %d: a file written on past another line at its known place", seed))
		}
		os.WriteFile(f1, good, 0o644)
		// A file cut short before its known place is read whole, as any
		// read reads it (its torn last line dropped).
		if err := os.Truncate(f1, k1.Offset-3); err != nil {
			t.Fatal(err)
		}
		for _, index := range []string{"", indexAt[len(all)-1]} {
			aboutIsWhole(t, l, "s1", known, index, fmt.Sprintf("seed %d: a file cut short before its known place", seed))
		}
	}
}

// aboutIsWhole checks l.About(subject) from known against a whole read.
func aboutIsWhole(t *testing.T, l *Log, subject string, known map[string]Start, index, what string) {
	t.Helper()
	var want []string
	for _, e := range readAll(t, l) {
		if e.Subject == subject {
			want = append(want, e.ID)
		}
	}
	if got, _, err := l.About(context.Background(), subject, func(*Event) bool { return true }, known, index); err != nil || !slices.Equal(ids(got), want) {
		t.Fatalf("%s: %v (%v), want %v", what, ids(got), err, want)
	}
}
