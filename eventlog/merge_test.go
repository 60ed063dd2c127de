package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cloneLog copies a log's events and private dir, as a second checkout of the
// same clone (two branches of one writer) would have them.
func cloneLog(t *testing.T, l *testLog) *testLog {
	t.Helper()
	root := t.TempDir()
	c := openTestLog(filepath.Join(root, "events"), filepath.Join(root, "private"))
	for _, pair := range [][2]string{{l.opt.Dir, c.opt.Dir}, {l.opt.PrivateDir, c.opt.PrivateDir}} {
		if err := os.CopyFS(pair[1], os.DirFS(pair[0])); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func appendTyped(t *testing.T, l *Log, typ string, n int, at time.Time) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(context.Background(), at.Add(time.Duration(i)*time.Second), "ada", []Draft{{Type: typ, Subject: typ}}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func fileBytes(t *testing.T, l *Log) []byte {
	t.Helper()
	b, err := os.ReadFile(writerFile(t, l))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func idsOf(t *testing.T, data []byte) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		e, err := Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		ids[e.ID] = true
	}
	return ids
}

// checkUnion writes a union result as the writer's file and checks it.
func checkUnion(t *testing.T, l *testLog, merged []byte) {
	t.Helper()
	if err := os.WriteFile(writerFile(t, l.Log), merged, 0o644); err != nil {
		t.Fatal(err)
	}
	mustCheckClean(t, l.Log)
	events := readAll(t, l.Log)
	for i, e := range events {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d after the union", i, e.Seq)
		}
	}
}

func TestUnionDiverged(t *testing.T) {
	base := newTestLog(t)
	appendTyped(t, base.Log, "base.made", 3, testAt)
	ours, theirs := cloneLog(t, base), cloneLog(t, base)
	appendTyped(t, ours.Log, "ours.made", 2, testAt.Add(time.Hour))
	appendTyped(t, theirs.Log, "theirs.made", 3, testAt.Add(2*time.Hour))
	// The old layout's writer files, which an older spool wrote: unchained.
	a, b := unchain(t, fileBytes(t, ours.Log)), unchain(t, fileBytes(t, theirs.Log))

	ab, err := Union(a, b)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := Union(b, a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ab, ba) {
		t.Fatalf("Union is not symmetric:\n%s\n%s", ab, ba)
	}
	// Every id of either side, once; seq renumbered 1..n.
	want := idsOf(t, a)
	for id := range idsOf(t, b) {
		want[id] = true
	}
	got := idsOf(t, ab)
	if len(got) != len(want) || len(want) != 8 {
		t.Fatalf("union has %d ids, want %d (8)", len(got), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Fatalf("id %s lost", id)
		}
	}
	if n := bytes.Count(ab, []byte{'\n'}); n != 8 {
		t.Fatalf("union has %d lines, want 8", n)
	}
	checkUnion(t, ours, ab)

	// The merged file can be appended to (chained, by this spool) and merged again.
	appendTyped(t, ours.Log, "after.merge", 1, testAt.Add(3*time.Hour))
	again, err := Union(fileBytes(t, ours.Log), b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, fileBytes(t, ours.Log)) {
		t.Fatalf("re-merging a side already merged changed the file:\n%s", again)
	}
}

func TestUnionOverlapping(t *testing.T) {
	// One side is a prefix of the other (a fast-forward seen by the driver).
	l := newTestLog(t)
	appendTyped(t, l.Log, "a.b", 3, testAt)
	short := fileBytes(t, l.Log)
	appendTyped(t, l.Log, "a.c", 2, testAt)
	long := fileBytes(t, l.Log)
	for _, pair := range [][2][]byte{{short, long}, {long, short}, {long, long}} {
		got, err := Union(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, long) {
			t.Fatalf("union of overlapping sides:\n%s\nwant\n%s", got, long)
		}
	}
}

func TestUnionDisjoint(t *testing.T) {
	// The file was created on both branches: nothing in common.
	root := t.TempDir()
	a := openTestLog(filepath.Join(root, "a"), filepath.Join(root, "p"))
	appendTyped(t, a.Log, "left.made", 2, testAt)
	b := cloneLog(t, a)
	os.Remove(writerFile(t, b.Log))
	appendTyped(t, b.Log, "right.made", 2, testAt.Add(time.Minute))
	left, right := unchain(t, fileBytes(t, a.Log)), unchain(t, fileBytes(t, b.Log))
	ab, err := Union(left, right)
	if err != nil {
		t.Fatal(err)
	}
	ba, _ := Union(right, left)
	if !bytes.Equal(ab, ba) {
		t.Fatal("Union is not symmetric")
	}
	if n := len(idsOf(t, ab)); n != 4 {
		t.Fatalf("%d events, want 4", n)
	}
	checkUnion(t, a, ab)
}

func TestUnionEmptySides(t *testing.T) {
	l := newTestLog(t)
	appendTyped(t, l.Log, "a.b", 2, testAt)
	data := fileBytes(t, l.Log)
	for _, pair := range [][2][]byte{{nil, data}, {data, nil}} {
		got, err := Union(pair[0], pair[1])
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("union with an empty side = %q, %v", got, err)
		}
	}
	if got, err := Union(nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("union of nothing = %q, %v", got, err)
	}
}

