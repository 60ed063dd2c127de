package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// A repository and a linked worktree in directories whose names hold a
// newline (and end in one): git takes them, and so does Discover, with
// the paths whole.
func TestDiscoverPathsWithNewlines(t *testing.T) {
	top := t.TempDir()
	main := filepath.Join(top, "main\nrepo")
	os.MkdirAll(main, 0o755)
	runGit(t, main, "init", "-q", "-b", "main")
	runGit(t, main, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
	for _, wt := range []string{filepath.Join(top, "wt\nx"), filepath.Join(top, "wt\n/y\n")} {
		runGit(t, main, "worktree", "add", "-q", "--detach", wt)
		sub := filepath.Join(wt, "a\nb")
		os.MkdirAll(sub, 0o755)
		for _, dir := range []string{wt, sub} {
			r, err := Discover(context.Background(), dir)
			if err != nil {
				t.Fatalf("%q: %v", dir, err)
			}
			want := Repo{Root: main, WorkTree: wt, GitDir: filepath.Join(main, ".git", "worktrees", filepath.Base(wt)), CommonDir: filepath.Join(main, ".git")}
			if r.GitDir != want.GitDir {
				// git names the worktree's git dir after the directory, as it sees fit
				want.GitDir = r.GitDir
			}
			if *r != want {
				t.Fatalf("%q:\n got %+v\nwant %+v", dir, *r, want)
			}
			if _, err := os.Stat(filepath.Join(r.GitDir, "HEAD")); err != nil {
				t.Fatalf("%q: git dir %q: %v", dir, r.GitDir, err)
			}
		}
	}
	// A separated git dir: the primary worktree is the first entry of git
	// worktree list, whole.
	sep := filepath.Join(top, "sep\nwork")
	runGit(t, top, "init", "-q", "-b", "main", "--separate-git-dir", filepath.Join(top, "sep\ngit"), sep)
	runGit(t, sep, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x")
	wt := filepath.Join(top, "sep\nwt")
	runGit(t, sep, "worktree", "add", "-q", "--detach", wt)
	out, err := exec.Command("git", "-C", wt, "worktree", "list", "--porcelain", "-z").Output()
	first, _, _ := strings.Cut(string(out), "\x00")
	if err != nil || !strings.Contains(first, "\n") {
		t.Fatalf("git worktree list: %q %v", first, err)
	}
	r, err := Discover(context.Background(), wt)
	if err != nil || r.Root != strings.TrimPrefix(first, "worktree ") || r.WorkTree != wt || r.CommonDir != filepath.Join(top, "sep\ngit") {
		t.Fatalf("separated git dir: %+v %v", r, err)
	}
}
