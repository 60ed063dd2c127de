package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A writer file larger than the part size is a tree of parts on the sync
// branch (parts of 2 KiB here, 4 MiB in use): three clones that add, sync
// and claim through the remote all at once end with every task, the same
// projections and logs verify accepts; a sync sends the last part alone;
// a fresh clone takes the parts; and a tree of parts spool never wrote,
// pushed over a writer's file, is quarantined without stopping anyone,
// and its writer's next sync puts the file back.
func TestSyncInParts(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 3)
	for i := range envs {
		envs[i] = append(envs[i], "SPOOL_TEST_PART_SIZE=2048")
	}
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "config", "set", "sync.claims", "remote")
	}
	addAndSync(t, bin, clones, envs, 20, 4, "clone %d task %02d")
	syncAll(t, bin, clones, envs)
	want := taskTitles(t, bin, clones[0], envs[0])
	if len(want) != 60 {
		t.Fatalf("clone 0 has %d tasks, want 60", len(want))
	}
	for i, dir := range clones {
		if got := taskTitles(t, bin, dir, envs[i]); !slices.Equal(got, want) {
			t.Errorf("clone %d has %d tasks, clone 0 %d", i, len(got), len(want))
		}
	}

	// Every writer file is a tree of parts, each but the last ending a line.
	writer := func(i int) string {
		return strings.TrimSpace(string(must(os.ReadFile(filepath.Join(clones[i], ".git", "spool", "writer")))))
	}
	tree := func(file string) []string {
		return strings.Fields(r.Git(clones[0], "ls-tree", "origin/spool-log", "events/"+file+"/"))
	}
	r.Git(clones[0], "fetch", "-q", "origin", "spool-log:refs/remotes/origin/spool-log")
	for i := range clones {
		entry := r.Git(clones[0], "ls-tree", "origin/spool-log", "events/"+writer(i)+".jsonl")
		if !strings.HasPrefix(entry, "040000 tree ") {
			t.Fatalf("clone %d's file on the branch: %q", i, entry)
		}
	}
	before := tree(writer(0) + ".jsonl")
	if len(before) < 3*4 {
		t.Fatalf("clone 0's file in %d parts: %q", len(before)/4, before)
	}

	// Clone 0 claims through the remote, and syncs a task more: the
	// branch's new versions of its file keep all their parts but the last.
	claimed := jobSpool(t, bin, clones[0], envs[0], "--json", "next")
	jobSpool(t, bin, clones[0], envs[0], "task", "add", "one more")
	jobSpool(t, bin, clones[0], envs[0], "sync")
	r.Git(clones[0], "fetch", "-q", "origin", "spool-log:refs/remotes/origin/spool-log")
	after := tree(writer(0) + ".jsonl")
	changed := 0
	for i := 0; i < len(before); i += 4 {
		if i >= len(after) || after[i+2] != before[i+2] {
			changed++
		}
	}
	if changed != 1 || len(after) > len(before)+4 {
		t.Errorf("a claim and a sync changed %d of %d parts, and the file has %d now", changed, len(before)/4, len(after)/4)
	}
	syncAll(t, bin, clones, envs)
	out := jobSpool(t, bin, clones[1], envs[1], "--json", "task", "show", idOf(t, claimed))
	if !strings.Contains(out, `"status": "in_progress"`) {
		t.Errorf("clone 1 does not see clone 0's claim:\n%s", out)
	}
	sameProjections(t, bin, clones, envs)
	// status counts the remote's files in parts; after a fetch, the events
	// the remote has beyond the log, until a command brings them in.
	jobSpool(t, bin, clones[0], envs[0], "task", "add", "behind")
	jobSpool(t, bin, clones[0], envs[0], "sync")
	if out := jobSpool(t, bin, clones[1], envs[1], "status"); !strings.Contains(out, "up to date with origin/spool-log") {
		t.Errorf("status before the fetch:\n%s", out)
	}
	r.Git(clones[1], "fetch", "-q", "origin")
	if out := jobSpool(t, bin, clones[1], envs[1], "status"); !strings.Contains(out, "up to date with origin/spool-log") {
		t.Errorf("status after the fetch, which the command brought in:\n%s", out)
	}
	syncAll(t, bin, clones, envs)

	// A fresh clone takes the parts.
	fresh := freshClone(t, r, "fresh")
	if got := allTasks(t, bin, fresh, envs[1]); got != 62 {
		t.Errorf("a fresh clone has %d tasks, want 62", got)
	}
	jobSpool(t, bin, fresh, envs[1], "verify")

	// A hostile push puts a tree of parts spool never wrote over clone 2's
	// file: part 000000 left out.
	victim := writer(2) + ".jsonl"
	hostile := freshClone(t, r, "hostile")
	r.Git(hostile, "checkout", "-q", "spool-log")
	r.Git(hostile, "rm", "-q", "events/"+victim+"/000000")
	r.Git(hostile, "commit", "-q", "-m", "spool sync: 0 events")
	r.Git(hostile, "push", "-q", "origin", "spool-log")
	jobSpool(t, bin, clones[0], envs[0], "sync") // not stopped
	mustQuarantineUnreadable(t, clones[0], writer(2))
	if got := allTasks(t, bin, clones[0], envs[0]); got != 62 {
		t.Errorf("clone 0 has %d tasks after the hostile push, want 62", got)
	}
	// A clone that takes it through a plain git fetch is not stopped either,
	// and a fresh clone of it lacks clone 2's events, which verify says.
	r.Git(clones[1], "fetch", "-q", "origin")
	if got := allTasks(t, bin, clones[1], envs[1]); got != 62 {
		t.Errorf("clone 1 has %d tasks after fetching the hostile push, want 62", got)
	}
	mustQuarantineUnreadable(t, clones[1], writer(2))
	taken := freshClone(t, r, "taken")
	if got := allTasks(t, bin, taken, envs[1]); got != 62-20 {
		t.Errorf("a fresh clone of the hostile push has %d tasks, want %d", got, 62-20)
	}
	if out, err := jobSpoolErr(bin, taken, envs[1], "verify"); err == nil || !strings.Contains(out, victim) {
		t.Errorf("verify of a fresh clone of the hostile push: %v\n%s", err, out)
	}

	jobSpool(t, bin, clones[2], envs[2], "task", "add", "after the push")
	jobSpool(t, bin, clones[2], envs[2], "sync")
	r.Git(clones[0], "fetch", "-q", "origin", "spool-log:refs/remotes/origin/spool-log")
	if parts := tree(victim); len(parts) == 0 || parts[3] != "events/"+victim+"/000000" {
		t.Fatalf("clone 2's sync did not put its file back: %q", parts)
	}
	syncAll(t, bin, clones, envs)
	for i, dir := range clones {
		if got := allTasks(t, bin, dir, envs[i]); got != 63 {
			t.Errorf("clone %d has %d tasks, want 63", i, got)
		}
	}
	again := freshClone(t, r, "again")
	if got := allTasks(t, bin, again, envs[1]); got != 63 {
		t.Errorf("a fresh clone after the repair has %d tasks, want 63", got)
	}
}

