package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// askGit is Discover without the fast path.
func askGit(t *testing.T, dir string) *Repo {
	t.Helper()
	t.Setenv("GIT_CEILING_DIRECTORIES", "/nonexistent") // turns the fast path off
	r, err := Discover(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CEILING_DIRECTORIES", "")
	return r
}

// The fast path finds what git finds, and leaves every other case to git.
func TestDiscoverPlainAgreesWithGit(t *testing.T) {
	top := t.TempDir()
	main := filepath.Join(top, "main")
	os.MkdirAll(filepath.Join(main, "a", "b"), 0o755)
	runGit(t, main, "init", "-q", "-b", "main")
	runGit(t, main, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
	for _, dir := range []string{main, filepath.Join(main, "a", "b")} {
		fast, ok := discoverPlain(dir)
		if !ok {
			t.Fatalf("%s: fast path declined an ordinary clone", dir)
		}
		if want := askGit(t, dir); *fast != *want {
			t.Fatalf("%s: fast path %+v, git %+v", dir, fast, want)
		}
	}
	wt := filepath.Join(top, "wt")
	runGit(t, main, "worktree", "add", "-q", wt)
	if _, ok := discoverPlain(wt); ok {
		t.Fatal("a linked worktree must be left to git")
	}
	r, err := Discover(context.Background(), wt)
	if err != nil || r.Root != askGit(t, main).Root || r.WorkTree == r.Root {
		t.Fatalf("worktree: %+v %v", r, err)
	}
	if _, ok := discoverPlain(filepath.Join(main, ".git")); ok {
		t.Fatal("inside the git dir must be left to git")
	}
	if _, ok := discoverPlain(t.TempDir()); ok {
		t.Fatal("no repository at all must be left to git")
	}
	t.Setenv("GIT_DIR", filepath.Join(main, ".git"))
	if _, ok := discoverPlain(main); ok {
		t.Fatal("GIT_DIR must be left to git")
	}
}

// Recovery brings a checkout along between commits read from the log: a
// "commit" that is an option (read-tree's --index-output writes a file
// anywhere) is refused before git runs.
func TestFastForwardRefusesOptions(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	runGit(t, dir, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
	out := filepath.Join(t.TempDir(), "written")
	if err := FastForward(context.Background(), dir, "--index-output="+out, "HEAD"); err == nil {
		t.Fatal("an option was taken for a commit")
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("git wrote the file the option named")
	}
}
