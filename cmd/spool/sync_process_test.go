package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// spool sync on real clones of one bare remote: each clone a writer of its
// own, appending and syncing in parallel; then every clone holds every
// event, its projections equal the others', and verify passes.

// syncClones makes a bare remote and n clones of it (gittest's repository
// the first), spool initialised and committed by the first; each clone's
// commands run as its own actor.
func syncClones(t *testing.T, bin string, n int) (r *gittest.Repo, clones []string, envs [][]string) {
	t.Helper()
	r = gittest.New(t, nil)
	env0 := []string{"SPOOL_ACTOR=agent0@example.com", "SPOOL_NOW="}
	jobSpool(t, bin, r.Root, env0, "init")
	r.Git(r.Root, "add", ".spool")
	r.Git(r.Root, "commit", "-q", "-m", "spool: init")
	r.Git(r.Root, "push", "-q", "origin", "main")
	clones, envs = []string{r.Root}, [][]string{env0}
	for i := 1; i < n; i++ {
		dir := filepath.Join(filepath.Dir(r.Root), fmt.Sprintf("clone%d", i))
		r.Git(filepath.Dir(dir), "clone", "-q", r.Remote, dir)
		clones = append(clones, dir)
		envs = append(envs, []string{fmt.Sprintf("SPOOL_ACTOR=agent%d@example.com", i), "SPOOL_NOW="})
	}
	return r, clones, envs
}

// untouched is what sync must leave alone: HEAD, the index and the work
// tree, where spool keeps nothing.
func untouched(r *gittest.Repo, dir string) string {
	r.T.Helper()
	return r.Git(dir, "rev-parse", "HEAD") + "\n" + r.Git(dir, "diff", "--cached", "--name-status") + "\n" +
		r.Git(dir, "status", "--porcelain", "--untracked-files=all")
}

func taskTitles(t *testing.T, bin, dir string, env []string) []string {
	t.Helper()
	var tasks []struct{ Title string }
	if err := json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "list", "--status", "open")), &tasks); err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, x := range tasks {
		titles = append(titles, x.Title)
	}
	slices.Sort(titles)
	return titles
}

