package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Worktrees, their status, and what the merge train does to them: add and
// remove scratch worktrees, rebase, move a ref with a compare-and-swap,
// fast-forward a checkout, push. Every command is an argv.

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
	out, err := Run(ctx, dir, "worktree", "list", "--porcelain", "-z")
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

// WorktreeID is the id git gave the worktree at path: the base name of
// its git dir under .git/worktrees/ (unique within the clone, unlike the
// directory's base name), or "" for the primary worktree.
func WorktreeID(path string) (string, error) {
	dot := filepath.Join(path, ".git")
	fi, err := os.Stat(dot)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", nil
	}
	gitDir, err := gitDirOfFile(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err != nil {
		return "", nil // a primary worktree whose git dir is elsewhere (--separate-git-dir, a submodule)
	}
	return filepath.Base(gitDir), nil
}

// SamePath reports whether a and b name the same file, links resolved.
func SamePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// spoolExclude keeps spool's own files out of cleanliness checks and auto-commits.
const spoolExclude = ":(top,exclude).spool"

// Status is what git status says of a worktree: its branch, its HEAD and
// its uncommitted paths, spool's own files aside.
type Status struct {
	HEAD     string // 40 zeros on an unborn branch
	Branch   string // empty when detached
	Detached bool
	Dirty    []string
}

// ReadStatus reads a worktree's status in one git call.
func ReadStatus(ctx context.Context, dir string) (Status, error) {
	var st Status
	out, err := Run(ctx, dir, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--", ":/", spoolExclude)
	if err != nil {
		return st, err
	}
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			st.HEAD = strings.TrimPrefix(f, "# branch.oid ")
			if st.HEAD == "(initial)" {
				st.HEAD = strings.Repeat("0", 40)
			}
		case strings.HasPrefix(f, "# branch.head "):
			st.Branch = strings.TrimPrefix(f, "# branch.head ")
			if st.Branch == "(detached)" {
				st.Branch, st.Detached = "", true
			}
		case strings.HasPrefix(f, "#") || f == "":
		case f[0] == '?' || f[0] == '!':
			st.Dirty = append(st.Dirty, f[2:])
		default: // "1 XY sub mH mI mW hH hI path", "2 ... X score path" then origPath, "u ... path"
			n := map[byte]int{'1': 8, '2': 9, 'u': 10}[f[0]]
			if parts := strings.SplitN(f, " ", n+1); n > 0 && len(parts) == n+1 {
				st.Dirty = append(st.Dirty, parts[n])
			}
			if f[0] == '2' {
				i++ // the rename's source follows
			}
		}
	}
	return st, nil
}

// AutoCommit commits everything in the worktree (spool's files aside) and
// returns the new HEAD.
func AutoCommit(ctx context.Context, dir, msg string) (string, error) {
	if _, err := Run(ctx, dir, "add", "-A", "--", ":/", spoolExclude); err != nil {
		return "", err
	}
	if _, err := Run(ctx, dir, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return "", err
	}
	out, err := Run(ctx, dir, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// LocalRemote says whether remote's URL is a path or a file:// URL: a
// remote whose receive-pack runs on this machine as a child of git push,
// in its process group.
func LocalRemote(ctx context.Context, dir, remote string) bool {
	out, err := Run(ctx, dir, "remote", "get-url", "--push", remote)
	if err != nil {
		return false
	}
	return isLocalURL(strings.TrimSpace(out))
}

func isLocalURL(url string) bool {
	if strings.HasPrefix(url, "file://") {
		return true
	}
	if strings.Contains(url, "://") {
		return false
	}
	// git's rule: a colon before the first slash is ssh's host:path.
	colon, slash := strings.Index(url, ":"), strings.Index(url, "/")
	return colon < 0 || slash >= 0 && slash < colon
}

// RemoteExists reports whether remote is configured (git remote get-url
// finds it), without running git when the repository's config has it.
func RemoteExists(ctx context.Context, dir, remote string) bool {
	if RemoteInConfig(dir, remote) {
		return true
	}
	_, err := Run(ctx, dir, "remote", "get-url", remote)
	return err == nil
}

// PushError is a push (or fetch) that failed; Unreachable says the remote
// could not be reached, Rejected that it refused the update (it moved).
type PushError struct {
	Remote      string
	Unreachable bool
	Rejected    bool
	Lock        string // a lock file in the way (PushRef), or ""
	Message     string // git's stderr
}

func (e *PushError) Error() string { return "git push " + e.Remote + ": " + e.Message }

// PushBranch pushes a branch to remote with a lease on what the remote had
// (the branch is the pusher's own, and may have been rewritten).
func PushBranch(ctx context.Context, dir, remote, branch string) error {
	ref := "refs/heads/" + branch
	_, err := Run(ctx, dir, "push", "--quiet", "--force-with-lease", remote, ref+":"+ref)
	if err == nil {
		return nil
	}
	msg := stderrOf(err)
	return &PushError{Remote: remote, Message: msg, Unreachable: unreachable(msg)}
}

// PushBranchAt pushes commit to remote's branch, never forced (a branch
// the remote has must be an ancestor of commit), from any worktree of the
// repository: the merge train pushing the head of an entry that was
// queued offline. What it pushes comes from the log, which anyone who can
// push may write: it must not be able to rewind or replace a branch.
func PushBranchAt(ctx context.Context, dir, remote, commit, branch string) error {
	ref := "refs/heads/" + branch
	_, err := Run(ctx, dir, "push", "--quiet", remote, commit+":"+ref)
	if err == nil {
		return nil
	}
	msg := stderrOf(err)
	return &PushError{Remote: remote, Message: msg, Unreachable: unreachable(msg)}
}

// JJAvailable reports whether one of dirs is in a jj repository and jj is on PATH.
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

// JJError is a jj command that failed.
type JJError struct {
	Command  string
	ExitCode int
	Stderr   string
}

func (e *JJError) Error() string { return e.Command + ": " + strings.TrimSpace(e.Stderr) }

// JJChangeID asks jj for the change id of commit in the workspace at dir.
func JJChangeID(ctx context.Context, dir, commit string) (string, error) {
	args := []string{"log", "--no-graph", "--ignore-working-copy", "-r", commit, "-T", "change_id"}
	cmd := exec.CommandContext(ctx, "jj", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		code := -1
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		}
		return "", &JJError{Command: "jj " + strings.Join(args, " "), ExitCode: code, Stderr: stderr.String()}
	}
	return strings.TrimSpace(string(out)), nil
}

// AddScratch makes a detached temporary worktree at commit.
func AddScratch(ctx context.Context, dir, path, commit string) error {
	_, err := RunGroup(ctx, dir, "worktree", "add", "--quiet", "--detach", path, commit)
	return err
}

// RemoveScratch removes a temporary worktree; it is best effort.
func RemoveScratch(ctx context.Context, dir, path string) {
	if path == "" {
		return
	}
	Run(ctx, dir, "worktree", "remove", "--force", path)
	os.RemoveAll(path)
	Run(ctx, dir, "worktree", "prune")
}

// Rebase rebases the scratch worktree's commits onto onto. A conflict
// returns the conflicting paths with the rebase aborted.
func Rebase(ctx context.Context, scratch, onto string) (conflicts []string, err error) {
	_, err = RunGroup(ctx, scratch, "-c", "user.name=spool merge train", "-c", "user.email=spool@localhost",
		"rebase", "--quiet", "--no-autostash", onto)
	if err == nil {
		return nil, nil
	}
	out, _ := Run(ctx, scratch, "diff", "--name-only", "--diff-filter=U", "-z")
	Run(ctx, scratch, "rebase", "--abort")
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			conflicts = append(conflicts, p)
		}
	}
	if len(conflicts) > 0 {
		return conflicts, nil
	}
	return nil, err
}

