package git

import (
	"context"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// A repack that deletes the packs the object database had loaded (git gc
// does, and git fetch runs gc --auto) does not stop in-process reads: the
// object is looked for again in the packs there are now.
func TestReadAfterRepack(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	r.Git(r.Root, "repack", "-a", "-d", "-q")
	first := r.Git(r.Root, "rev-parse", "HEAD")
	if _, err := RevParse(ctx, r.Root, first); err != nil {
		t.Fatal(err)
	}
	r.Commit(r.Root, "b.txt", "b\n", "two")
	r.Git(r.Root, "repack", "-a", "-d", "-q")
	if got, err := RevParse(ctx, r.Root, first); err != nil || got != first {
		t.Errorf("after the repack, RevParse(%s) = %q, %v", first, got, err)
	}
}
