package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// forked returns lines of writer w's file as spool appends them: base
// lines, then what each of two copies of that file appended on its own
// branch (subjects a0, a1, … and b0, b1, …).
func forked(t *testing.T, base, a, b int) (common, ours, theirs [][]byte) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) *Log {
		private := filepath.Join(dir, name, "private")
		if err := os.MkdirAll(private, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(private, "writer"), []byte("w\n"), 0o644)
		return Open(Options{Dir: filepath.Join(dir, name, "events"), PrivateDir: private})
	}
	add := func(l *Log, prefix string, n int) {
		for i := range n {
			at := time.Unix(int64(1000+i), 0)
			if _, err := l.Append(context.Background(), at, "a", []Draft{{Type: "t.x", Subject: fmt.Sprint(prefix, i)}}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	lines := func(l *Log) [][]byte {
		data, err := os.ReadFile(filepath.Join(l.Dir(), "w"+Ext))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte{'\n'})
		return lines[:len(lines)-1] // after the last newline
	}
	ol, tl := open("ours"), open("theirs")
	add(ol, "base", base)
	if base > 0 {
		os.MkdirAll(tl.Dir(), 0o755)
		b, _ := os.ReadFile(filepath.Join(ol.Dir(), "w"+Ext))
		os.WriteFile(filepath.Join(tl.Dir(), "w"+Ext), b, 0o644)
	}
	add(ol, "a", a)
	add(tl, "b", b)
	o, th := lines(ol), lines(tl)
	return o[:base], o[base:], th[base:]
}

func mustDecode(t *testing.T, line []byte) *Event {
	t.Helper()
	e, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// legacyFork is forked's lines as a spool from before the chain wrote them
// (no prev): the old layout, whose files git merged.
func legacyFork(t *testing.T, base, a, b int) (common, ours, theirs [][]byte) {
	t.Helper()
	c, o, th := forked(t, base, a, b)
	un := func(lines [][]byte) [][]byte {
		if len(lines) == 0 {
			return lines
		}
		return splitLines(unchain(t, join(lines)))
	}
	return un(c), un(o), un(th)
}

// withMore is line as the first event of a multi-event append.
func withMore(t *testing.T, line []byte) []byte {
	t.Helper()
	e, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	e.More = true
	if e.ID, err = e.ContentID(); err != nil {
		t.Fatal(err)
	}
	out, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func join(parts ...[][]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, bytes.Join(p, nil)...)
	}
	return out
}

// without returns lines without the ones at the given indexes.
func without(lines [][]byte, drop ...int) [][]byte {
	var out [][]byte
	for i, l := range lines {
		if !containsInt(drop, i) {
			out = append(out, l)
		}
	}
	return out
}

func containsInt(ns []int, n int) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

// TestRepairLines: what repair fixes, and what it leaves for a person. A
// repaired file breaks no rule and keeps every complete event it had.
func TestRepairLines(t *testing.T) {
	base, ours, theirs := legacyFork(t, 3, 2, 2)
	_, ours3, theirs3 := legacyFork(t, 3, 3, 3)
	_, own, other := legacyFork(t, 0, 2, 2)
	// This spool's lines: chained by prev.
	cbase, cours, ctheirs := forked(t, 3, 2, 2)
	mixed := append(splitLines(unchain(t, join(cbase))), rechain(t, append(splitLines(unchain(t, join(cbase))), cours...), 3)[3:]...)
	cases := []struct {
		name    string
		content []byte
		fixed   string // a substring of Fixed, "" for nothing fixed
		left    string // a substring of Left, "" for a repaired file
	}{
		{"in order", join(base, ours), "", ""},
		{"a copy", join(base, ours[:1], ours[:1], ours[1:]), "dropped 1 exact copies of other lines (lines 5)", ""},
		{"a torn tail", append(join(base), `{"v":1,"id`...), "removed a torn tail of 10 bytes", ""},
		{"an unfinished batch", join(base, [][]byte{withMore(t, ours[0])}), "removed 1 lines of an append that never finished", ""},
		{"merged without the driver, ours first", join(base, ours, theirs), "put 7 lines in order as the merge driver would", ""},
		{"merged without the driver, theirs first", join(base, theirs, ours), "put 7 lines in order as the merge driver would", ""},
		{"both whole sides, one after the other", join(base, ours, base, theirs), "put 7 lines in order", ""},
		{"a line deleted", join(without(base, 1), ours), "", "seq 2 is missing: a line was deleted"},
		// A line deleted from one side whose seq the other side has: every
		// seq is there, yet putting the lines in order would lose the event
		// for good.
		{"merged, ours' first line deleted", join(base, ours[1:], theirs), "", "line 4: seq 5 follows seq 3, and the file is not the sides of one merge"},
		{"merged, ours' middle line deleted", join(base, without(ours3, 1), theirs3), "", "line 5: seq 6 follows seq 4"},
		{"merged, theirs' middle line deleted", join(base, ours3, without(theirs3, 1)), "", "line 8: seq 6 follows seq 4"},
		{"merged, theirs' middle line deleted, theirs first", join(base, without(theirs3, 1), ours3), "", "line 5: seq 6 follows seq 4"},
		{"merged, sides of different lengths", join(base, ours[:1], theirs3), "put 7 lines in order", ""},
		{"merged, sides that share no line", join(own, other), "put 4 lines in order", ""},
		{"merged, lines of the sides interleaved", join(base, ours[:1], theirs[:1], ours[1:], theirs[1:]), "", "line 7: seq 5 follows seq 5"},
		{"a line that does not parse", join(base[:1], [][]byte{[]byte("{\n")}, base[1:]), "", "line 2: corrupt event log: not valid JSON"},
		{"an edited line", join(base[:1], [][]byte{bytes.Replace(base[1], []byte("base1"), []byte("base7"), 1)}, base[2:]), "", "line 2: id"},
		{"a line longer than MaxLine", join(base[:1], [][]byte{overlongEvent(t, "w", 2, 1)}, base[:1]), "", "line 2: 4194305 bytes, longer than 4194304"},
		{"a line of MaxLine bytes", join(base[:1], [][]byte{overlongEvent(t, "w", 2, 0)}, base[:1]), "dropped 1 exact copies", ""},
		{"chained, in order", join(cbase, cours), "", ""},
		{"chained, a copy", join(cbase, cours[:1], cbase[2:], cours[1:]), "dropped 1 exact copies", ""},
		{"chained, lines out of order", join(cbase[:1], cbase[2:], cours, cbase[1:2]), "put 5 lines in the order of their chain of prev", ""},
		{"an older spool's lines, then chained ones out of order", join(mixed[:3], mixed[4:], mixed[3:4]), "put 5 lines in the order of their chain", ""},
		{"chained, a line deleted", join(without(cbase, 1), cours), "", "seq 2 is missing: a line was deleted"},
		{"chained, a line deleted, seq renumbered, lines out of order", join(cbase[:1], [][]byte{
			reencode(t, cours[0], func(e *Event) { e.Seq = 3 }), reencode(t, cbase[2], func(e *Event) { e.Seq = 2 })}),
			"", "no line follows " + mustDecode(t, cbase[0]).ID + " in the chain of prev, yet 2 lines are not placed"},
		{"chained, the last line before the chain deleted, seq renumbered", join(mixed[:2],
			[][]byte{reencode(t, mixed[4], func(e *Event) { e.Seq = 3 }), reencode(t, mixed[3], func(e *Event) { e.Seq = 4 })}), "", "no line follows"},
		{"chained, merged without the driver", join(cbase, cours, ctheirs), "", "both follow"},
		{"chained, both whole sides, one after the other", join(cbase, cours, cbase, ctheirs), "", "both follow"},
		{"chained, out of order and seq renumbered", join(cbase[:1], [][]byte{
			reencode(t, cbase[2], func(e *Event) { e.Seq = 2 }), reencode(t, cbase[1], func(e *Event) { e.Seq = 3 })}),
			"", "line 3, in the order of the chain of prev: seq 3 follows 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, rep := repairLines(c.content, "w")
			if c.left != "" {
				if !strings.Contains(strings.Join(rep.Left, "\n"), c.left) || out != nil {
					t.Fatalf("left %q (content %d bytes), want %q", rep.Left, len(out), c.left)
				}
				return
			}
			if len(rep.Left) > 0 {
				t.Fatalf("left %q", rep.Left)
			}
			if fixed := strings.Join(rep.Fixed, "\n"); (c.fixed == "") != (fixed == "") || !strings.Contains(fixed, c.fixed) {
				t.Fatalf("fixed %q, want %q", rep.Fixed, c.fixed)
			}
			mustKeepEveryEvent(t, c.content, out)
		})
	}
}

// mustKeepEveryEvent checks that out breaks no rule and has every complete
// event of in.
func mustKeepEveryEvent(t *testing.T, in, out []byte) {
	t.Helper()
	r := newRules("w")
	got := map[string]bool{}
	for n, raw := range bytes.SplitAfter(out, []byte{'\n'}) {
		if len(raw) == 0 {
			continue
		}
		if len(raw) > MaxLine {
			t.Fatalf("repaired line %d is longer than MaxLine", n+1)
		}
		e, sp, err := decode(raw)
		if err != nil || raw[len(raw)-1] != '\n' {
			t.Fatalf("repaired line %d does not decode: %v", n+1, err)
		}
		if b := r.check(raw, e, sp, n+1); b != nil {
			t.Fatalf("repaired line %d breaks a rule: %s", n+1, b.msg)
		}
		got[e.ID] = true
	}
	for _, raw := range bytes.SplitAfter(in, []byte{'\n'}) {
		e, err := Decode(raw)
		if err != nil || len(raw) == 0 || raw[len(raw)-1] != '\n' || e.More {
			continue
		}
		if !got[e.ID] {
			t.Fatalf("repair lost event %s (%s)", e.ID, e.Subject)
		}
	}
}
