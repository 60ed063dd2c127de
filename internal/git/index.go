package git

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Plumbing for inline sync: the current branch, an index of spool's own
// (GIT_INDEX_FILE) and single entries of the user's.

// Head is the commit HEAD points at and the ref it names (refs/heads/…;
// "HEAD" when detached). An unborn branch is commit "" with its ref.
func Head(ctx context.Context, dir string) (commit, ref string, err error) {
	out, err := Run(ctx, dir, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD")
	if err != nil {
		sym, serr := Run(ctx, dir, "symbolic-ref", "-q", "HEAD")
		if serr != nil {
			return "", "", err
		}
		return "", strings.TrimSpace(sym), nil
	}
	commit, ref, _ = strings.Cut(strings.TrimSpace(out), "\n")
	return commit, ref, nil
}

// HeadBranch reads the primary worktree's current branch from its HEAD
// file, without running git (spool status); ok is false when HEAD is
// detached or the file is not the usual symbolic ref.
func HeadBranch(r *Repo) (branch string, ok bool) {
	b, err := os.ReadFile(filepath.Join(r.CommonDir, "HEAD"))
	if err != nil {
		return "", false
	}
	branch, ok = strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
	return branch, ok && branch != ".invalid" // reftable keeps HEAD elsewhere
}

// InProgress names the operation a git directory is in the middle of
// (merge, rebase, cherry-pick, revert), or "".
func InProgress(gitDir string) string {
	for _, op := range []struct{ file, name string }{
		{"MERGE_HEAD", "merge"}, {"rebase-merge", "rebase"}, {"rebase-apply", "rebase"},
		{"CHERRY_PICK_HEAD", "cherry-pick"}, {"REVERT_HEAD", "revert"},
	} {
		if _, err := os.Stat(filepath.Join(gitDir, op.file)); err == nil {
			return op.name
		}
	}
	return ""
}

// MergeBase is a best common ancestor of a and b; "" when they share no
// history.
func MergeBase(ctx context.Context, dir, a, b string) (string, error) {
	out, err := Run(ctx, dir, "merge-base", a, b)
	var ee *exec.ExitError
	if err != nil && errors.As(err, &ee) && ee.ExitCode() == 1 {
		return "", nil
	}
	return strings.TrimSpace(out), err
}

// IndexEntry is a file of an index: its path and blob.
type IndexEntry struct {
	Path string
	Hash string
}

// indexEnv points git at index ("" for the repository's own).
func indexEnv(index string) []string {
	if index == "" {
		return nil
	}
	return []string{"GIT_INDEX_FILE=" + index}
}

// ReadTreeIndex makes index hold tree, replacing what it held.
func ReadTreeIndex(ctx context.Context, dir, index, tree string) error {
	_, err := RunEnv(ctx, dir, indexEnv(index), nil, "read-tree", tree)
	return err
}

// SetIndex adds or replaces entries (regular files) in index ("" for the
// repository's own), leaving every other entry as it is.
func SetIndex(ctx context.Context, dir, index string, entries []IndexEntry) error {
	if len(entries) == 0 {
		return nil
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString("100644 " + e.Hash + "\t" + e.Path + "\x00")
	}
	_, err := RunEnv(ctx, dir, indexEnv(index), []byte(b.String()), "update-index", "-z", "--index-info")
	return err
}

// IndexFiles lists the stage-0 entries of index ("" for the repository's
// own) under prefix, by path.
func IndexFiles(ctx context.Context, dir, index, prefix string) (map[string]string, error) {
	out, err := RunEnv(ctx, dir, indexEnv(index), nil, "ls-files", "-s", "-z", "--", ":(literal)"+prefix)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if ok && len(f) == 3 && f[2] == "0" {
			files[path] = f[1]
		}
	}
	return files, nil
}

// WriteIndexTree stores index as a tree and returns its id.
func WriteIndexTree(ctx context.Context, dir, index string) (string, error) {
	out, err := RunEnv(ctx, dir, indexEnv(index), nil, "write-tree")
	return strings.TrimSpace(out), err
}

// IndexLocked says whether err is git finding the index locked by another
// git command.
func IndexLocked(err error) bool {
	return strings.Contains(stderrOf(err), "index.lock")
}

// ReadRef reads a ref's commit from git's ref files, without running git
// or reading an object: for spool status, which must stay a few
// milliseconds. ok is false when there is no such ref.
func ReadRef(ctx context.Context, r *Repo, ref string) (commit string, ok bool) {
	repo, err := repoAt(r.CommonDir)
	if err != nil || ctx.Err() != nil {
		return "", false
	}
	resolved, err := storer.ResolveReference(repo.refs, plumbing.ReferenceName(ref))
	if err != nil {
		return "", false
	}
	return resolved.Hash().String(), true
}