// addAndSync has every clone, all at once, add n tasks (titled by title
// with the clone's index and the task's) and sync after every every-th.
func addAndSync(t *testing.T, bin string, clones []string, envs [][]string, n, every int, title string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(clones))
	for i, dir := range clones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range n {
				if _, err := jobSpoolErr(bin, dir, envs[i], "task", "add", fmt.Sprintf(title, i, k)); err != nil {
					errs <- err
					return
				}
				if k%every == every-1 {
					if out, err := jobSpoolErr(bin, dir, envs[i], "sync"); err != nil {
						errs <- fmt.Errorf("clone %d sync: %v\n%s", i, err, out)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// syncAll syncs every clone, twice round: the first round brings
// everything to the remote, the second to every clone.
func syncAll(t *testing.T, bin string, clones []string, envs [][]string) {
	t.Helper()
	for range 2 {
		for i, dir := range clones {
			jobSpool(t, bin, dir, envs[i], "sync")
		}
	}
}

// sameProjections checks that every clone's log verifies and that, after
// a replay, every clone's projection files are the first one's bytes.
func sameProjections(t *testing.T, bin string, clones []string, envs [][]string) {
	t.Helper()
	state := func(i int) map[string]string {
		jobSpool(t, bin, clones[i], envs[i], "verify")
		jobSpool(t, bin, clones[i], envs[i], "replay")
		files := map[string]string{}
		paths, _ := filepath.Glob(filepath.Join(clones[i], ".git", "spool", "state", "*.json"))
		for _, p := range paths {
			files[filepath.Base(p)] = string(must(os.ReadFile(p)))
		}
		return files
	}
	ref := state(0)
	if len(ref) == 0 {
		t.Fatal("no projection files in .git/spool/state")
	}
	for i := 1; i < len(clones); i++ {
		got := state(i)
		for name, b := range ref {
			if got[name] != b {
				t.Errorf("clone %d's %s differs from clone 0's", i, name)
			}
		}
	}
}

// killMidway starts spool with args in dir, in a process group of its
// own, and after a random pause shorter than within kills it with kill,
// which is given the group's id.
func killMidway(t *testing.T, bin, dir string, env []string, within time.Duration, kill func(pgid int), args ...string) {
	t.Helper()
	cmd := spoolCmd(bin, dir, env, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Duration(rand.IntN(int(within/time.Millisecond))) * time.Millisecond)
	kill(cmd.Process.Pid)
	cmd.Wait()
}

// killGroupButRemote sends SIGKILL to every process of group pgid (spool
// and the git it runs) except git's receive-pack and upload-pack, the
// remote's side of a push or fetch to a path: a server's is not killed
// with its client, and a receive-pack killed mid-update would leave the
// remote's ref locked for every later push.
func killGroupButRemote(pgid int) {
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[2] != fmt.Sprint(pgid) {
			continue
		}
		// The command line, not comm, which the kernel cuts to 15 bytes
		// (git-receive-pac).
		args, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if slices.ContainsFunc([]string{"receive-pack", "upload-pack", "pack-objects"}, func(git string) bool { return strings.Contains(string(args), git) }) {
			continue
		}
		var pid int
		fmt.Sscan(string(b), &pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Four clones add 25 tasks each, syncing every fifth add, all at once;
// after a last round every clone has the 100 tasks, the same projections
// and a log verify accepts, and sync touched nothing in the work tree.
func syncFourClones(t *testing.T) {
	if testing.Short() {
		t.Skip("four clones")
	}
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 4)
	// A file staged in the first clone, and one changed: sync leaves both.
	os.WriteFile(filepath.Join(clones[0], "staged.txt"), []byte("staged\n"), 0o644)
	r.Git(clones[0], "add", "staged.txt")
	os.WriteFile(filepath.Join(clones[0], "notes.txt"), []byte("mine\n"), 0o644)
	before := make([]string, len(clones))
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "status") // registers the merge driver, as any first command
		before[i] = untouched(r, dir)
	}
	addAndSync(t, bin, clones, envs, 25, 5, "clone %d task %02d")
	syncAll(t, bin, clones, envs)
	want := taskTitles(t, bin, clones[0], envs[0])
	if len(want) != 100 {
		// Lost from the log, or only from the list? (seen once in CI, 2026-11-27)
		created := jobSpool(t, bin, clones[0], envs[0], "--json", "log", "-t", "task.created")
		all := jobSpool(t, bin, clones[0], envs[0], "--json", "task", "list")
		status := jobSpool(t, bin, clones[0], envs[0], "status")
		jobSpool(t, bin, clones[0], envs[0], "replay")
		t.Fatalf("clone 0 has %d open tasks, want 100: its log holds %d task.created, task list %d tasks, after a replay %d open\n%s",
			len(want), strings.Count(created, "\n"), strings.Count(all, `"id":`), len(taskTitles(t, bin, clones[0], envs[0])), status)
	}
	for i, dir := range clones {
		if got := taskTitles(t, bin, dir, envs[i]); !slices.Equal(got, want) {
			t.Errorf("clone %d has %d tasks, clone 0 %d", i, len(got), len(want))
		}
		if after := untouched(r, dir); after != before[i] {
			t.Errorf("clone %d: sync changed HEAD, the index or the work tree:\nbefore %q\nafter  %q", i, before[i], after)
		}
		if out := jobSpool(t, bin, dir, envs[i], "sync"); !strings.Contains(out, "up to date") {
			t.Errorf("clone %d, a sync with nothing new: %q", i, out)
		}
	}
	sameProjections(t, bin, clones, envs)
}

// The same clone on two machines (one restored from the other's copy)
// appends to one writer file on both: the file forked, and neither copy is
// unioned with the other. The copy that reached the remote first stays
// there: the second machine keeps its own events in its local log, keeps
// the remote's copy aside, and its syncs never put its copy over the
// remote's (no turns taken); its verify, and its claims, say what to do:
// doctor --repair gives it a writer of its own, and then nothing is lost.
func TestSyncKeepsTheFirstOfAForkedWriterFile(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 2)
	jobSpool(t, bin, clones[0], envs[0], "task", "add", "before the copy")
	jobSpool(t, bin, clones[0], envs[0], "sync")
	jobSpool(t, bin, clones[1], envs[1], "sync")
	// clone1 becomes clone0's writer, with clone0's file as it is now.
	w0 := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(clones[0], ".git", "spool", "writer")))))
	os.WriteFile(filepath.Join(clones[1], ".git", "spool", "writer"), []byte(w0+"\n"), 0o644)
	jobSpool(t, bin, clones[0], envs[0], "task", "add", "on machine one")
	jobSpool(t, bin, clones[1], envs[1], "task", "add", "on machine two")
	jobSpool(t, bin, clones[0], envs[0], "sync")
	jobSpool(t, bin, clones[1], envs[1], "sync")
	tip := r.Git(clones[0], "ls-remote", "origin", "spool-log")
	jobSpool(t, bin, clones[1], envs[1], "sync")
	jobSpool(t, bin, clones[0], envs[0], "sync")
	if now := r.Git(clones[0], "ls-remote", "origin", "spool-log"); now != tip {
		t.Fatalf("the remote moved from %s to %s: the machines take turns", tip, now)
	}
	for i, want := range [][]string{{"before the copy", "on machine one"}, {"before the copy", "on machine two"}} {
		if got := taskTitles(t, bin, clones[i], envs[i]); !slices.Equal(got, want) {
			t.Errorf("clone %d: %q, want %q", i, got, want)
		}
	}
	jobSpool(t, bin, clones[0], envs[0], "verify")
	out, err := jobSpoolErr(bin, clones[1], envs[1], "verify")
	if err == nil || !strings.Contains(out, w0+".jsonl:2: ") || !strings.Contains(out, "spool doctor --repair gives this clone a new writer id") {
		t.Fatalf("verify on the second machine: %v\n%s", err, out)
	}
	out, err = jobSpoolErr(bin, clones[1], envs[1], "next")
	if err == nil || !strings.Contains(out, "two machines write as this writer") || !strings.Contains(out, "spool doctor --repair") {
		t.Fatalf("a claim on the second machine: %v\n%s", err, out)
	}

	// doctor --repair on the second machine: a writer of its own, its event
	// written again as that writer's; then both machines have every task.
	out = jobSpool(t, bin, clones[1], envs[1], "doctor", "--repair")
	if !strings.Contains(out, "this clone now writes as writer") || !strings.Contains(out, "its 1 events after that line are written again") {
		t.Fatalf("doctor --repair:\n%s", out)
	}
	if w1 := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(clones[1], ".git", "spool", "writer"))))); w1 == w0 {
		t.Fatal("the second machine kept its writer id")
	}
	syncAll(t, bin, clones, envs)
	want := []string{"before the copy", "on machine one", "on machine two"}
	for i := range clones {
		if got := taskTitles(t, bin, clones[i], envs[i]); !slices.Equal(got, want) {
			t.Errorf("clone %d after the repair: %q, want %q", i, got, want)
		}
	}
	sameProjections(t, bin, clones, envs)
	jobSpool(t, bin, clones[1], envs[1], "next")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// kill -9 at any moment of a sync loses nothing: every acknowledged event
