package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

// A claim's lines reach the remote before the local file: spool killed in
// between leaves the remote with lines this clone lacks. The next write
// settles that before it appends (else this clone's file would fork, two
// lines after one): it brings the claim in from the remote, or, the remote
// unreachable, appends nothing. Here the kill is played: the claim's lines
// are cut from the local file after the claim, as if never written there.
func TestAWriteSettlesAClaimKilledAfterItsPush(t *testing.T) {
	bin := spoolBinary(t)
	r, clones, envs := claimClones(t, bin, 1)
	a := clones[0]
	jobSpool(t, bin, a, envs[0], "task", "add", "first")
	jobSpool(t, bin, a, envs[0], "sync")
	writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "writer")))))
	path := filepath.Join(a, ".git", "spool", "events", writer+eventlog.Ext)
	before := must(os.ReadFile(path))
	jobSpool(t, bin, a, envs[0], "next")
	claimed := must(os.ReadFile(path))
	if !bytes.HasPrefix(claimed, before) || len(claimed) == len(before) {
		t.Fatal("the claim did not grow the file")
	}
	if got := r.Git(a, "show", "origin/spool-log:events/"+writer+eventlog.Ext); got+"\n" != string(claimed) {
		t.Fatal("the claim is not on the remote")
	}
	pending := fmt.Sprintf(`{"remote":"origin","branch":"spool-log","file":%q,"size":%d,"lines":%q}`, writer+eventlog.Ext, len(before), claimed[len(before):])
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
