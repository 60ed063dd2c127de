package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// spool sync with sync.mode = inline, on real clones of one bare remote:
// the log is committed on the current branch, alone, and that branch is
// pulled and pushed.

// inlineClones is syncClones with sync.mode inline in every clone (the
// setting stays uncommitted: a changed tracked file sync must leave).
func inlineClones(t *testing.T, bin string, n int) (*gittest.Repo, []string, [][]string) {
	t.Helper()
	r, clones, envs := syncClones(t, bin, n)
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "config", "set", "sync.mode", "inline")
	}
	return r, clones, envs
}

// gitLines splits git's output into its non-empty lines.
func gitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// A sync with something staged, a file changed, and a file both staged
// and changed again commits the log and nothing else: every one of those
// is as it was, and the commit lists only writer files.
func TestInlineSyncCommitsOnlyEvents(t *testing.T) {
	bin := spoolBinary(t)
	r, clones, envs := inlineClones(t, bin, 1)
	dir, env := clones[0], envs[0]
	before := r.Git(dir, "rev-parse", "HEAD")
	r.Write(dir, "staged.txt", "staged\n")
	r.Git(dir, "add", "staged.txt")
	r.Write(dir, "README", "staged edit\n")
	r.Git(dir, "add", "README")
	r.Write(dir, "README", "edited again, unstaged\n")
	r.Write(dir, "notes.txt", "untracked\n")
	index := func() string { return r.Git(dir, "ls-files", "-s", "--", ":!.spool/events") }
	status := func() []string {
		var keep []string
		out := must(exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=all").Output()) // untrimmed: " M"
		for _, l := range gitLines(string(out)) {
			if !strings.Contains(l, ".spool/events/") {
				keep = append(keep, l)
			}
		}
		return keep
	}
	indexBefore, statusBefore := index(), status()
	if !slices.Contains(statusBefore, "A  staged.txt") || !slices.Contains(statusBefore, "MM README") || !slices.Contains(statusBefore, " M .spool/config.json") {
		t.Fatalf("the setup is not what the test means: %q", statusBefore)
	}

	jobSpool(t, bin, dir, env, "task", "add", "one")
	jobSpool(t, bin, dir, env, "task", "add", "two")
	if out := jobSpool(t, bin, dir, env, "sync"); !strings.Contains(out, "synced with origin/main: received 0 events, sent 2") {
		t.Fatalf("inline sync said %q", out)
	}

	head := r.Git(dir, "rev-parse", "HEAD")
	if parent := r.Git(dir, "rev-parse", "HEAD^"); parent != before || head == before {
		t.Fatalf("HEAD %s, its parent %s: want one commit on %s", head, parent, before)
	}
	changed := gitLines(r.Git(dir, "show", "--format=", "--name-only", "HEAD"))
	if len(changed) != 1 || !strings.HasPrefix(changed[0], ".spool/events/") || !strings.HasSuffix(changed[0], ".jsonl") {
		t.Errorf("the sync commit changed %q, want this clone's writer file alone", changed)
	}
	stat := r.Git(dir, "show", "--stat", "--format=", "HEAD")
	for _, l := range gitLines(stat) {
		if !strings.Contains(l, ".spool/events/") && !strings.Contains(l, "changed") {
			t.Errorf("git show --stat HEAD lists more than the log: %q", stat)
		}
	}
	if got := index(); got != indexBefore {
		t.Errorf("the index outside .spool/events changed:\nbefore %s\nafter  %s", indexBefore, got)
	}
	if got := status(); !slices.Equal(got, statusBefore) {
		t.Errorf("git status outside .spool/events changed:\nbefore %q\nafter  %q", statusBefore, got)
	}
	if got := r.Git(dir, "status", "--porcelain", "--", ".spool/events"); got != "" {
		t.Errorf("after the sync git status shows the log as %q, want clean", got)
	}
	if got := r.Git(dir, "show", ":README"); got != "staged edit" {
		t.Errorf("the staged README is %q now", got)
	}
	if got := string(must(os.ReadFile(filepath.Join(dir, "README")))); got != "edited again, unstaged\n" {
		t.Errorf("the README in the work tree is %q now", got)
	}
	if remote := r.Git(r.Remote, "rev-parse", "main"); remote != head {
		t.Errorf("the remote's main is %s, want the sync commit %s", remote, head)
	}
	if out := jobSpool(t, bin, dir, env, "sync"); !strings.Contains(out, "up to date with origin/main") {
		t.Errorf("a second sync said %q", out)
	}
	if again := r.Git(dir, "rev-parse", "HEAD"); again != head {
		t.Errorf("a sync with nothing new moved HEAD from %s to %s", head, again)
	}
}

// Two clones in inline mode adding and syncing at the same time end with
// every task, the same branch as the remote, a log verify accepts, no
// merge commit (a push refused builds again on the remote's tip) and the
// log clean in git status.
func TestInlineSyncTwoClonesConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("two clones syncing")
	}
	bin := spoolBinary(t)
	r, clones, envs := inlineClones(t, bin, 2)
	addAndSync(t, bin, clones, envs, 8, 2, "clone %d task %d")
	syncAll(t, bin, clones, envs)
	want := taskTitles(t, bin, clones[0], envs[0])
	if len(want) != 16 {
		t.Fatalf("clone 0 has %d tasks, want 16", len(want))
	}
	tip := r.Git(r.Remote, "rev-parse", "main")
	for i, dir := range clones {
		if got := taskTitles(t, bin, dir, envs[i]); !slices.Equal(got, want) {
			t.Errorf("clone %d has %q, clone 0 %q", i, got, want)
		}
		jobSpool(t, bin, dir, envs[i], "verify")
		if head := r.Git(dir, "rev-parse", "HEAD"); head != tip {
			t.Errorf("clone %d is at %s, the remote at %s", i, head, tip)
		}
		if merges := r.Git(dir, "rev-list", "--merges", "HEAD"); merges != "" {
			t.Errorf("clone %d's history has merges: %s", i, merges)
		}
		if st := r.Git(dir, "status", "--porcelain", "--", ".spool/events"); st != "" {
			t.Errorf("clone %d: git status shows the log as %q", i, st)
		}
		if _, err := os.Stat(filepath.Join(dir, ".git", "MERGE_HEAD")); err == nil {
			t.Errorf("clone %d has a merge in progress", i)
		}
	}
}

