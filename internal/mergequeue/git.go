package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/repo"
)

// This file is the submission's edge: it reads workspaces and identities
// from git (and jj, when the repository is a jj repository and jj is on
// PATH) and pushes branches. Every command is an argv; nothing is a shell string.

// Worktree is one entry of `git worktree list --porcelain`.
type Worktree struct {
	Path     string
	Name     string // the workspace's display name: the worktree directory's base name
	HEAD     string // 40 zeros on an unborn branch
	Branch   string // short name; empty when detached
	Bare     bool
	Detached bool
	Locked   bool
	Prunable bool // its directory is gone: abandoned
}

// ListWorktrees runs `git worktree list --porcelain -z` in dir.
func ListWorktrees(ctx context.Context, dir string) ([]Worktree, error) {
	out, err := repo.Git(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	return ParseWorktrees(out), nil
}

// ParseWorktrees parses porcelain -z output: NUL-terminated lines, an empty
// line between worktrees.
func ParseWorktrees(out string) []Worktree {
	var list []Worktree
	var cur *Worktree
	for _, line := range strings.Split(out, "\x00") {
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "worktree":
			list = append(list, Worktree{Path: val, Name: filepath.Base(val)})
			cur = &list[len(list)-1]
		case "HEAD":
			if cur != nil {
				cur.HEAD = val
			}
		case "branch":
			if cur != nil {
				cur.Branch = strings.TrimPrefix(val, "refs/heads/")
			}
		case "bare":
			if cur != nil {
				cur.Bare = true
			}
		case "detached":
			if cur != nil {
				cur.Detached = true
			}
		case "locked":
			if cur != nil {
				cur.Locked = true
			}
		case "prunable":
			if cur != nil {
				cur.Prunable = true
			}
		}
	}
	return list
}

// FindWorkspace picks the workspace named name (its directory's base name or
// its path), or the one containing current when name is empty. Base names
// need not be unique (x/dupe and y/dupe): a name several worktrees share is
// refused with their paths.
func FindWorkspace(list []Worktree, name, current string) (Worktree, error) {
	if name == "" {
		for _, w := range list {
			if samePath(w.Path, current) {
				return w, nil
			}
		}
		return Worktree{}, SessionNotFound(filepath.Base(current))
	}
	if err := ValidateWorkspaceName(name); err != nil {
		return Worktree{}, err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		abs = name
	}
	var found []Worktree
	var paths []string
	for _, w := range list {
		if w.Name == name || samePath(w.Path, abs) {
			found = append(found, w)
			paths = append(paths, w.Path)
		}
	}
	switch len(found) {
	case 0:
		return Worktree{}, SessionNotFound(name)
	case 1:
		return found[0], nil
	}
	return Worktree{}, InvalidWorkspaceName(name, "several worktrees have this name ("+strings.Join(paths, ", ")+"); pass the worktree's path")
}

// GitWorktreeID is the id git gave the worktree at path: the base name of
// its git dir under .git/worktrees/ (unique within the clone, unlike the
// directory's base name), or "" for the primary worktree.
func GitWorktreeID(path string) (string, error) {
	dot := filepath.Join(path, ".git")
	fi, err := os.Stat(dot)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", nil
	}
	b, err := os.ReadFile(dot)
	if err != nil {
		return "", err
	}
	line, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", errors.New(dot + " has no gitdir: line")
	}
	line, _, _ = strings.Cut(line, "\n")
	gitDir := strings.TrimSpace(line)
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(path, gitDir)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
		return "", nil // a primary worktree whose git dir is elsewhere (--separate-git-dir, a submodule)
	}
	return filepath.Base(gitDir), nil
}

