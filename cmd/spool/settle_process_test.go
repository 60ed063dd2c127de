package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git/gittest"
)

// A claim's lines reach the remote before the local file: spool killed in
// between leaves the remote with lines this clone lacks. The next write
// settles that before it appends (else this clone's file would fork, two
// lines after one): it brings the claim in from the remote, or, the remote
// unreachable, appends nothing. Here the kill is played: the claim's lines
// are cut from the local file after the claim, as if never written there.
func TestAWriteSettlesAClaimKilledAfterItsPush(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, a, envs, path := syncedClone(t, bin)
	file := filepath.Base(path)
	before := must(os.ReadFile(path))
	jobSpool(t, bin, a, envs[0], "next")
	claimed := must(os.ReadFile(path))
	if !bytes.HasPrefix(claimed, before) || len(claimed) == len(before) {
		t.Fatal("the claim did not grow the file")
	}
	if got := r.Git(r.Remote, "show", "spool-log:events/"+file); got+"\n" != string(claimed) {
		t.Fatal("the claim is not on the remote")
	}
	pending := fmt.Sprintf(`{"remote":"origin","branch":"spool-log","file":%q,"size":%d,"lines":%q}`, file, len(before), claimed[len(before):])
	kill := func() {
		os.WriteFile(path, before, 0o644)
		os.WriteFile(filepath.Join(a, ".git", "spool", "claim-pending.json"), []byte(pending), 0o644)
	}

	// The remote unreachable: the write is refused and nothing appended.
	kill()
	url := r.Git(a, "remote", "get-url", "origin")
	r.Git(a, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	out, err := jobSpoolErr(bin, a, envs[0], "--json", "task", "add", "second")
	if err == nil || !strings.Contains(out, `"code":"remote_unreachable"`) || !strings.Contains(out, "when spool stopped, and whether the remote took it is unknown") {
		t.Fatalf("a write with the claim unsettled and no remote: %v\n%s", err, out)
	}
	if got := must(os.ReadFile(path)); !bytes.Equal(got, before) {
		t.Fatal("appended with the claim unsettled")
	}

	// The remote back: the claim is brought in first, then the task.
	r.Git(a, "remote", "set-url", "origin", url)
	jobSpool(t, bin, a, envs[0], "task", "add", "second")
	after := must(os.ReadFile(path))
	if !bytes.HasPrefix(after, claimed) || bytes.Count(after, []byte{'\n'}) != bytes.Count(claimed, []byte{'\n'})+1 {
		t.Fatalf("the file after the write:\n%s", after)
	}
	jobSpool(t, bin, a, envs[0], "sync")
	jobSpool(t, bin, a, envs[0], "verify")
	if _, err := os.Stat(filepath.Join(a, ".git", "spool", "claim-pending.json")); err == nil {
		t.Fatal("the pending claim is still recorded")
	}
}

// A claim killed with its push sent but not (yet) taken: the next write
// does not take "the remote lacks the lines" for "it never will" while the
// branch is still at the tip the push was built on, where the push may
// yet land: it moves the branch first (a commit of this clone's files),
// after which the push is refused. A branch that moved on without the
// lines can no longer take the push, and is left as it is.
func TestAWriteFencesAClaimNotYetTaken(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	r, a, envs, path := syncedClone(t, bin)
	file := filepath.Base(path)
	before := must(os.ReadFile(path))
	lines := `{"never":"pushed"}` + "\n"
	remoteTip := func() string { return r.Git(a, "ls-remote", "origin", "refs/heads/spool-log") }
	pend := func(tip string) {
		os.WriteFile(filepath.Join(a, ".git", "spool", "claim-pending.json"), []byte(fmt.Sprintf(
			`{"remote":"origin","branch":"spool-log","file":%q,"size":%d,"lines":%q,"tip":%q}`, file, len(before), lines, tip)), 0o644)
	}

	// Built on a tip the branch has left: nothing to fence.
	old := remoteTip()
	pend(strings.Repeat("1", 40))
	jobSpool(t, bin, a, envs[0], "task", "add", "second")
	if remoteTip() != old {
		t.Fatal("the branch moved, though the claim's push could no longer land")
	}
	if _, err := os.Stat(filepath.Join(a, ".git", "spool", "claim-pending.json")); err == nil {
		t.Fatal("the pending claim is still recorded")
	}

	// Built on the branch's tip: fenced before the append.
	before = must(os.ReadFile(path))
	tip, _, _ := strings.Cut(remoteTip(), "\t")
	pend(tip)
	jobSpool(t, bin, a, envs[0], "task", "add", "third")
	now, _, _ := strings.Cut(remoteTip(), "\t")
	if now == tip || r.Git(a, "rev-parse", now+"^") != tip {
		t.Fatalf("the branch is at %s, want a commit on %s", now, tip)
	}
	if msg := r.Git(a, "log", "-1", "--format=%s", now); msg != "spool: settle an interrupted claim" {
		t.Errorf("the fence's message: %q", msg)
	}
	if got := r.Git(a, "show", now+":events/"+file); got+"\n" != string(before) {
		t.Errorf("the fence holds this clone's file as\n%s\nwant\n%s", got, before)
	}
	if got := must(os.ReadFile(path)); !bytes.HasPrefix(got, before) || bytes.Contains(got, []byte("never")) {
		t.Fatalf("the file after the write:\n%s", got)
	}
	jobSpool(t, bin, a, envs[0], "sync")
	jobSpool(t, bin, a, envs[0], "verify")
}

// syncedClone is one clone of a bare remote that claims through it, with a
// task added and synced; path is its own writer file.
func syncedClone(t *testing.T, bin string) (r *gittest.Repo, a string, envs [][]string, path string) {
	t.Helper()
	r, clones, envs := claimClones(t, bin, 1)
	a = clones[0]
	jobSpool(t, bin, a, envs[0], "task", "add", "first")
	jobSpool(t, bin, a, envs[0], "sync")
	writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "writer")))))
	return r, a, envs, filepath.Join(a, ".git", "spool", "events", writer+eventlog.Ext)
}