// mustQuarantineUnreadable checks that dir kept aside a copy of writer's
// file that was not a file at all.
func mustQuarantineUnreadable(t *testing.T, dir, writer string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, ".git", "spool", "quarantine", writer+".*.jsonl"))
	for _, p := range paths {
		if strings.Contains(string(must(os.ReadFile(p))), "not a file as spool stores one") {
			return
		}
	}
	t.Fatalf("%s: no unreadable copy of %s's file kept aside among %v", dir, writer, paths)
}

// allTasks counts the tasks of every status.
func allTasks(t *testing.T, bin, dir string, env []string) int {
	t.Helper()
	var tasks []struct{ ID string }
	if err := json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "list")), &tasks); err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// idOf is the id in a task's JSON.
func idOf(t *testing.T, js string) string {
	t.Helper()
	var task struct{ ID string }
	if err := json.Unmarshal([]byte(js), &task); err != nil || task.ID == "" {
		t.Fatalf("no id in %s: %v", js, err)
	}
	return task.ID
}

// A line that breaks the rules, appended by hand to a writer's file on the
// branch (what anyone with push access can do), is quarantined where it
// arrives, and does not stop its writer: the writer's next sync puts its
// file back, its claims go through the remote, and every clone's verify
// passes once it has synced.
func TestABadLineDoesNotStopItsWriter(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 2)
	ada, bob := clones[0], clones[1]
	for _, title := range []string{"one", "two"} {
		jobSpool(t, bin, ada, envs[0], "task", "add", title)
	}
	jobSpool(t, bin, ada, envs[0], "sync")
	jobSpool(t, bin, bob, envs[1], "sync")
	writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(ada, ".git", "spool", "writer")))))
	name := "events/" + writer + ".jsonl"

	hostile := freshClone(t, r, "hostile")
	r.Git(hostile, "checkout", "-q", "spool-log")
	bad := fmt.Sprintf(`{"v":1,"id":"00","writer":%q,"seq":99,"lc":99,"at":"2026-11-27T22:00:00Z","actor":"eve@example.com","type":"task.closed","subject":"x","data":{}}`, writer)
	r.Write(hostile, name, r.Git(hostile, "show", "HEAD:"+name)+"\n"+bad+"\n")
	r.Git(hostile, "commit", "-q", "-am", "spool sync: 1 events")
	r.Git(hostile, "push", "-q", "origin", "spool-log")

	jobSpool(t, bin, bob, envs[1], "sync") // quarantined, not stopped
	jobSpool(t, bin, ada, envs[0], "task", "add", "three")
	jobSpool(t, bin, ada, envs[0], "sync")
	local := string(must(os.ReadFile(filepath.Join(ada, ".git", "spool", "events", writer+".jsonl"))))
	if got := r.Git(r.Remote, "show", "spool-log:"+name) + "\n"; got != local {
		t.Fatalf("ada's sync left the branch's copy of her file:\n%s", got)
	}
	if out := jobSpool(t, bin, ada, envs[0], "--json", "next"); !strings.Contains(out, `"id"`) {
		t.Fatalf("ada's claim: %s", out)
	}
	jobSpool(t, bin, bob, envs[1], "sync")
	if got := allTasks(t, bin, bob, envs[1]); got != 3 {
		t.Errorf("bob has %d tasks, want 3", got)
	}
	jobSpool(t, bin, bob, envs[1], "verify")
	jobSpool(t, bin, freshClone(t, r, "fresh"), envs[1], "verify")
}
