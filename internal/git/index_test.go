package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// ReadRef finds what git rev-parse finds, loose or packed, and nothing for
// a ref that is not there.
func TestReadRef(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	repo := &Repo{Root: r.Root, WorkTree: r.Root, GitDir: filepath.Join(r.Root, ".git"), CommonDir: filepath.Join(r.Root, ".git")}
	head := r.Git(r.Root, "rev-parse", "HEAD")
	r.Git(r.Root, "update-ref", "refs/spool/sync/origin/feature/x", head)
	for _, packed := range []bool{false, true} {
		if packed {
			r.Git(r.Root, "pack-refs", "--all")
			if _, err := os.Stat(filepath.Join(repo.CommonDir, "refs", "spool", "sync", "origin", "feature", "x")); err == nil {
				t.Fatal("pack-refs left the loose ref")
			}
		}
		if c, ok := ReadRef(ctx, repo, "refs/spool/sync/origin/feature/x"); !ok || c != head {
			t.Errorf("packed %v: ReadRef = %q, %v; want %s", packed, c, ok, head)
		}
		if c, ok := ReadRef(ctx, repo, "refs/spool/sync/origin/nope"); ok {
			t.Errorf("packed %v: a missing ref read as %q", packed, c)
		}
	}
}

// HeadBranch reads the branch git names, and nothing when detached.
func TestHeadBranch(t *testing.T) {
	r := gittest.New(t, nil)
	repo := &Repo{Root: r.Root, CommonDir: filepath.Join(r.Root, ".git")}
	r.Git(r.Root, "checkout", "-q", "-b", "feature/x")
	if b, ok := HeadBranch(repo); !ok || b != "feature/x" {
		t.Errorf("HeadBranch = %q, %v", b, ok)
	}
	r.Git(r.Root, "checkout", "-q", "--detach")
	if b, ok := HeadBranch(repo); ok {
		t.Errorf("detached: HeadBranch = %q", b)
	}
}

// SetIndex on an index of spool's own leaves the repository's index as it
// was; on the repository's, it changes the entries given and no other.
func TestSetIndexTouchesOnlyItsEntries(t *testing.T) {
	r := gittest.New(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	ctx := context.Background()
	r.Write(r.Root, "b.txt", "b staged\n")
	r.Git(r.Root, "add", "b.txt")
	before := r.Git(r.Root, "ls-files", "-s")
	blob, err := WriteBlob(ctx, r.Root, []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(t.TempDir(), "index")
	if err := ReadTreeIndex(ctx, r.Root, own, "HEAD"); err != nil {
		t.Fatal(err)
	}
	if err := SetIndex(ctx, r.Root, own, []IndexEntry{{Path: "dir/c.txt", Hash: blob}}); err != nil {
		t.Fatal(err)
	}
	tree, err := WriteIndexTree(ctx, r.Root, own)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Git(r.Root, "ls-tree", "-r", "--name-only", tree); got != "README\na.txt\nb.txt\ndir/c.txt" {
		t.Errorf("the tree from spool's index: %q", got)
	}
	if got := r.Git(r.Root, "ls-files", "-s"); got != before {
		t.Errorf("the repository's index changed:\n%s\nwant\n%s", got, before)
	}
	if err := SetIndex(ctx, r.Root, "", []IndexEntry{{Path: "dir/c.txt", Hash: blob}}); err != nil {
		t.Fatal(err)
	}
	files, err := IndexFiles(ctx, r.Root, "", "dir/")
	if err != nil || len(files) != 1 || files["dir/c.txt"] != blob {
		t.Errorf("IndexFiles = %v, %v", files, err)
	}
	after := r.Git(r.Root, "ls-files", "-s")
	if want := before + "\n100644 " + blob + " 0\tdir/c.txt"; after != want {
		t.Errorf("the repository's index:\n%s\nwant\n%s", after, want)
	}
	if out, _ := exec.Command("git", "-C", r.Root, "diff", "--cached", "--name-only").Output(); !strings.Contains(string(out), "b.txt") {
		t.Errorf("b.txt is no longer staged: %q", out)
	}
}
