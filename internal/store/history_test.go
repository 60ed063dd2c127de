package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git"
)

// writerLines is n events of writer w as its clone appends them (chained).
func writerLines(t *testing.T, w string, n int) [][]byte {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "p", "writer"), w+"\n")
	l := eventlog.Open(eventlog.Options{Dir: filepath.Join(root, "e"), PrivateDir: filepath.Join(root, "p")})
	for i := range n {
		if _, err := l.Append(context.Background(), t0, "ada", []eventlog.Draft{{Type: "task.created", Subject: string(rune('a' + i))}}, eventlog.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(root, "e", w+eventlog.Ext))
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'})
}

// notAFile, as a file's content, is a tree where the file is, that is not
// a file as spool writes one.
var notAFile = []byte("not a file")

// commitFilesAs commits files (name → content; nil: the file is not there)
// as the sync branch's events/ on parents, each file stored in parts, one
// line a part, when inParts.
func commitFilesAs(t *testing.T, dir string, inParts bool, files map[string][]byte, parents ...string) string {
	t.Helper()
	var lines []string
	for name, content := range files {
		if content == nil {
			continue
		}
		if bytes.Equal(content, notAFile) { // a tree of parts spool never writes: no part 000000
			blob, err := runGitInput(dir, "x\n", "hash-object", "-w", "--stdin")
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, "040000 tree "+mktree(t, dir, "100644 blob "+strings.TrimSpace(blob)+"\t000001")+"\t"+name)
			continue
		}
		if inParts && len(content) > 0 {
			var parts []string
			for i, line := range bytes.SplitAfter(content, []byte{'\n'}) {
				if len(line) == 0 {
					break // after the last newline
				}
				blob, err := runGitInput(dir, string(line), "hash-object", "-w", "--stdin")
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, fmt.Sprintf("100644 blob %s\t%06d", strings.TrimSpace(blob), i))
			}
			lines = append(lines, "040000 tree "+mktree(t, dir, strings.Join(parts, "\n"))+"\t"+name)
			continue
		}
		blob, err := runGitInput(dir, string(content), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, "100644 blob "+strings.TrimSpace(blob)+"\t"+name)
	}
	sort.Strings(lines)
	events, err := runGitInput(dir, strings.Join(lines, "\n"), "mktree")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"commit-tree", mktree(t, dir, "040000 tree "+strings.TrimSpace(events)+"\tevents"), "-m", "spool sync"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return strings.TrimSpace(runGit(t, dir, args...))
}