// WorkspaceID is a workspace's identity across clones: the clone's writer
// id, then "/" and git's worktree id for a linked worktree (the writer id
// alone is the primary worktree). Bytes other than letters, digits, '.',
// '_' and '-' in git's id are %XX-escaped, so the identity never holds ':'
// (it is the first part of the dedupe key), whitespace or '/' beyond the
// first, and two ids never escape alike.
func WorkspaceID(writer, gitID string) string {
	if gitID == "" {
		return writer
	}
	var b strings.Builder
	b.WriteString(writer)
	b.WriteByte('/')
	for i := 0; i < len(gitID); i++ {
		c := gitID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// CheckWorkspace applies PRE-WS-002..004 to a listed worktree.
func CheckWorkspace(w Worktree) error {
	switch {
	case w.Prunable:
		return AbandonedWorkspace(w.Name)
	case w.Bare:
		return InvalidWorkspaceName(w.Name, "it is the bare repository, not a worktree")
	case w.Detached || w.Branch == "":
		return IdentityExtractionFailed(w.Name, "HEAD is detached, so there is no branch to merge; check out a branch")
	case strings.Trim(w.HEAD, "0") == "":
		return InvalidHeadSHA(w.HEAD, "branch "+w.Branch+" has no commits yet")
	case !ValidHeadSHA(w.HEAD):
		return HeadSHAExtractionFailed(w.Name, "git reported HEAD "+w.HEAD)
	}
	return nil
}

// spoolExclude keeps spool's own files out of cleanliness checks and auto-commits.
const spoolExclude = ":(top,exclude).spool"

// Inspect reads a workspace in one git call: its branch, its HEAD and its
// uncommitted changes (spool's own files aside), filling in w.
func Inspect(ctx context.Context, w *Worktree) (dirty []string, err error) {
	out, err := repo.Git(ctx, w.Path, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--", ":/", spoolExclude)
	if err != nil {
		return nil, HeadSHAExtractionFailed(w.Name, err.Error())
	}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			w.HEAD = strings.TrimPrefix(f, "# branch.oid ")
			if w.HEAD == "(initial)" {
				w.HEAD = strings.Repeat("0", 40)
			}
		case strings.HasPrefix(f, "# branch.head "):
			w.Branch = strings.TrimPrefix(f, "# branch.head ")
			if w.Branch == "(detached)" {
				w.Branch, w.Detached = "", true
			}
		case strings.HasPrefix(f, "#") || f == "":
		case f[0] == '?' || f[0] == '!':
			dirty = append(dirty, f[2:])
		default: // "1 XY sub mH mI mW hH hI path", "2 ... X score path" then origPath, "u ... path"
			n := map[byte]int{'1': 8, '2': 9, 'u': 10}[f[0]]
			if parts := strings.SplitN(f, " ", n+1); n > 0 && len(parts) == n+1 {
				dirty = append(dirty, parts[n])
			}
			if f[0] == '2' {
				i++ // the rename's source follows
			}
		}
	}
	return dirty, nil
}

// AutoCommit commits everything in the worktree and returns the new HEAD.
func AutoCommit(ctx context.Context, w Worktree) (string, error) {
	if _, err := repo.Git(ctx, w.Path, "add", "-A", "--", ":/", spoolExclude); err != nil {
		return "", HeadSHAExtractionFailed(w.Name, err.Error())
	}
	if _, err := repo.Git(ctx, w.Path, "commit", "-q", "--no-verify", "-m", "spool: auto-commit before merge submit"); err != nil {
		return "", HeadSHAExtractionFailed(w.Name, err.Error())
	}
	out, err := repo.Git(ctx, w.Path, "rev-parse", "HEAD")
	if err != nil {
		return "", HeadSHAExtractionFailed(w.Name, err.Error())
	}
	return strings.TrimSpace(out), nil
}

// ChangeID reads a stable change id for the commit at rev and that
// commit's id: jj's change id in a jj repository when jj is installed, else
// the commit's Change-Id: trailer, else "" (the decider generates one and the
// log remembers it).
func ChangeID(ctx context.Context, w Worktree, rev, root string) (head, id, source string, err error) {
	out, err := repo.Git(ctx, w.Path, "log", "-1", "--format=%H%x00%(trailers:key=Change-Id,valueonly,separator=%x00)", rev, "--")
	if err != nil {
		return "", "", "", ChangeIDExtractionFailed(w.Name, err.Error())
	}
	vals := strings.Split(strings.TrimSpace(out), "\x00")
	head = vals[0]
	if JJAvailable(w.Path, root) {
		w.HEAD = head
		id, err := jjChangeID(ctx, w)
		return head, id, SourceJJ, err
	}
	id, source, err = TrailerChangeID(w.Name, vals[1:])
	if err != nil {
		return "", "", "", err
	}
	return head, id, source, nil
}

// TrailerChangeID picks the change id from the values of a commit's
// Change-Id trailers, in order: the last one, unless it is empty (no id:
// the decider generates one); one with whitespace or ':' is refused.
func TrailerChangeID(workspace string, values []string) (id, source string, err error) {
	if len(values) == 0 {
		return "", "", nil
	}
	last := strings.TrimSpace(values[len(values)-1])
	if last == "" {
		return "", "", nil
	}
	if strings.ContainsAny(last, " \t:") {
		return "", "", ChangeIDExtractionFailed(workspace, "Change-Id trailer "+last+" contains whitespace or ':'")
	}
	return last, SourceTrailer, nil
}

// JJAvailable reports whether the workspace is in a jj repository and jj is on PATH.
func JJAvailable(dirs ...string) bool {
	found := false
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, ".jj")); err == nil && st.IsDir() {
			found = true
		}
	}
	if !found {
		return false
	}
	_, err := exec.LookPath("jj")
	return err == nil
}

func jjChangeID(ctx context.Context, w Worktree) (string, error) {
	args := []string{"log", "--no-graph", "--ignore-working-copy", "-r", w.HEAD, "-T", "change_id"}
	cmd := exec.CommandContext(ctx, "jj", args...)
	cmd.Dir = w.Path
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		code := -1
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		}
		return "", JjExecutionFailed("jj "+strings.Join(args, " "), code, stderr.String())
	}
	id := strings.TrimSpace(string(out))
	if id == "" {
		return "", ChangeIDExtractionFailed(w.Name, "jj printed no change id for "+w.HEAD)
	}
	return id, nil
}

// RemoteExists reports whether remote is configured (PRE-REMOTE-001).
func RemoteExists(ctx context.Context, dir, remote string) bool {
	_, err := repo.Git(ctx, dir, "remote", "get-url", remote)
	return err == nil
}

// PushBranch pushes a workspace's branch to remote (PRE-REMOTE-002, -003).
// The branch is the submitter's own, so a rewritten branch is pushed with a
// lease on what the remote had.
func PushBranch(ctx context.Context, w Worktree, remote string) error {
	ref := "refs/heads/" + w.Branch
	_, err := repo.Git(ctx, w.Path, "push", "--quiet", "--force-with-lease", remote, ref+":"+ref)
	if err == nil {
		return nil
	}
	msg := err.Error()
	var gerr *repo.GitError
	if errors.As(err, &gerr) {
		msg = strings.TrimSpace(gerr.Stderr)
	}
	for _, sign := range []string{"Could not read from remote", "unable to access", "does not appear to be a git repository",
		"Connection refused", "Could not resolve host", "Connection timed out", "No such file or directory"} {
		if strings.Contains(msg, sign) {
			return RemoteUnreachable(remote, msg)
		}
	}
	return BookmarkPushFailed(w.Name, w.Branch, msg)
}
