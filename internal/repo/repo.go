// Package repo finds the git repository spool works in and the paths it uses there.
package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNotGitRepo is returned when the directory is not inside a git work tree.
var ErrNotGitRepo = errors.New("not a git repository")

// Repo holds the paths of one clone. Every worktree of a clone resolves to the
// same Root and CommonDir, so they share one log and one lock.
type Repo struct {
	Root      string // top level of the primary worktree, where .spool/ lives
	WorkTree  string // top level of the worktree the command runs in
	GitDir    string // git dir of that worktree
	CommonDir string // git dir shared by all worktrees
}

// Discover resolves the repository containing dir.
func Discover(ctx context.Context, dir string) (*Repo, error) {
	out, err := Git(ctx, dir, "rev-parse", "--path-format=absolute",
		"--is-bare-repository", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		var gerr *GitError
		if errors.As(err, &gerr) && strings.Contains(gerr.Stderr, "not a git repository") {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotGitRepo)
		}
		// --show-toplevel fails (before anything is printed) in a bare
		// repository and inside a .git directory.
		if errors.As(err, &gerr) && strings.Contains(gerr.Stderr, "must be run in a work tree") {
			return nil, fmt.Errorf("%s has no work tree (a bare repository or a .git directory); spool needs one: %w", dir, ErrNotGitRepo)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > 0 && lines[0] == "true" {
		return nil, fmt.Errorf("%s is a bare repository; spool needs a work tree: %w", dir, ErrNotGitRepo)
	}
	if len(lines) != 4 || lines[1] == "" {
		return nil, fmt.Errorf("%s is not inside a work tree: %w", dir, ErrNotGitRepo)
	}
	r := &Repo{WorkTree: lines[1], GitDir: lines[2], CommonDir: lines[3]}
	r.Root, err = primaryWorktree(ctx, r)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// primaryWorktree finds the main worktree: the parent of a ".git" common dir,
// or the first entry of `git worktree list` for separated git dirs.
func primaryWorktree(ctx context.Context, r *Repo) (string, error) {
	if filepath.Base(r.CommonDir) == ".git" {
		return filepath.Dir(r.CommonDir), nil
	}
	if r.GitDir == r.CommonDir {
		return r.WorkTree, nil
	}
	out, err := Git(ctx, r.WorkTree, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(out, "\n")
	if path, ok := strings.CutPrefix(first, "worktree "); ok {
		return path, nil
	}
	return "", fmt.Errorf("cannot find the primary worktree of %s", r.WorkTree)
}

// SpoolDir is the .spool directory of the primary worktree.
func (r *Repo) SpoolDir() string { return filepath.Join(r.Root, ".spool") }

// PrivateDir holds per-clone files git never tracks: lock, writer id, backups.
func (r *Repo) PrivateDir() string { return filepath.Join(r.CommonDir, "spool") }

// GitError is a failed git command with its stderr.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// Git runs git with argv in dir and returns its stdout.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}