// TestCheckHistory: what the sync branch's history says the local log lost.
func TestCheckHistory(t *testing.T) {
	a := writerLines(t, "a", 5)
	j := func(lines ...[]byte) []byte { return bytes.Join(lines, nil) }
	// a's file without its line 2, seq renumbered, prev and ids recomputed.
	var rewritten []byte
	prev := ""
	for i, line := range [][]byte{a[0], a[2], a[3]} {
		e, _ := eventlog.Decode(line)
		e.Seq, e.Prev = uint64(i+1), prev
		e.ID, _ = e.ContentID()
		b, _ := e.Encode()
		rewritten, prev = append(rewritten, b...), e.ID
	}
	// An older spool's files of writer "o", unioned by the merge driver.
	legacy := func(lines ...[]byte) []byte {
		var out []byte
		for _, l := range lines {
			e, _ := eventlog.Decode(l)
			e.Writer, e.Prev = "o", ""
			e.ID, _ = e.ContentID()
			b, _ := e.Encode()
			out = append(out, b...)
		}
		return out
	}
	side1, side2 := legacy(a[0], a[1]), legacy(a[0], a[2])
	union, err := eventlog.Union(side1, side2)
	if err != nil {
		t.Fatal(err)
	}
	broken := append(j(a[:2]...), "{not an event\n"...)

	type step = historyStep
	f := func(b []byte) map[string][]byte { return map[string][]byte{"a.jsonl": b} }
	cases := []historyCase{
		{"a growing history", []step{{files: f(j(a[:1]...))}, {files: f(j(a[:3]...))}, {files: f(j(a...))}}, -1, j(a...), "a", nil},
		{"the log ahead of the branch", []step{{files: f(j(a[:2]...))}, {files: f(j(a[:3]...))}}, -1, j(a...), "a", nil},
		{"the tip rewritten", []step{{files: f(j(a[:3]...))}, {files: f(rewritten)}}, -1, j(a[:3]...), "a",
			[]string{"spool-log (commit %s) holds a copy that lost or changed line 2"}},
		{"a fresh clone of the rewritten tip", []step{{files: f(j(a[:3]...))}, {files: f(rewritten)}}, -1, rewritten, "a",
			[]string{"of the sync branch had event " + mustID(t, a[1]) + " at line 2, and this log has event "}},
		{"a rewrite undone", []step{{files: f(j(a[:3]...))}, {files: f(rewritten)}, {files: f(j(a...))}}, -1, j(a...), "a", nil},
		{"a stale remote-tracking ref on the rewrite", []step{{files: f(j(a[:3]...))}, {files: f(rewritten)}, {files: f(j(a...))}}, 1, j(a...), "a", nil},
		{"the tip lost lines", []step{{files: f(j(a[:4]...))}, {files: f(j(a[:2]...))}}, -1, j(a[:2]...), "a",
			[]string{"has 2 lines of this file, and commit "}},
		{"the tip lost the file", []step{{files: f(j(a[:2]...))}, {files: map[string][]byte{}}}, -1, j(a[:2]...), "a",
			[]string{"has no file for this writer, which commit "}},
		{"a copy that breaks the rules", []step{{files: f(j(a[:2]...))}, {files: f(broken)}, {files: f(j(a[:3]...))}}, -1, j(a[:3]...), "a", nil},
		{"the tip breaks the rules", []step{{files: f(j(a[:2]...))}, {files: f(broken)}}, -1, j(a[:2]...), "a",
			[]string{"holds, in place of this file, a copy that breaks the log's rules (or is not a file as spool writes one), and commit "}},
		{"a tree that is not a file", []step{{files: f(j(a[:2]...))}, {files: f(notAFile)}, {files: f(j(a[:3]...))}}, -1, j(a[:3]...), "a", nil},
		{"the tip not a file", []step{{files: f(j(a[:2]...))}, {files: f(notAFile)}}, -1, j(a[:2]...), "a",
			[]string{"holds, in place of this file, a copy that breaks the log's rules (or is not a file as spool writes one), and commit "}},
		{"an older spool's copies, unioned", []step{{files: map[string][]byte{"o.jsonl": side1}}, {files: map[string][]byte{"o.jsonl": side2}, parents: []int{}},
			{files: map[string][]byte{"o.jsonl": union}, parents: []int{0, 1}}}, -1, union, "o", nil},
		{"an older spool's copy, an event lost", []step{{files: map[string][]byte{"o.jsonl": side1}}, {files: map[string][]byte{"o.jsonl": side2}}}, -1, side2, "o",
			[]string{"had event " + mustID(t, legacy(a[1])) + " at line 2"}},
	}
	for _, c := range cases {
		for _, inParts := range []bool{false, true} {
			t.Run(c.name+map[bool]string{false: "", true: " (in parts)"}[inParts], func(t *testing.T) {
				testCheckHistory(t, c, inParts)
			})
		}
	}
}

type historyStep struct {
	files   map[string][]byte
	parents []int // indexes of earlier steps; none: the step before
}

// historyCase is a sync branch's history (steps), with
// refs/remotes/origin/spool-log at step remote (-1: none), the local file
// of writer file, and the problems CheckHistory must find (substrings, in
// order; "%s" is the tip's short id).
type historyCase struct {
	name   string
	steps  []historyStep
	remote int
	local  []byte
	file   string
	want   []string
}

