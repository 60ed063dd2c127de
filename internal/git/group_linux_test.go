package git

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// The merge train's long git commands (the scratch worktree's checkout and
// the rebase) run through internal/proc: in a process group of their own,
// led by the guard that ends them with spool. A pre-rebase hook (a child
// of git rebase, in its group) records its process group and the mark
// proc puts in the environment of every process of a group it starts.
func TestTrainGitRunsInItsOwnGroup(t *testing.T) {
	r := gittest.New(t, nil)
	feat := r.Worktree("feat", "f.txt", "f\n")
	r.Write(r.Root, "m.txt", "m\n")
	r.Git(r.Root, "add", "m.txt")
	r.Git(r.Root, "commit", "-q", "-m", "main moves")
	out := filepath.Join(t.TempDir(), "hook")
	hook := "#!/bin/sh\nread -r _ _ _ _ pgrp _ < /proc/$$/stat\necho \"$pgrp $SPOOL_PROC_GROUP\" > " + out + "\n"
	if err := os.WriteFile(filepath.Join(r.Root, ".git", "hooks", "pre-rebase"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(t.TempDir(), "scratch")
	ctx := context.Background()
	if err := AddScratch(ctx, r.Root, scratch, r.Git(feat, "rev-parse", "HEAD")); err != nil {
		t.Fatal(err)
	}
	defer RemoveScratch(ctx, r.Root, scratch)
	if conflicts, err := Rebase(ctx, scratch, r.Git(r.Root, "rev-parse", "main")); err != nil || conflicts != nil {
		t.Fatalf("rebase: %v %v", conflicts, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the hook did not run: %v", err)
	}
	pgrp, mark, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if pgrp == strconv.Itoa(syscall.Getpgrp()) || mark == "" {
		t.Fatalf("git rebase ran in group %s (ours is %d), mark %q: not through internal/proc", pgrp, syscall.Getpgrp(), mark)
	}
	if got := r.Git(scratch, "log", "-1", "--format=%s", "HEAD~1"); got != "main moves" {
		t.Fatalf("rebased onto %q", got)
	}
}
