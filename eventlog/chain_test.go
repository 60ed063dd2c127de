package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// splitLines is a writer file's lines, each with its '\n'.
func splitLines(b []byte) [][]byte {
	lines := bytes.SplitAfter(b, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// rechain renumbers seq and makes prev and id consistent from line from on,
// as someone who rewrote a writer file and wanted it to pass would.
func rechain(t *testing.T, lines [][]byte, from int) [][]byte {
	t.Helper()
	out := append([][]byte(nil), lines...)
	for i := from; i < len(out); i++ {
		prev := ""
		if i > 0 {
			e, err := Decode(out[i-1])
			if err != nil {
				t.Fatal(err)
			}
			prev = e.ID
		}
		out[i] = reencode(t, out[i], func(e *Event) { e.Seq, e.Prev = uint64(i+1), prev; withID(t, e) })
	}
	return out
}

// unchain is b as a spool from before the chain would have written it: no
// prev, ids hashed without it.
func unchain(t *testing.T, b []byte) []byte {
	t.Helper()
	var out []byte
	for _, l := range splitLines(b) {
		out = append(out, reencode(t, l, func(e *Event) { e.Prev = ""; withID(t, e) })...)
	}
	return out
}

func TestAppendChainsEvents(t *testing.T) {
	tl := newTestLog(t)
	evs := appendN(t, tl.Log, 2)
	batch, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "t.a"}, {Type: "t.b"}, {Type: "t.c", Idem: "k"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, batch...)
	// A session that read the tail from the file (not from its own append)
	// chains on too.
	evs = append(evs, appendN(t, openTestLog(tl.Dir(), tl.opt.PrivateDir).Log, 1)...)
	// A draft whose idempotency key is in the log appends nothing: the next
	// event follows the last one written.
	again, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "t.c", Idem: "k"}, {Type: "t.d"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, again[1])
	for i, e := range evs {
		want := ""
		if i > 0 {
			want = evs[i-1].ID
		}
		if e.Prev != want {
			t.Fatalf("event %d (%s) has prev %q, want %q", i, e.Type, e.Prev, want)
		}
	}
	got := readAll(t, tl.Log)
	if len(got) != len(evs) {
		t.Fatalf("read %d events, appended %d", len(got), len(evs))
	}
	for i := range got {
		if got[i].Prev != evs[i].Prev || got[i].ID != evs[i].ID {
			t.Fatalf("read back %+v, appended %+v", got[i], evs[i])
		}
	}
	// prev is content: the same event after another has another id.
	moved := evs[3]
	moved.Prev = evs[1].ID
	if id, _ := moved.ContentID(); id == evs[3].ID {
		t.Fatal("the id does not cover prev")
	}
	mustCheckClean(t, tl.Log)
}

