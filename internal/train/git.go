package train

import (
	"context"
	"os"
	"strings"

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

// syncCheckout brings a worktree that has the target checked out up to the
// moved ref: a two-tree fast-forward of its index and files, which git
// refuses (leaving the files alone) where local changes would be overwritten.
func syncCheckout(ctx context.Context, dir, target, oldSHA, newSHA string) error {
	list, err := repo.Git(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return err
	}
	path := ""
	for _, block := range strings.Split(list, "\x00\x00") {
		lines := strings.Split(block, "\x00")
		if len(lines) > 0 && strings.HasPrefix(lines[0], "worktree ") {
			for _, l := range lines[1:] {
				if l == "branch refs/heads/"+target {
					path = strings.TrimPrefix(lines[0], "worktree ")
				}
			}
		}
	}
	if path == "" || oldSHA == newSHA {
		return nil
	}
	_, err = repo.Git(ctx, path, "read-tree", "-m", "-u", oldSHA, newSHA)
	return err
}