func TestUnionRefusesBadLines(t *testing.T) {
	l := newTestLog(t)
	appendTyped(t, l.Log, "a.b", 2, testAt)
	good := fileBytes(t, l.Log)
	for name, bad := range map[string][]byte{
		"garbage": append(append([]byte{}, good...), "not json\n"...),
		"torn":    append(append([]byte{}, good...), `{"v":1,"id":"x`...),
		"newer":   append(append([]byte{}, good...), strings.Replace(validLine, `"v":1`, `"v":2`, 1)+"\n"...),
	} {
		if _, err := Union(good, bad); err == nil || !strings.Contains(err.Error(), "theirs line 3") {
			t.Errorf("%s: err = %v", name, err)
		}
		if _, err := Union(bad, good); err == nil || !strings.Contains(err.Error(), "ours line 3") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestUnionProperties(t *testing.T) {
	// Random histories of one writer on three branches: the union of any of
	// them is symmetric, keeps every id once, absorbs its inputs, and is
	// the same whatever the order of merging.
	for seed := range 5 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		base := newTestLog(t)
		appendTyped(t, base.Log, "base.made", rng.IntN(4), testAt)
		var sides [3][]byte
		for i := range sides {
			c := cloneLog(t, base)
			appendTyped(t, c.Log, fmt.Sprintf("side%d.made", i), 1+rng.IntN(4), testAt.Add(time.Duration(rng.IntN(1000))*time.Second))
			sides[i] = unchain(t, fileBytes(t, c.Log))
		}
		u := func(a, b []byte) []byte {
			t.Helper()
			out, err := Union(a, b)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		a, b, c := sides[0], sides[1], sides[2]
		ab := u(a, b)
		if !bytes.Equal(ab, u(b, a)) {
			t.Fatalf("seed %d: not symmetric", seed)
		}
		if !bytes.Equal(u(ab, a), ab) || !bytes.Equal(u(ab, ab), ab) {
			t.Fatalf("seed %d: merging a side again changed the union", seed)
		}
		left, right := u(ab, c), u(a, u(b, c))
		if !bytes.Equal(left, right) || !bytes.Equal(left, u(u(c, a), b)) {
			t.Fatalf("seed %d: the order of merges matters:\n%s\n%s", seed, left, right)
		}
		want := idsOf(t, a)
		for id := range idsOf(t, b) {
			want[id] = true
		}
		for id := range idsOf(t, c) {
			want[id] = true
		}
		if got := idsOf(t, left); len(got) != len(want) || bytes.Count(left, []byte{'\n'}) != len(want) {
			t.Fatalf("seed %d: %d ids in %d lines, want %d", seed, len(got), bytes.Count(left, []byte{'\n'}), len(want))
		}
		checkUnion(t, base, left)
	}
}