// TestChainRules: what the rules make of a chained writer file that lost,
// moved or changed a line, even when seq, lc and ids were made to look
// right again.
func TestChainRules(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, l [][]byte) [][]byte
		line int    // 0: the file keeps every rule
		msg  string // in the first problem
	}{
		{"good chain", func(t *testing.T, l [][]byte) [][]byte { return l }, 0, ""},
		{"deleted line, seq renumbered", func(t *testing.T, l [][]byte) [][]byte {
			l = append(l[:2:2], l[3:]...)
			for i := 2; i < len(l); i++ {
				l[i] = reencode(t, l[i], func(e *Event) { e.Seq = uint64(i + 1) })
			}
			return l
		}, 3, "is not the id of line 2"},
		{"deleted line, seq renumbered, ids recomputed", func(t *testing.T, l [][]byte) [][]byte {
			l = append(l[:2:2], l[3:]...)
			for i := 2; i < len(l); i++ {
				l[i] = reencode(t, l[i], func(e *Event) { e.Seq = uint64(i + 1); withID(t, e) })
			}
			return l
		}, 3, "a line was removed, added or moved before this one"},
		{"first line deleted, renumbered", func(t *testing.T, l [][]byte) [][]byte {
			l = l[1:]
			for i := range l {
				l[i] = reencode(t, l[i], func(e *Event) { e.Seq = uint64(i + 1) })
			}
			return l
		}, 1, "on the first line: the lines before it were removed"},
		{"lines swapped, seq and lc made to increase", func(t *testing.T, l [][]byte) [][]byte {
			l[2], l[3] = l[3], l[2]
			for i := range l {
				l[i] = reencode(t, l[i], func(e *Event) { e.Seq, e.LC = uint64(i+1), uint64(i+1); withID(t, e) })
			}
			return l
		}, 3, "is not the id of line 2"},
		{"a line without prev after one with it", func(t *testing.T, l [][]byte) [][]byte {
			l[3] = reencode(t, l[3], func(e *Event) { e.Prev = ""; withID(t, e) })
			return l
		}, 4, "no prev after line 3, which has one"},
		{"a forged prev", func(t *testing.T, l [][]byte) [][]byte {
			l[3] = reencode(t, l[3], func(e *Event) { e.Prev = "0123456789abcdef01234567"; withID(t, e) })
			return l
		}, 4, "prev 0123456789abcdef01234567 is not the id of line 3"},
		{"prev changed, id kept", func(t *testing.T, l [][]byte) [][]byte {
			l[3] = reencode(t, l[3], func(e *Event) { e.Prev = "0123456789abcdef01234567" })
			return l
		}, 4, "is not the id of line 3"},
		{"an older spool's file", func(t *testing.T, l [][]byte) [][]byte {
			return splitLines(unchain(t, bytes.Join(l, nil)))
		}, 0, ""},
		{"an older spool's lines, then chained ones", func(t *testing.T, l [][]byte) [][]byte {
			old := splitLines(unchain(t, bytes.Join(l[:3], nil)))
			return rechain(t, append(old, l[3:]...), 3)
		}, 0, ""},
		{"an older spool's line after chained ones", func(t *testing.T, l [][]byte) [][]byte {
			return append(l, splitLines(unchain(t, appendedLine(t, l)))...)
		}, 6, "no prev after line 5"},
		// Removing a line and rewriting the rest of the chain keeps every
		// rule: only the signatures (verify --signatures) and the copies
		// and history the others have (Receive, verify) tell.
		{"deleted line, the rest rechained", func(t *testing.T, l [][]byte) [][]byte {
			return rechain(t, append(l[:2:2], l[3:]...), 2)
		}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newTestLog(t)
			appendN(t, l.Log, 5)
			path := writerFile(t, l.Log)
			editLines(t, path, func(lines [][]byte) [][]byte { return c.edit(t, lines) })
			rep, err := l.Check()
			if err != nil {
				t.Fatal(err)
			}
			_, readErr := tryReadAll(l.Log)
			if c.line == 0 {
				if len(rep.Problems) > 0 || readErr != nil {
					t.Fatalf("problems %v, read %v", rep.Problems, readErr)
				}
				return
			}
			if len(rep.Problems) == 0 {
				t.Fatal("Check found no problem")
			}
			if p := rep.Problems[0]; p.Line != c.line || !strings.Contains(p.Message, c.msg) {
				t.Fatalf("first problem %v, want line %d mentioning %q (all: %v)", p, c.line, c.msg, rep.Problems)
			}
			var le *LineError
			if !errors.As(readErr, &le) || le.Line != c.line || !errors.Is(readErr, ErrCorrupt) {
				t.Fatalf("read: %v, want a corrupt log at line %d", readErr, c.line)
			}
		})
	}
}