func testCheckHistory(t *testing.T, c historyCase, inParts bool) {
	dir := newRepo(t)
	commits := make([]string, len(c.steps))
	for i, st := range c.steps {
		parents := []string{}
		switch {
		case st.parents != nil:
			for _, p := range st.parents {
				parents = append(parents, commits[p])
			}
		case i > 0:
			parents = append(parents, commits[i-1])
		}
		commits[i] = commitFilesAs(t, dir, inParts, st.files, parents...)
	}
	runGit(t, dir, "update-ref", "refs/heads/spool-log", commits[len(commits)-1])
	if c.remote >= 0 {
		runGit(t, dir, "update-ref", "refs/remotes/origin/spool-log", commits[c.remote])
	}
	writeFile(t, filepath.Join(dir, ".git", "spool", "events", c.file+eventlog.Ext), string(c.local))
	s, _ := open(t, dir)
	problems, err := s.CheckHistory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A second check, from what the first proved, finds the same.
	again, err := s.CheckHistory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(problems) {
		t.Fatalf("first check %v, second %v", problems, again)
	}
	if len(problems) != len(c.want) {
		t.Fatalf("problems %v, want %d", problems, len(c.want))
	}
	for i, p := range problems {
		want := strings.ReplaceAll(c.want[i], "%s", commits[len(commits)-1][:12])
		if !strings.Contains(p.Message, want) || filepath.Base(p.Path) != c.file+eventlog.Ext {
			t.Fatalf("problem %v, want it in %s.jsonl saying %q", p, c.file, c.want[i])
		}
	}
}

// TestCheckHistoryRemembersOnlyWhatStillHolds: a later check trusts the
// versions an earlier one proved only while the local file still begins as
// it did.
func TestCheckHistoryRemembersOnlyWhatStillHolds(t *testing.T) {
	for _, inParts := range []bool{false, true} {
		t.Run(map[bool]string{false: "blobs", true: "in parts"}[inParts], func(t *testing.T) {
			testRemembersOnlyWhatStillHolds(t, inParts)
		})
	}
}

func testRemembersOnlyWhatStillHolds(t *testing.T, inParts bool) {
	a := writerLines(t, "a", 5)[:4] // whole lines (the last has no newline)
	dir := newRepo(t)
	var tip string
	for n := 1; n <= 4; n++ {
		var parents []string
		if tip != "" {
			parents = append(parents, tip)
		}
		tip = commitFilesAs(t, dir, inParts, map[string][]byte{"a.jsonl": bytes.Join(a[:n], nil)}, parents...)
	}
	runGit(t, dir, "update-ref", "refs/heads/spool-log", tip)
	local := filepath.Join(dir, ".git", "spool", "events", "a"+eventlog.Ext)
	writeFile(t, local, string(bytes.Join(a, nil)))
	s, _ := open(t, dir)
	if problems, err := s.CheckHistory(context.Background()); err != nil || len(problems) > 0 {
		t.Fatalf("whole log: %v %v", problems, err)
	}
	var known map[string]*knownPrefixes
	b, err := os.ReadFile(s.historyCachePath())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &known); err != nil || len(known["a.jsonl"].Lines) != 4 {
		t.Fatalf("cache %s: %v", b, err)
	}
	// The local file's first line replaced (same length, so every size
	// still ends a line): the versions proved before are prefixes no more.
	changed := bytes.Replace(bytes.Join(a, nil), a[0][:20], bytes.Repeat([]byte{' '}, 20), 1)
	writeFile(t, local, string(changed))
	problems, err := s.CheckHistory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 {
		t.Fatal("a local file that no longer begins as the branch's copies passes the check")
	}
}

func mustID(t *testing.T, line []byte) string {
	t.Helper()
	e, err := eventlog.Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}

func TestBlobHasherNamesBlobsAsGit(t *testing.T) {
	for _, content := range []string{"", "x", "{\"v\":1}\n", strings.Repeat("line\n", 10000)} {
		h := git.NewBlobHasher(int64(len(content)))
		h.Write([]byte(content))
		if got, want := hex.EncodeToString(h.Sum(nil)), git.BlobID([]byte(content)); got != want {
			t.Fatalf("%d bytes: %s, git says %s", len(content), got, want)
		}
	}
}