// The remote's branch has a commit outside .spool/events this one lacks:
// sync refuses (exit 4 sync_needs_pull, naming the file), changes nothing
// — HEAD, index, work tree, log — and leaves no merge; after git pull it
// goes through. A commit of the user's not yet pushed, with only events
// on the remote, is kept: sync merges and pushes both.
func TestInlineSyncDivergedBranch(t *testing.T) {
	bin := spoolBinary(t)
	r, clones, envs := inlineClones(t, bin, 2)
	a, b := clones[0], clones[1]
	jobSpool(t, bin, a, envs[0], "sync")
	jobSpool(t, bin, b, envs[1], "sync")
	r.Commit(b, "code.go", "package code\n", "b: code")
	r.Git(b, "push", "-q", "origin", "main")
	jobSpool(t, bin, b, envs[1], "task", "add", "from b")
	jobSpool(t, bin, b, envs[1], "sync")

	jobSpool(t, bin, a, envs[0], "task", "add", "from a")
	state := func() string {
		return untouched(r, a) + "\n" + r.Git(a, "status", "--porcelain") + "\n" + jobSpool(t, bin, a, envs[0], "log", "--json")
	}
	before := state()
	out, err := jobSpoolErr(bin, a, envs[0], "--json", "sync")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(out, `"code":"sync_needs_pull"`) || !strings.Contains(out, "code.go") {
		t.Fatalf("sync with the remote's branch ahead in code.go: %v\n%s", err, out)
	}
	if after := state(); after != before {
		t.Errorf("a refused sync changed the clone:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := os.Stat(filepath.Join(a, ".git", "MERGE_HEAD")); err == nil {
		t.Error("a refused sync left a merge in progress")
	}
	if st := jobSpool(t, bin, a, envs[0], "--json", "status"); !strings.Contains(st, `"ahead": 1,`) || !strings.Contains(st, `"behind": 1`) {
		t.Errorf("status after the refused sync does not count b's event as behind, a's as ahead:\n%s", st)
	}
	// ... from the sync cache, which knows the tip it refused: status reads no blob.
	seen := r.Git(a, "rev-parse", "refs/spool/sync/origin/main")
	if c := string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "sync-cache.json")))); !strings.Contains(c, seen) {
		t.Errorf("the sync cache lacks the refused tip %s:\n%s", seen, c)
	}

	r.Git(a, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
	jobSpool(t, bin, a, envs[0], "sync")
	jobSpool(t, bin, b, envs[1], "sync")
	for i, dir := range clones {
		if got := taskTitles(t, bin, dir, envs[i]); !slices.Equal(got, []string{"from a", "from b"}) {
			t.Errorf("clone %d after the pull: %q", i, got)
		}
	}

	// a commits work of its own; b only adds events.
	mine := r.Commit(a, "mine.txt", "mine\n", "a: work")
	jobSpool(t, bin, b, envs[1], "task", "add", "b again")
	jobSpool(t, bin, b, envs[1], "sync")
	jobSpool(t, bin, a, envs[0], "task", "add", "a again")
	jobSpool(t, bin, a, envs[0], "sync")
	parents := strings.Fields(r.Git(a, "rev-list", "--parents", "-n1", "HEAD"))
	if len(parents) != 3 || parents[1] != mine {
		t.Errorf("HEAD after syncing over a commit of the user's: %q, want a merge whose first parent is %s", parents, mine)
	}
	if changed := r.Git(a, "diff", "--name-only", mine, "HEAD"); strings.Contains(changed, "mine.txt") || strings.Contains(changed, "code.go") {
		t.Errorf("the merge changed more than the log: %q", changed)
	}
	if out, err := jobSpoolErr(bin, b, envs[1], "sync"); err == nil || !strings.Contains(out, "mine.txt") {
		t.Errorf("b's sync with a's work on the remote: %v\n%s", err, out)
	}
	r.Git(b, "pull", "-q", "--ff-only", "origin", "main")
	jobSpool(t, bin, b, envs[1], "sync")
	if got := string(must(os.ReadFile(filepath.Join(b, "mine.txt")))); got != "mine\n" {
		t.Errorf("b does not get a's own commit: %q", got)
	}
	for i, dir := range clones {
		if got := taskTitles(t, bin, dir, envs[i]); len(got) != 4 {
			t.Errorf("clone %d: %q", i, got)
		}
		jobSpool(t, bin, dir, envs[i], "verify")
	}
}