// appendedLine is the line the writer of lines would append next.
func appendedLine(t *testing.T, lines [][]byte) []byte {
	t.Helper()
	last, err := Decode(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	e := &Event{V: Version, Writer: last.Writer, Seq: last.Seq + 1, Prev: last.ID, LC: last.LC + 1, At: testAt, Actor: "ada", Type: "test.appended"}
	withID(t, e)
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadResumesTheChain: a reader that resumes after a line it read
// before holds the next line to that line's id.
func TestReadResumesTheChain(t *testing.T) {
	tl := newTestLog(t)
	appendN(t, tl.Log, 3)
	r, err := tl.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	var pos Pos
	for range 3 {
		if _, pos, err = r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	path := writerFile(t, tl.Log)
	b, _ := os.ReadFile(path)
	forged := reencode(t, appendedLine(t, splitLines(b)), func(e *Event) { e.Prev = "0123456789abcdef01234567"; withID(t, e) })
	os.WriteFile(path, append(b, forged...), 0o644)
	// The reader looks ahead: the error comes with Read or the first Next.
	if r, err = tl.Read(map[string]Start{pos.Writer: pos.Start()}); err == nil {
		_, _, err = r.Next()
		r.Close()
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != 4 || !strings.Contains(err.Error(), "is not the id of line 3") {
		t.Fatalf("resumed read: %v", err)
	}
}

// receiver is a clone (writer "b") that receives writer "a"'s file.
func receiver(t *testing.T) (*testLog, *Session) {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "private"), 0o755)
	os.WriteFile(filepath.Join(root, "private", "writer"), []byte("b\n"), 0o644)
	tl := openTestLog(filepath.Join(root, "events"), filepath.Join(root, "private"))
	s, err := tl.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return tl, s
}

// writerLines is n lines of writer w as its clone appends them, chained.
func writerLines(t *testing.T, w string, n int) [][]byte {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "private"), 0o755)
	os.WriteFile(filepath.Join(root, "private", "writer"), []byte(w+"\n"), 0o644)
	l := Open(Options{Dir: filepath.Join(root, "events"), PrivateDir: filepath.Join(root, "private")})
	for i := range n {
		if _, err := l.Append(context.Background(), testAt.Add(time.Duration(i)*time.Second), w+"@example.com", []Draft{{Type: "task.claimed", Subject: "sp-" + string(rune('a'+i))}}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(l.Dir(), w+Ext))
	if err != nil {
		t.Fatal(err)
	}
	return splitLines(b)
}

// TestReceiveRefusesWhatLostOrChangedALine: a copy of a chained writer file
// that is neither an extension of the local one nor a prefix of it is never
// folded, whoever's file it is; an older spool's copies are still unioned.
func TestReceiveRefusesWhatLostOrChangedALine(t *testing.T) {
	a := writerLines(t, "a", 5)
	// The same clone's files copied to another machine, which went on
	// appending on its own after line 2.
	fork := append(a[:2:2], a[2:]...)
	for i := 2; i < len(fork); i++ {
		fork[i] = reencode(t, fork[i], func(e *Event) { e.Subject = "elsewhere" })
	}
	fork = rechain(t, fork, 2)
	// An older spool's lines 1, 2 and 4 unioned (seq renumbered), then one
	// of this spool's; and a branch's copy of lines 1 and 4 as it wrote them.
	old := splitLines(unchain(t, join(a[:2], a[3:4])))
	old[2] = reencode(t, old[2], func(e *Event) { e.Seq = 3 })
	merged := join(rechain(t, append(old, a[4]), 3))
	branch := splitLines(unchain(t, join(a[:1], a[3:4])))
	branch[1] = reencode(t, branch[1], func(e *Event) { e.Seq = 2 })
	cases := []struct {
		name    string
		local   []byte // writer a's file before
		copy    []byte
		want    []byte // writer a's file after
		refused string // a substring of the problem; "" when nothing is refused
	}{
		{"an extension", join(a[:3]), join(a), join(a), ""},
		{"a prefix", join(a), join(a[:2]), join(a), ""},
		{"a line deleted, the rest rechained", join(a), join(rechain(t, append(a[:2:2], a[3:]...), 2)), join(a),
			"line 3 differs from this clone's copy"},
		{"a line deleted, the rest rechained and extended", join(a[:4]), join(rechain(t, append(a[:2:2], a[3:]...), 2)), join(a[:4]),
			"line 3 differs"},
		{"a fork after line 2", join(a), join(fork), join(a),
			"two machines write as writer a"},
		{"a copy that breaks the rules", join(a[:3]), join(a[:2], a[3:]), join(a[:3]), "seq 4 follows 2"},
		{"a chained copy of an older spool's file", unchain(t, join(a[:3])), join(a), unchain(t, join(a[:3])), "line 2 differs"},
		{"an older spool's copy of a chained file", join(a[:3]), unchain(t, join(a)), join(a[:3]), "line 2 differs"},
		// The old layout's branches after the move: their copies were
		// unioned in (seq renumbered), and this spool appended since.
		{"an older spool's copy, its events all here", merged, join(branch), merged, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl, s := receiver(t)
			path := filepath.Join(tl.Dir(), "a"+Ext)
			os.MkdirAll(tl.Dir(), 0o755)
			os.WriteFile(path, c.local, 0o644)
			res, err := s.Receive("a"+Ext, c.copy, "origin/spool-log")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, c.want) {
				t.Fatalf("a's file is now\n%s\nwant\n%s", got, c.want)
			}
			if c.refused == "" {
				if res.Quarantined != "" {
					t.Fatalf("quarantined: %s", res.Problem)
				}
				return
			}
			if res.Quarantined == "" || !strings.Contains(res.Problem, c.refused) {
				t.Fatalf("received %+v, want it refused for %q", res, c.refused)
			}
			kept, _ := os.ReadFile(res.Quarantined)
			if !bytes.Equal(kept, c.copy) {
				t.Fatal("the quarantine does not hold the copy")
			}
			if w := tl.warnings(); len(w) != 1 || !strings.Contains(w[0], "quarantined a's events from origin/spool-log") {
				t.Fatalf("warnings %q", w)
			}
		})
	}
}

