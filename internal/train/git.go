package train

import (
	"context"
	"os"
	"strings"

	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/repo"
)

// The git binary does what go-git has no equivalent for, or does not do as
// git does: rebase, worktree add/remove/list, update-ref (the
// compare-and-swap), read-tree and push. Reads are in gitread.go.

// addScratch makes a detached temporary worktree at commit.
func addScratch(ctx context.Context, dir, path, commit string) error {
	_, err := repo.Git(ctx, dir, "worktree", "add", "--quiet", "--detach", path, commit)
	return err
}

// removeScratch removes a temporary worktree; it is best effort.
func removeScratch(ctx context.Context, dir, path string) {
	if path == "" {
		return
	}
	repo.Git(ctx, dir, "worktree", "remove", "--force", path)
	os.RemoveAll(path)
	repo.Git(ctx, dir, "worktree", "prune")
}

// rebase rebases the scratch worktree's commits onto onto. A conflict
// returns the conflicting paths with the rebase aborted.
func rebase(ctx context.Context, scratch, onto string) (conflicts []string, err error) {
	_, err = repo.Git(ctx, scratch, "-c", "user.name=spool merge train", "-c", "user.email=spool@localhost",
		"rebase", "--quiet", "--no-autostash", onto)
	if err == nil {
		return nil, nil
	}
	out, _ := repo.Git(ctx, scratch, "diff", "--name-only", "--diff-filter=U", "-z")
	repo.Git(ctx, scratch, "rebase", "--abort")
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

// updateRef moves ref from old to new, failing if it no longer points at old.
func updateRef(ctx context.Context, dir, ref, newSHA, oldSHA, msg string) error {
	_, err := repo.Git(ctx, dir, "update-ref", "-m", msg, ref, newSHA, oldSHA)
	return err
}

// checkoutOf is the worktree that has branch checked out, or "".
func checkoutOf(ctx context.Context, dir, branch string) (string, error) {
	list, err := repo.Git(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	for _, w := range mergequeue.ParseWorktrees(list) {
		if w.Branch == branch && !w.Bare && !w.Prunable {
			return w.Path, nil
		}
	}
	return "", nil
}

// uncommitted lists a worktree's uncommitted paths: changes staged or not,
// both sides of a rename, untracked files (not ignored ones), unmerged
// paths; .spool/ included, since checking out over its changes fails too.
// It takes no lock, so the user's own git commands are never in its way.
func uncommitted(ctx context.Context, dir string) ([]string, error) {
	out, err := repo.Git(ctx, dir, "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all")
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

// changedPaths lists the paths that differ between two commits.
func changedPaths(ctx context.Context, dir, from, to string) ([]string, error) {
	out, err := repo.Git(ctx, dir, "diff", "--name-only", "-z", "--no-renames", from, to, "--")
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

// fastForward updates a checkout's index and files from commit from to
// commit to, as git merge --ff-only does: a two-tree read-tree carries
// local changes to paths the move leaves alone, and refuses (changing
// nothing) where it would overwrite one. The caller moves the branch.
func fastForward(ctx context.Context, checkout, from, to string) error {
	if from == to {
		return nil
	}
	repo.Git(ctx, checkout, "update-index", "-q", "--refresh") // stat changes alone are not edits
	_, err := repo.Git(ctx, checkout, "read-tree", "-m", "-u", from, to)
	return err
}

// syncCheckout brings the worktree that has target checked out up to the
// moved ref (recovery finishing a merge a dead runner began); best effort.
func syncCheckout(ctx context.Context, dir, target, oldSHA, newSHA string) error {
	path, err := checkoutOf(ctx, dir, target)
	if err != nil || path == "" {
		return err
	}
	return fastForward(ctx, path, oldSHA, newSHA)
}
