package eventlog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A multi-event append is all or nothing: every event but the last says
// "more", and a file that ends inside a batch is neither read nor kept.
func TestBatchIsAllOrNothing(t *testing.T) {
	tl := newTestLog(t)
	appendN(t, tl.Log, 1)
	batch := []Draft{{Type: "task.succeeded", Subject: "a"}, {Type: "task.closed", Subject: "a"}, {Type: "task.noted", Subject: "a"}}
	evs, err := tl.Append(context.Background(), testAt, "ada", batch, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if want := i < len(evs)-1; e.More != want {
			t.Fatalf("event %d of the batch: more=%v, want %v", i, e.More, want)
		}
	}
	path := filepath.Join(tl.Dir(), evs[0].Writer+Ext)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, tl.Log)); n != 4 {
		t.Fatalf("read %d events, want 4", n)
	}

	// A crash after two of the three lines reached the file.
	lines := bytes.SplitAfter(whole, []byte{'\n'})
	cut := bytes.Join(lines[:3], nil) // the single event and two batch lines
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, tl.Log)); n != 1 {
		t.Fatalf("readers see %d events of a file ending inside a batch, want only the 1 before it", n)
	}
	rep, err := tl.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "unfinished batch") {
		t.Fatalf("Check problems %v, want one unfinished batch", rep.Problems)
	}

	// The next append drops the unfinished batch (backed up) and goes on.
	after := appendN(t, tl.Log, 1)
	if after[0].Seq != 2 {
		t.Fatalf("the append after repair has seq %d, want 2", after[0].Seq)
	}
	got, _ := os.ReadFile(path)
	if !bytes.HasPrefix(got, lines[0]) || bytes.Contains(got, []byte("task.succeeded")) {
		t.Fatalf("after repair the file is\n%s", got)
	}
	backups, _ := filepath.Glob(filepath.Join(tl.opt.PrivateDir, "torn", "*"))
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one", backups)
	}
	if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, bytes.Join(lines[1:3], nil)) {
		t.Fatalf("backup holds %q", b)
	}
	if rep, _ := tl.Check(); len(rep.Problems) != 0 {
		t.Fatalf("Check after repair: %v", rep.Problems)
	}
	if w := tl.warnings(); len(w) != 1 || !strings.Contains(w[0], "never finished") {
		t.Fatalf("warnings %v", w)
	}
}

// A batch whose last line is torn loses the whole batch, not just the torn line.
func TestBatchWithTornLastLine(t *testing.T) {
	tl := newTestLog(t)
	evs, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.one"}, {Type: "a.two"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tl.Dir(), evs[0].Writer+Ext)
	whole, _ := os.ReadFile(path)
	if err := os.WriteFile(path, whole[:len(whole)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, tl.Log)); n != 0 {
		t.Fatalf("read %d events of a torn batch, want 0", n)
	}
	appendN(t, tl.Log, 1)
	if evs := readAll(t, tl.Log); len(evs) != 1 || evs[0].Seq != 1 {
		t.Fatalf("after repair: %d events", len(evs))
	}
}

// Duplicate idempotency keys inside one batch yield the first draft's event.
func TestBatchRepeatedIdem(t *testing.T) {
	tl := newTestLog(t)
	evs, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.one", Idem: "k"}, {Type: "a.two"}, {Type: "a.one", Idem: "k"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if evs[2].ID != evs[0].ID || evs[1].More || !evs[0].More {
		t.Fatalf("events %+v", evs)
	}
	if n := len(readAll(t, tl.Log)); n != 2 {
		t.Fatalf("read %d events, want 2", n)
	}
}

// Two appends in one session, the first creating the writer file.
func TestSessionAppendsTwiceToANewFile(t *testing.T) {
	tl := newTestLog(t)
	s, err := tl.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 2; i++ {
		if _, err := s.Append(testAt, "ada", []Draft{{Type: "a.one"}}, AppendOptions{}); err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
	}
	if n := len(readAll(t, tl.Log)); n != 2 {
		t.Fatalf("read %d events, want 2", n)
	}
}

// The merge driver drops a side's unfinished batch instead of sorting it
// into the middle of the file, where readers would take it for whole.
func TestUnionDropsAnUnfinishedBatch(t *testing.T) {
	tl := newTestLog(t)
	appendN(t, tl.Log, 1)
	evs, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "a.one"}, {Type: "a.two"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tl.Dir(), evs[0].Writer+Ext)
	whole, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(whole, []byte{'\n'})
	ours := bytes.Join(lines[:2], nil) // the single event and the batch's first ("more") line
	theirs := lines[0]
	for _, sides := range [][2][]byte{{ours, theirs}, {theirs, ours}} {
		got, err := Union(sides[0], sides[1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, lines[0]) {
			t.Fatalf("union kept an unfinished batch:\n%s", got)
		}
	}
}