// is in the local log, the log passes verify, and the next sync shares it.
// The same with the writer files in parts (of 512 bytes: most of them
// after a few rounds), killed at varied moments of writing the parts.
func TestSyncKilledMidway(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills spool sync")
	}
	for _, parts := range []bool{false, true} {
		t.Run(map[bool]string{false: "blobs", true: "in parts"}[parts], func(t *testing.T) {
			t.Parallel()
			syncKilledMidway(t, parts)
		})
	}
}

func syncKilledMidway(t *testing.T, parts bool) {
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 2)
	if parts {
		for i := range envs {
			envs[i] = append(envs[i], "SPOOL_TEST_PART_SIZE=512")
		}
	}
	a, b := clones[0], clones[1]
	var added []string
	for round := range 12 {
		delay := 40 * time.Millisecond
		if parts {
			delay = time.Duration(10+round*5) * time.Millisecond
		}
		title := fmt.Sprintf("round %02d", round)
		jobSpool(t, bin, a, envs[0], "task", "add", title) // acknowledged
		added = append(added, title)
		if round%3 == 0 {
			jobSpool(t, bin, b, envs[1], "task", "add", "from b "+title)
			jobSpool(t, bin, b, envs[1], "sync")
		}
		killMidway(t, bin, a, envs[0], delay, killGroupButRemote, "sync")
		jobSpool(t, bin, a, envs[0], "verify")
		if got := taskTitles(t, bin, a, envs[0]); !containsAll(got, added) {
			t.Fatalf("round %d: the local log lost an acknowledged task: have %q", round, got)
		}
	}
	outA := jobSpool(t, bin, a, envs[0], "sync")
	outB := jobSpool(t, bin, b, envs[1], "sync")
	if got := taskTitles(t, bin, b, envs[1]); !containsAll(got, added) {
		// Not on the remote, or not taken from it, or only not listed?
		// (seen once, under the whole suite's load, 2026-11-27)
		remote, _ := exec.Command("git", "--git-dir", r.Remote, "grep", "-c", "round", "spool-log", "--", "events").CombinedOutput()
		created := jobSpool(t, bin, b, envs[1], "--json", "log", "-t", "task.created")
		jobSpool(t, bin, b, envs[1], "replay")
		t.Fatalf("after the kills, the other clone lacks tasks: %q\nits log holds %d task.created, %d after a replay listed; a's sync: %q, b's: %q\nthe remote's lines naming a round, by file:\n%s",
			got, strings.Count(created, "\n"), len(taskTitles(t, bin, b, envs[1])), outA, outB, remote)
	}
	jobSpool(t, bin, b, envs[1], "verify")
	if parts {
		writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "writer")))))
		r.Git(b, "fetch", "-q", "origin", "spool-log:refs/remotes/origin/spool-log")
		if entry := r.Git(b, "ls-tree", "origin/spool-log", "events/"+writer+".jsonl"); !strings.HasPrefix(entry, "040000 tree ") {
			t.Fatalf("the killed clone's file on the branch: %q", entry)
		}
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// An unreachable remote is exit 4 remote_unreachable, and the local log is
// as it was.
func TestSyncUnreachableRemote(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 1)
	jobSpool(t, bin, clones[0], envs[0], "task", "add", "kept")
	r.Git(clones[0], "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	before := jobSpool(t, bin, clones[0], envs[0], "log", "--json")
	out, err := jobSpoolErr(bin, clones[0], envs[0], "--json", "sync")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(out, "remote_unreachable") {
		t.Fatalf("sync to a missing remote: %v\n%s", err, out)
	}
	if after := jobSpool(t, bin, clones[0], envs[0], "log", "--json"); after != before {
		t.Fatal("a failed sync changed the log")
	}
}

