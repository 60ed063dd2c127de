// Package gittest makes real git repositories for tests: a primary
// worktree on main, a bare remote "origin", linked worktrees for branches.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is a repository in a test's temp dir.
type Repo struct {
	T      testing.TB
	Root   string // the primary worktree, on main, one commit in
	Remote string // the bare remote, "origin", main pushed
}

// env is what Env sets: a fixed identity, no system configuration, and
// every decision run twice (store.Decider); HOME is added per test.
var env = map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
	"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_CONFIG_NOSYSTEM": "1",
	"SPOOL_NOW": "", "SPOOL_CHECK_DECIDE": "1"}

// processWide is set by Setup: the environment is the test binary's, and
// Env changes nothing, so that tests using gittest may run in parallel.
var processWide bool

// Setup sets Env's environment for the whole test binary, HOME an empty
// directory no test writes to, from a TestMain before m.Run; it returns
// the function that removes that directory. After it, Env does nothing
// and tests that make repositories may call t.Parallel (t.Setenv forbids
// it).
func Setup() (cleanup func()) {
	home, err := os.MkdirTemp("", "gittest-home-")
	if err != nil {
		panic(err)
	}
	for k, v := range env {
		os.Setenv(k, v)
	}
	os.Setenv("HOME", home)
	processWide = true
	return func() { os.RemoveAll(home) }
}

// Env gives git a fixed identity and no user or system configuration,
// unless Setup already did for the whole binary.
func Env(t testing.TB) {
	if processWide {
		return
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("HOME", t.TempDir())
}

// New makes the repository; files are written and committed in the first commit.
func New(t testing.TB, files map[string]string) *Repo {
	t.Helper()
	Env(t)
	dir := t.TempDir()
	r := &Repo{T: t, Root: filepath.Join(dir, "repo"), Remote: filepath.Join(dir, "remote.git")}
	r.Git(dir, "init", "-q", "--bare", "-b", "main", r.Remote)
	r.Git(dir, "init", "-q", "-b", "main", r.Root)
	r.Write(r.Root, "README", "hello\n")
	for name, content := range files {
		r.Write(r.Root, name, content)
	}
	r.Git(r.Root, "add", "-A")
	r.Git(r.Root, "commit", "-q", "-m", "init")
	r.Git(r.Root, "remote", "add", "origin", r.Remote)
	r.Git(r.Root, "push", "-q", "origin", "main")
	return r
}

// Git runs git in dir and returns its trimmed output.
func (r *Repo) Git(dir string, args ...string) string {
	r.T.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if d := time.Since(start); d > 300*time.Millisecond {
		r.T.Logf("slow: git %s took %s", strings.Join(args, " "), d)
	}
	if err != nil {
		r.T.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes a file under dir, making its directories.
func (r *Repo) Write(dir, name, content string) {
	r.T.Helper()
	path := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		r.T.Fatal(err)
	}
}

// Worktree adds a linked worktree named name on branch name with one commit
// writing file, and returns its path.
func (r *Repo) Worktree(name, file, content string) string {
	r.T.Helper()
	path := filepath.Join(filepath.Dir(r.Root), name)
	r.Git(r.Root, "worktree", "add", "-q", path, "-b", name)
	r.Commit(path, file, content, name+": change "+file)
	return path
}

// Commit writes file in dir, commits it with msg and returns the commit id.
func (r *Repo) Commit(dir, file, content, msg string) string {
	r.T.Helper()
	r.Write(dir, file, content)
	r.Git(dir, "add", file)
	r.Git(dir, "commit", "-q", "-m", msg)
	return r.Git(dir, "rev-parse", "HEAD")
}
