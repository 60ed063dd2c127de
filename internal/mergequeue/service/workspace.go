package service

import (
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/mergequeue"
)

// FindWorkspace picks the workspace named name (its directory's base name or
// its path), or the one containing current when name is empty. Base names
// need not be unique (x/dupe and y/dupe): a name several worktrees share is
// refused with their paths.
func FindWorkspace(list []git.Worktree, name, current string) (git.Worktree, error) {
	if name == "" {
		for _, w := range list {
			if git.SamePath(w.Path, current) {
				return w, nil
			}
		}
		return git.Worktree{}, mergequeue.SessionNotFound(filepath.Base(current))
	}
	if err := mergequeue.ValidateWorkspaceName(name); err != nil {
		return git.Worktree{}, err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		abs = name
	}
	var found []git.Worktree
	var paths []string
	for _, w := range list {
		if w.Name == name || git.SamePath(w.Path, abs) {
			found = append(found, w)
			paths = append(paths, w.Path)
		}
	}
	switch len(found) {
	case 0:
		return git.Worktree{}, mergequeue.SessionNotFound(name)
	case 1:
		return found[0], nil
	}
	return git.Worktree{}, mergequeue.InvalidWorkspaceName(name, "several worktrees have this name ("+strings.Join(paths, ", ")+"); pass the worktree's path")
}

// CheckWorkspace refuses a listed worktree that cannot be submitted: one
// abandoned (its directory gone), without a branch, or without a commit.
func CheckWorkspace(w git.Worktree) error {
	switch {
	case w.Prunable:
		return mergequeue.AbandonedWorkspace(w.Name)
	case w.Bare:
		return mergequeue.InvalidWorkspaceName(w.Name, "it is the bare repository, not a worktree")
	case w.Detached || w.Branch == "":
		return mergequeue.DetachedHead(w.Name)
	case strings.Trim(w.HEAD, "0") == "":
		return mergequeue.InvalidHeadSHA(w.HEAD, "branch "+w.Branch+" has no commits yet")
	case !mergequeue.ValidHeadSHA(w.HEAD):
		return mergequeue.HeadSHAExtractionFailed(w.Name, "git reported HEAD "+w.HEAD)
	}
	return nil
}
