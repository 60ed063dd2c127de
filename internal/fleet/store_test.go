package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/git/gittest"
)

// A sync stores a file from the parts of the version the cache says it was
// only when the file has grown from that version: one rewritten in place
// (or by a rename that gave it its old inode back), longer but not the
// same bytes, is stored whole, as it is.
func TestStoreFileTrustsOnlyAGrownFile(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.jsonl")
	lines := func(tag string, n int) []byte {
		var b bytes.Buffer
		for i := range n {
			fmt.Fprintf(&b, "{\"%s\":%07d,\"pad\":%q}\n", tag, i, "................................................................")
		}
		return b.Bytes()
	}
	c := &cache{Files: map[string]cached{}, lines: map[string]int{}}
	store := func(content []byte) (written int64) {
		t.Helper()
		if err := os.WriteFile(path, content, 0o644); err != nil { // in place: the same inode
			t.Fatal(err)
		}
		b, written, err := storeFile(ctx, r.Root, path, c)
		if err != nil || !b.Parts {
			t.Fatal(b, err)
		}
		stored, err := git.ReadBlob(ctx, r.Root, b.Hash)
		if err != nil || !bytes.Equal(stored, content) {
			t.Fatalf("stored %d bytes that are not the file's %d (%v)", len(stored), len(content), err)
		}
		return written
	}
	a := lines("a", 100_000) // 9.5 MB: three parts
	store(a)
	if grown := append(bytes.Clone(a), lines("a2", 10)...); store(grown) >= int64(len(grown))/2 {
		t.Error("a grown file was stored whole") // its parts but the last kept
	}
	if b := lines("b", 101_000); store(b) != int64(len(b)) { // rewritten, longer
		t.Error("a rewritten file kept parts")
	}
}