// TestReceiveNeverChangesTheOwnFile: this clone's own file takes only what
// extends it; a copy of it rewritten elsewhere is refused, and says what to
// do when the clone was copied.
func TestReceiveNeverChangesTheOwnFile(t *testing.T) {
	tl, s := receiver(t)
	own := filepath.Join(tl.Dir(), "b"+Ext)
	if _, err := s.Append(testAt, "bob", []Draft{{Type: "t.a"}, {Type: "t.b"}, {Type: "t.c"}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(testAt, "bob", []Draft{{Type: "t.d"}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(own)
	lines := splitLines(before)
	for name, cp := range map[string][]byte{
		"a line deleted, the rest rechained": join(rechain(t, append(lines[:1:1], lines[2:]...), 1)),
		"a line changed, the rest rechained": join(rechain(t, append([][]byte{reencode(t, lines[0], func(e *Event) { e.Actor = "mallory" })}, lines[1:]...), 0)),
		"an older spool's copy":              unchain(t, before),
	} {
		res, err := s.Receive("b"+Ext, cp, "origin/spool-log")
		if err != nil {
			t.Fatal(err)
		}
		if res.Quarantined == "" || !res.Forked || !strings.Contains(res.Problem, "this clone's own file") ||
			!strings.Contains(res.Problem, "spool doctor --repair on one of them to give it a new writer id") {
			t.Fatalf("%s: received %+v", name, res)
		}
		if after, _ := os.ReadFile(own); !bytes.Equal(after, before) {
			t.Fatalf("%s: the own file changed", name)
		}
	}
	// Nothing new, then an extension (a claim pushed before the crash that
	// kept it from the local file): the one way the own file grows here.
	if res, err := s.Receive("b"+Ext, join(lines[:2]), "origin/spool-log"); err != nil || res.Quarantined != "" || res.Added != 0 {
		t.Fatalf("a prefix: %+v %v", res, err)
	}
	more := appendedLine(t, lines)
	if res, err := s.Receive("b"+Ext, append(before, more...), "origin/spool-log"); err != nil || res.Added != 1 {
		t.Fatalf("an extension: %+v %v", res, err)
	}
	evs, err := s.Append(testAt, "bob", []Draft{{Type: "t.e"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := Decode(more); evs[0].Prev != m.ID || evs[0].Seq != 6 {
		t.Fatalf("the next append follows %s at seq %d, want %s at 6", evs[0].Prev, evs[0].Seq, m.ID)
	}
	mustCheckClean(t, tl.Log)
}

// TestReceiveUnionsAnOlderSpoolsCopies: unchained copies that diverged (the
// old layout's branches, or its clone run on two machines) are still
// unioned by event id, this clone's own too.
func TestReceiveUnionsAnOlderSpoolsCopies(t *testing.T) {
	for _, w := range []string{"a", "b"} {
		t.Run("writer "+w, func(t *testing.T) {
			base, ours, theirs := forked(t, 2, 2, 2)
			rewrite := func(lines ...[][]byte) []byte { // forked's lines are writer "w"'s
				return unchain(t, bytes.ReplaceAll(join(lines...), []byte(`"writer":"w"`), []byte(`"writer":"`+w+`"`)))
			}
			local, theirsFile := rewrite(base, ours), rewrite(base, theirs)
			tl, s := receiver(t)
			path := filepath.Join(tl.Dir(), w+Ext)
			os.MkdirAll(tl.Dir(), 0o755)
			os.WriteFile(path, local, 0o644)
			res, err := s.Receive(w+Ext, theirsFile, "refs/heads/main:.spool/events")
			if err != nil || res.Quarantined != "" || res.Added != 2 {
				t.Fatalf("received %+v, %v", res, err)
			}
			got, _ := os.ReadFile(path)
			want, err := Union(local, theirsFile)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the file is not the union (%v)", err)
			}
			mustCheckClean(t, tl.Log)
		})
	}
}

// TestReceiveRepairsAnOlderSpoolsTextMerge: git merged an older spool's
// file without the merge driver (git merge-file --union: one side's lines
// after the other's, seq repeated). That breaks the rules as it stands, but
// put in order as doctor --repair would it keeps them: taken, not
// quarantined.
func TestReceiveRepairsAnOlderSpoolsTextMerge(t *testing.T) {
	base, ours, theirs := forked(t, 2, 2, 2)
	local, text := unchain(t, join(base, ours)), unchain(t, join(base, ours, theirs))
	tl, s := receiver(t)
	path := filepath.Join(tl.Dir(), "w"+Ext)
	os.MkdirAll(tl.Dir(), 0o755)
	os.WriteFile(path, local, 0o644)
	if rep := (&CheckReport{}); checkLines(bytes.NewReader(text), "w"+Ext, rep) != nil || len(rep.Problems) == 0 {
		t.Fatal("set-up: the text merge keeps the rules")
	}
	res, err := s.Receive("w"+Ext, text, "refs/heads/main:.spool/events")
	if err != nil || res.Quarantined != "" || res.Added != 2 {
		t.Fatalf("received %+v, %v", res, err)
	}
	got, _ := os.ReadFile(path)
	want, err := Union(local, unchain(t, join(base, theirs)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file is not the union (%v):\n%s", err, got)
	}
	mustCheckClean(t, tl.Log)
}

func TestUnionRefusesAForkedChain(t *testing.T) {
	base, ours, theirs := forked(t, 2, 2, 1)
	a, b := join(base, ours), join(base, theirs)
	if _, err := Union(a, b); !errors.Is(err, ErrForked) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("union of a forked chain: %v", err)
	}
	// One side extending the other is no fork.
	if got, err := Union(join(base), a); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("union of a chain and its prefix: %v", err)
	}
}

// TestRehome: a clone whose own file forked takes a new writer id; what it
// wrote after the shared lines is written again as the new writer's, in
// order and chained, and the old file is cut back to the shared lines.
func TestRehome(t *testing.T) {
	tl, s := receiver(t)
	signer := &hexSigner{}
	tl.opt.Signer = signer
	if _, err := s.Append(testAt, "bob", []Draft{{Type: "t.a"}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(tl.Dir(), "b"+Ext)
	shared, _ := os.ReadFile(old)
	mine, err := s.Append(testAt.Add(time.Minute), "bob", []Draft{{Type: "t.b", Subject: "x", Idem: "k"}, {Type: "t.c", Data: map[string]int{"n": 1}}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	signer.calls = 0
	done, err := s.Rehome(int64(len(shared)), testAt)
	if err != nil {
		t.Fatal(err)
	}
	if done.From != "b" || done.To == "b" || s.Writer() != done.To || done.Moved != 2 || signer.calls != 2 {
		t.Fatalf("rehomed %+v, writer now %s, %d signatures", done, s.Writer(), signer.calls)
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, shared) {
		t.Fatal("the old file was not cut back to the shared lines")
	}
	if b, _ := os.ReadFile(done.Backup); !bytes.HasPrefix(b, shared) || len(b) == len(shared) {
		t.Fatal("no backup of the old file")
	}
	moved := readAll(t, tl.Log)[1:]
	for i, e := range moved {
		want := mine[i]
		if e.Writer != done.To || e.Seq != uint64(i+1) || e.Type != want.Type || e.Subject != want.Subject || e.Idem != want.Idem ||
			string(e.Data) != string(want.Data) || !e.At.Equal(want.At) || e.Actor != want.Actor || e.More != want.More || e.Sig == "" {
			t.Fatalf("moved event %d: %+v, was %+v", i, e, want)
		}
	}
	if moved[0].Prev != "" || moved[1].Prev != moved[0].ID {
		t.Fatal("the moved events are not chained")
	}
	// The next append is the new writer's, and so is a new session's.
	evs, err := s.Append(testAt, "bob", []Draft{{Type: "t.d"}}, AppendOptions{})
	if err != nil || evs[0].Writer != done.To || evs[0].Prev != moved[1].ID {
		t.Fatalf("append after: %+v %v", evs, err)
	}
	s.Close()
	evs, err = openTestLog(tl.Dir(), tl.opt.PrivateDir).Append(context.Background(), testAt, "bob", []Draft{{Type: "t.e"}}, AppendOptions{})
	if err != nil || evs[0].Writer != done.To || evs[0].Seq != 4 {
		t.Fatalf("append in another process: %+v %v", evs, err)
	}
	mustCheckClean(t, tl.Log)
}

// TestRehomeFinishesAfterACrash: killed after its journal was written, a
// Rehome is finished by the next session, before it reads a tail.
func TestRehomeFinishesAfterACrash(t *testing.T) {
	tl, s := receiver(t)
	if _, err := s.Append(testAt, "bob", []Draft{{Type: "t.a"}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(tl.Dir(), "b"+Ext)
	shared, _ := os.ReadFile(old)
	if _, err := s.Append(testAt, "bob", []Draft{{Type: "t.b"}, {Type: "t.c"}}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(old)
	if _, err := s.Rehome(int64(len(shared)), testAt); err != nil {
		t.Fatal(err)
	}
	done, _ := os.ReadFile(filepath.Join(tl.opt.PrivateDir, "writer"))
	to := strings.TrimSpace(string(done))
	moved, _ := os.ReadFile(filepath.Join(tl.Dir(), to+Ext))
	s.Close()
	// The crash: the journal written, nothing carried out.
	os.WriteFile(old, before, 0o644)
	os.Remove(filepath.Join(tl.Dir(), to+Ext))
	os.WriteFile(filepath.Join(tl.opt.PrivateDir, "writer"), []byte("b\n"), 0o644)
	j, _ := json.Marshal(rehomeJournal{From: "b", To: to, Keep: int64(len(shared)), Lines: string(moved)})
	os.WriteFile(filepath.Join(tl.opt.PrivateDir, "rehome.json"), j, 0o644)
	evs, err := tl.Append(context.Background(), testAt, "bob", []Draft{{Type: "t.after"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Writer != to || evs[0].Seq != 3 {
		t.Fatalf("the append after the crash: %+v", evs[0])
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, shared) {
		t.Fatal("the old file was not cut back")
	}
	if _, err := os.Stat(filepath.Join(tl.opt.PrivateDir, "rehome.json")); err == nil {
		t.Fatal("the journal is still there")
	}
	if n := len(readAll(t, tl.Log)); n != 4 {
		t.Fatalf("%d events, want 4 (none twice)", n)
	}
	mustCheckClean(t, tl.Log)
}