// kill -9 at any moment of an inline sync (spool and its git) loses
// nothing and leaves the branch usable: every acknowledged event is in the
// log, HEAD only moves forward from where it was, no merge is left in
// progress, and the next sync goes through. The locks git leaves on
// spool's own index and refs are spool's to remove; those on the user's
// index and branch are not.
func TestInlineSyncKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("kills spool sync")
	}
	bin := spoolBinary(t)
	r, clones, envs := inlineClones(t, bin, 2)
	a, b := clones[0], clones[1]
	jobSpool(t, bin, a, envs[0], "sync")
	start := r.Git(a, "rev-parse", "HEAD")
	var added []string
	for round := range 12 {
		title := fmt.Sprintf("round %02d", round)
		jobSpool(t, bin, a, envs[0], "task", "add", title)
		added = append(added, title)
		if round%3 == 0 {
			jobSpool(t, bin, b, envs[1], "task", "add", "from b "+title)
			jobSpool(t, bin, b, envs[1], "sync")
		}
		killMidway(t, bin, a, envs[0], 60*time.Millisecond, killGroupButRemote, "sync")
		// What git tells its user to do after a crash; spool never removes
		// a lock of the user's, which may be a live git's.
		for _, lock := range []string{filepath.Join(a, ".git", "index.lock"), filepath.Join(a, ".git", "HEAD.lock"),
			filepath.Join(a, ".git", "refs", "heads", "main.lock")} {
			if os.Remove(lock) == nil {
				t.Logf("round %d: git was killed holding %s", round, lock)
			}
		}
		jobSpool(t, bin, a, envs[0], "verify")
		if got := taskTitles(t, bin, a, envs[0]); !containsAll(got, added) {
			t.Fatalf("round %d: the local log lost an acknowledged task: have %q", round, got)
		}
		if _, err := os.Stat(filepath.Join(a, ".git", "MERGE_HEAD")); err == nil {
			t.Fatalf("round %d: a merge is in progress", round)
		}
		if out, err := exec.Command("git", "-C", a, "merge-base", "--is-ancestor", start, "HEAD").CombinedOutput(); err != nil {
			t.Fatalf("round %d: HEAD no longer descends from %s: %v %s", round, start, err, out)
		}
	}
	jobSpool(t, bin, a, envs[0], "sync")
	jobSpool(t, bin, b, envs[1], "sync")
	if got := taskTitles(t, bin, b, envs[1]); !containsAll(got, added) {
		t.Fatalf("after the kills, the other clone lacks tasks: %q", got)
	}
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "verify")
		if st := r.Git(dir, "status", "--porcelain", "--", ".spool/events"); st != "" {
			t.Errorf("clone %d: git status shows the log as %q", i, st)
		}
	}
}