// spool status in a clone that fetched the remote's branch with git but
// never ran spool sync compares the log with that branch from the lines
// its receive counted (received.json), not by reading the blobs again: a
// second at a million events, at every status. Changing the recorded
// count changes what status says.
func TestStatusCountsTheRemoteFromTheReceive(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 2)
	for _, title := range []string{"one", "two", "three"} {
		jobSpool(t, bin, clones[0], envs[0], "task", "add", title)
	}
	jobSpool(t, bin, clones[0], envs[0], "sync")
	r.Git(clones[1], "fetch", "-q", "origin")
	if out := jobSpool(t, bin, clones[1], envs[1], "status"); !strings.Contains(out, "up to date with origin/spool-log") {
		t.Fatalf("the first status:\n%s", out)
	}
	// The remote's copy of that writer file grows: the next command streams
	// it onto the local file and counts it again.
	jobSpool(t, bin, clones[0], envs[0], "task", "add", "four")
	jobSpool(t, bin, clones[0], envs[0], "sync")
	r.Git(clones[1], "fetch", "-q", "origin")
	if out := jobSpool(t, bin, clones[1], envs[1], "status"); !strings.Contains(out, "up to date with origin/spool-log") {
		t.Fatalf("the status after the fetch:\n%s", out)
	}
	if got := taskTitles(t, bin, clones[1], envs[1]); !slices.Equal(got, []string{"four", "one", "three", "two"}) {
		t.Fatalf("after the fetch: %q", got)
	}
	path := filepath.Join(clones[1], ".git", "spool", "received.json")
	var rc map[string]any
	if err := json.Unmarshal(must(os.ReadFile(path)), &rc); err != nil {
		t.Fatal(err)
	}
	files, _ := rc["files"].(map[string]any)
	if len(files) != 1 {
		t.Fatalf("received.json: %v", rc)
	}
	for _, f := range files {
		f.(map[string]any)["lines"] = f.(map[string]any)["lines"].(float64) + 3
	}
	if err := os.WriteFile(path, must(json.Marshal(rc)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := jobSpool(t, bin, clones[1], envs[1], "status"); !strings.Contains(out, "ahead of origin/spool-log by 0, behind by 3") {
		t.Fatalf("status with 3 more lines recorded for the remote's blob:\n%s", out)
	}
}