// UpdateRef moves ref from old to new, failing if it no longer points at old.
func UpdateRef(ctx context.Context, dir, ref, newSHA, oldSHA, msg string) error {
	_, err := Run(ctx, dir, "update-ref", "-m", msg, ref, newSHA, oldSHA)
	return err
}

// CheckoutOf is the worktree that has branch checked out, or "".
func CheckoutOf(ctx context.Context, dir, branch string) (string, error) {
	list, err := Run(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	for _, w := range ParseWorktrees(list) {
		if w.Branch == branch && !w.Bare && !w.Prunable {
			return w.Path, nil
		}
	}
	return "", nil
}

// Uncommitted lists a worktree's Uncommitted paths: changes staged or not,
// both sides of a rename, untracked files (not ignored ones), unmerged
// paths; .spool/ included, since checking out over its changes fails too.
// It takes no lock, so the user's own git commands are never in its way.
func Uncommitted(ctx context.Context, dir string) ([]string, error) {
	out, err := Run(ctx, dir, "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var paths []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		paths = append(paths, f[3:])
		if strings.ContainsAny(f[:2], "RC") { // a rename or copy: "XY new" then the source
			if i+1 < len(fields) && fields[i+1] != "" {
				paths = append(paths, fields[i+1])
			}
			i++
		}
	}
	return paths, nil
}

// ChangedPaths lists the paths that differ between two commits.
func ChangedPaths(ctx context.Context, dir, from, to string) ([]string, error) {
	out, err := Run(ctx, dir, "diff", "--name-only", "-z", "--no-renames", from, to, "--")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// FastForward updates a checkout's index and files from commit from to
// commit to, as git merge --ff-only does: a two-tree read-tree carries
// local changes to paths the move leaves alone, and refuses (changing
// nothing) where it would overwrite one. The caller moves the branch.
func FastForward(ctx context.Context, checkout, from, to string) error {
	if from == to {
		return nil
	}
	if strings.HasPrefix(from, "-") || strings.HasPrefix(to, "-") {
		// Recovery passes commits read from the log: never an option.
		return fmt.Errorf("git read-tree: %q or %q is not a commit", from, to)
	}
	Run(ctx, checkout, "update-index", "-q", "--refresh") // stat changes alone are not edits
	_, err := Run(ctx, checkout, "read-tree", "-m", "-u", from, to)
	return err
}

// SyncCheckout brings the worktree that has target checked out up to the
// moved ref (recovery finishing a merge a dead runner began); best effort.
func SyncCheckout(ctx context.Context, dir, target, oldSHA, newSHA string) error {
	path, err := CheckoutOf(ctx, dir, target)
	if err != nil || path == "" {
		return err
	}
	return FastForward(ctx, path, oldSHA, newSHA)
}
