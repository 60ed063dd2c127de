package fleet

import (
	"context"
	"testing"

	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/git/gittest"
)

func TestAheadBehind(t *testing.T) {
	for _, tc := range []struct {
		name          string
		local, remote map[string]int
		ahead, behind int
	}{
		{"both empty", nil, nil, 0, 0},
		{"equal", map[string]int{"a": 3, "b": 2}, map[string]int{"a": 3, "b": 2}, 0, 0},
		{"never shared", map[string]int{"a": 3}, map[string]int{}, 3, 0},
		{"our file grew", map[string]int{"a": 5, "b": 2}, map[string]int{"a": 3, "b": 2}, 2, 0},
		{"their file grew", map[string]int{"a": 3, "b": 2}, map[string]int{"a": 3, "b": 6}, 0, 4},
		{"a writer only they have", map[string]int{"a": 3}, map[string]int{"a": 3, "c": 7}, 0, 7},
		{"both ways", map[string]int{"a": 4, "b": 1}, map[string]int{"a": 3, "b": 2, "c": 1}, 1, 2},
		{"one writer on two machines: the longer side counts", map[string]int{"a": 5}, map[string]int{"a": 8}, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ahead, behind := aheadBehind(tc.local, tc.remote)
			if ahead != tc.ahead || behind != tc.behind {
				t.Errorf("ahead %d behind %d, want %d %d", ahead, behind, tc.ahead, tc.behind)
			}
		})
	}
}

// The remote's counts come from the cache by blob, and only when every
// writer file's blob is known; other files in the directory do not count.
func TestRemoteLines(t *testing.T) {
	c := &cache{lines: map[string]int{"h1": 3, "h2": 5}}
	remote := map[string]git.Blob{"w1.jsonl": {Hash: "h1"}, "w2.jsonl": {Hash: "h2"}, ".gitkeep": {Hash: "e"}}
	got := remoteLines(remote, c)
	if len(got) != 2 || got["w1"] != 3 || got["w2"] != 5 {
		t.Errorf("remoteLines = %v", got)
	}
	remote["w3.jsonl"] = git.Blob{Hash: "unknown"}
	if got := remoteLines(remote, c); got != nil {
		t.Errorf("with a blob never read: %v, want nil", got)
	}
}

// see records a tip once: seeing the same tip and counts again leaves the
// cache clean (a sync with nothing new writes nothing).
func TestSeeOnlyWhenChanged(t *testing.T) {
	c := &cache{}
	c.see("ref", "", map[string]int{"w": 1})
	if c.dirty || len(c.Seen) != 0 {
		t.Fatal("a remote with no branch was recorded")
	}
	c.see("ref", "c1", map[string]int{"w": 1})
	if !c.dirty {
		t.Fatal("a new tip left the cache clean")
	}
	c.dirty = false
	c.see("ref", "c1", map[string]int{"w": 1})
	if c.dirty {
		t.Error("the same tip again made the cache dirty")
	}
	c.see("ref", "c2", nil)
	if c.dirty || c.Seen["ref"].Commit != "c1" {
		t.Error("counts unknown replaced what was known")
	}
}

// A file in parts is counted part by part, and a part counted before is not
// read again: a new version of a large file costs its new parts.
func TestFileLinesCountsEachPartOnce(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	blob := func(s string) string {
		h, err := git.WriteBlob(ctx, r.Root, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := blob("a\nb\n"), blob("c\n")
	tree, err := git.WriteTree(ctx, r.Root, []git.TreeEntry{{Name: "000000", Hash: a}, {Name: "000001", Hash: b}})
	if err != nil {
		t.Fatal(err)
	}
	c := &cache{lines: map[string]int{}}
	if n, err := c.fileLines(ctx, r.Root, git.Blob{Hash: tree, Parts: true}); err != nil || n != 3 || c.Parts[a] != 2 || !c.dirty {
		t.Fatalf("%d lines, %v; parts %v", n, err, c.Parts)
	}
	c.Parts[a] = 10 // as counted before: not read again
	if n, err := c.fileLines(ctx, r.Root, git.Blob{Hash: tree, Parts: true}); err != nil || n != 11 {
		t.Fatalf("%d lines, %v", n, err)
	}
	if n, err := c.fileLines(ctx, r.Root, git.Blob{Hash: a}); err != nil || n != 2 {
		t.Fatalf("a blob: %d lines, %v", n, err)
	}
}
