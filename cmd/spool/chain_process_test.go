package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git/gittest"
	"golang.org/x/crypto/ssh"
)

// Issue 26: a writer file on the sync branch only grows. A hostile clone
// that deletes another writer's line, renumbers seq and recomputes the ids
// (and prev) after it, and pushes that, takes nothing from anyone: the
// clones that hold the original keep it and quarantine the rewrite, a fresh
// clone of the rewritten branch fails verify naming the writer, and the
// victim's next sync puts the history back (the writer alone restores its
// file). A push that removed the writer's file is undone by anyone's sync.

// rewriteWithout is a writer file without its events of type typ, seq
// renumbered and each later line's prev and id made to match again (its
// signature kept): what a careful forger pushes.
func rewriteWithout(t *testing.T, content []byte, typ string) []byte {
	t.Helper()
	var out []byte
	var seq uint64
	prev := ""
	dropped := 0
	for _, line := range bytes.SplitAfter(content, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		e, err := eventlog.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == typ {
			dropped++
			continue
		}
		seq++
		if e.Seq != seq || e.Prev != prev {
			e.Seq, e.Prev = seq, prev
			if e.ID, err = e.ContentID(); err != nil {
				t.Fatal(err)
			}
			if line, err = e.Encode(); err != nil {
				t.Fatal(err)
			}
		}
		prev = e.ID
		out = append(out, line...)
	}
	if dropped == 0 {
		t.Fatalf("no %s event to drop", typ)
	}
	return out
}

// sshKeyFile writes an ed25519 private key to path and returns the public
// key's line.
func sshKeyFile(t *testing.T, path string) string {
	t.Helper()
	_, raw, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(raw, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
}

// signClones has every clone sign with a key of its own, listed for its
// actor in the committed .spool/allowed_signers.
func signClones(t *testing.T, r *gittest.Repo, bin string, clones []string, envs [][]string) {
	t.Helper()
	keys := t.TempDir()
	var allowed strings.Builder
	for i, dir := range clones {
		key := filepath.Join(keys, fmt.Sprintf("agent%d", i))
		fmt.Fprintf(&allowed, "agent%d@example.com %s\n", i, sshKeyFile(t, key))
		r.Git(dir, "config", "spool.signingkey", key)
	}
	r.Write(r.Root, ".spool/allowed_signers", allowed.String())
	jobSpool(t, bin, r.Root, envs[0], "config", "set", "admins", `["agent0@example.com"]`)
	r.Git(r.Root, "add", ".spool")
	r.Git(r.Root, "commit", "-q", "-m", "spool: allowed signers")
	r.Git(r.Root, "push", "-q", "origin", "main")
	for _, dir := range clones[1:] {
		r.Git(dir, "pull", "-q", "--ff-only", "origin", "main")
	}
}

// freshClone clones the remote as a new machine would and returns its path.
func freshClone(t *testing.T, r *gittest.Repo, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	r.Git(filepath.Dir(dir), "clone", "-q", r.Remote, dir)
	return dir
}

func TestSyncKeepsWhatAWriterFileHad(t *testing.T) {
	t.Parallel()
	for _, signed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unsigned", true: "signed"}[signed], func(t *testing.T) {
			testRewrittenHistory(t, signed)
		})
	}
}

func testRewrittenHistory(t *testing.T, signed bool) {
	bin := spoolBinary(t)
	r, clones, envs := syncClones(t, bin, 3)
	if signed {
		signClones(t, r, bin, clones, envs)
	}
	ada, bob, carol := clones[0], clones[1], clones[2]
	jobSpool(t, bin, ada, envs[0], "task", "add", "first")
	jobSpool(t, bin, ada, envs[0], "next") // task.claimed, pushed through the remote
	jobSpool(t, bin, ada, envs[0], "task", "add", "second")
	jobSpool(t, bin, ada, envs[0], "sync")
	jobSpool(t, bin, carol, envs[2], "sync")
	writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(ada, ".git", "spool", "writer")))))
	name := writer + eventlog.Ext
	adaFile := func(dir string) []byte { return must(os.ReadFile(filepath.Join(dir, ".git", "spool", "events", name))) }
	original := adaFile(ada)
	if !bytes.Equal(adaFile(carol), original) {
		t.Fatal("carol does not have ada's file")
	}
	verifyArgs := []string{"verify"}
	if signed {
		verifyArgs = []string{"verify", "--signatures"}
		jobSpool(t, bin, carol, envs[2], verifyArgs...)
	}

	// Bob, from a plain git clone of the branch, deletes ada's claim, renumbers,
	// rechains and pushes: a fast-forward, as any writer may push.
	hostile := freshClone(t, r, "hostile")
	r.Git(hostile, "checkout", "-q", "spool-log")
	forged := rewriteWithout(t, original, "task.claimed")
	r.Write(hostile, "events/"+name, string(forged))
	r.Git(hostile, "commit", "-q", "-am", "spool sync: 0 events")
	r.Git(hostile, "push", "-q", "origin", "spool-log")

	// A fresh clone takes the rewritten file (it has nothing else), and
	// verify fails, naming ada's file and the commit that had the claim.
	fresh := freshClone(t, r, "fresh")
	out, err := jobSpoolErr(bin, fresh, envs[1], verifyArgs...)
	if err == nil || !strings.Contains(out, name) || !strings.Contains(out, "the log lost or changed a line that was shared") {
		t.Fatalf("verify of a fresh clone of the rewritten branch: %v\n%s", err, out)
	}

	// Carol fetches: her copy of ada's file stays, the rewrite is kept aside,
	// and her verify says the remote's copy lost a line.
	r.Git(carol, "fetch", "-q", "origin")
	jobSpool(t, bin, carol, envs[2], "task", "list")
	if !bytes.Equal(adaFile(carol), original) {
		t.Fatal("carol's copy of ada's file changed")
	}
	mustQuarantine(t, carol, writer, forged)
	out, err = jobSpoolErr(bin, carol, envs[2], verifyArgs...)
	if err == nil || !strings.Contains(out, name) || !strings.Contains(out, "origin/spool-log") || !strings.Contains(out, "holds a copy that lost or changed line 2") {
		t.Fatalf("carol's verify: %v\n%s", err, out)
	}

	// Carol's sync does not push her copy back: ada's file is ada's to
	// restore (a clone that took the rewrite first would push that back).
	jobSpool(t, bin, carol, envs[2], "sync")
	if got := r.Git(r.Remote, "show", "spool-log:events/"+name); got+"\n" != string(forged) {
		t.Fatalf("after carol's sync the branch holds\n%s", got)
	}

	// doctor --repair on ada's clone does not take the rewrite for a copy of
	// the clone on another machine: her claim was on the branch before.
	r.Git(ada, "fetch", "-q", "origin")
	out = jobSpool(t, bin, ada, envs[0], "doctor", "--repair")
	if !strings.Contains(out, "not repaired: ") || !strings.Contains(out, "so the copy that differs rewrote it") {
		t.Fatalf("doctor --repair on the victim's clone:\n%s", out)
	}
	if now := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(ada, ".git", "spool", "writer"))))); now != writer {
		t.Fatal("ada's clone changed its writer id")
	}

	// Ada syncs: she keeps her file, and the sync puts it back on the branch.
	jobSpool(t, bin, ada, envs[0], "sync")
	if !bytes.Equal(adaFile(ada), original) {
		t.Fatal("ada's own file changed")
	}
	mustQuarantine(t, ada, writer, forged)
	if got := r.Git(r.Remote, "show", "spool-log:events/"+name); got+"\n" != string(original) {
		t.Fatalf("the branch holds\n%s\nwant\n%s", got, original)
	}
	// Everyone verifies again, a new clone too: the rewrite in the history
	// was undone, and the file it rewrote is held to the log.
	jobSpool(t, bin, carol, envs[2], "sync")
	jobSpool(t, bin, bob, envs[1], "sync")
	for i, dir := range []string{ada, bob, carol, freshClone(t, r, "later")} {
		jobSpool(t, bin, dir, envs[min(i, 2)], verifyArgs...)
		if !bytes.Equal(adaFile(dir), original) {
			t.Fatalf("clone %d: ada's file is not the original", i)
		}
	}

	// The clone that took the rewrite first keeps it, and its sync leaves
	// the branch alone (no turns); verify there fails, and doctor --repair
	// takes the branch's copy, which holds every line the history had.
	jobSpool(t, bin, fresh, envs[1], "sync")
	if got := r.Git(r.Remote, "show", "spool-log:events/"+name); got+"\n" != string(original) {
		t.Fatal("the clone that took the rewrite pushed it back")
	}
	if out, err := jobSpoolErr(bin, fresh, envs[1], verifyArgs...); err == nil || !strings.Contains(out, name) {
		t.Fatalf("verify on the clone that took the rewrite: %v\n%s", err, out)
	}
	out = jobSpool(t, bin, fresh, envs[1], "doctor", "--repair")
	if !strings.Contains(out, "this clone had taken this writer's file rewritten") {
		t.Fatalf("doctor --repair on the clone that took the rewrite:\n%s", out)
	}
	jobSpool(t, bin, fresh, envs[1], verifyArgs...)
	if !bytes.Equal(adaFile(fresh), original) {
		t.Fatal("the clone that took the rewrite does not have the original now")
	}

	// Bob removes ada's file from the branch: nobody loses it, a clone that
	// takes the branch then fails verify, and the next sync (carol's) puts
	// the file back.
	r.Git(hostile, "pull", "-q", "--ff-only", "origin", "spool-log")
	r.Git(hostile, "rm", "-q", "events/"+name)
	r.Git(hostile, "commit", "-q", "-m", "spool sync: 0 events")
	r.Git(hostile, "push", "-q", "origin", "spool-log")
	gone := freshClone(t, r, "gone")
	out, err = jobSpoolErr(bin, gone, envs[1], verifyArgs...)
	if err == nil || !strings.Contains(out, name) || !strings.Contains(out, "has no file for this writer") {
		t.Fatalf("verify after the file was removed: %v\n%s", err, out)
	}
	r.Git(ada, "fetch", "-q", "origin")
	jobSpool(t, bin, ada, envs[0], "task", "add", "third")
	after := adaFile(ada)
	if !bytes.HasPrefix(after, original) {
		t.Fatal("ada's file lost what it had")
	}
	last, err := eventlog.Decode(after[len(original):])
	if err != nil || last.Seq != uint64(bytes.Count(original, []byte{'\n'})+1) {
		t.Fatalf("ada's next event: %+v %v", last, err)
	}
	jobSpool(t, bin, carol, envs[2], "sync")
	if got := r.Git(r.Remote, "show", "spool-log:events/"+name); got+"\n" != string(original) {
		t.Fatalf("after carol's sync the branch holds\n%s", got)
	}
	jobSpool(t, bin, ada, envs[0], "sync")
	jobSpool(t, bin, carol, envs[2], "sync")
	for i, dir := range []string{ada, carol, freshClone(t, r, "last")} {
		jobSpool(t, bin, dir, envs[min(i*2, 2)], verifyArgs...)
		if !bytes.Equal(adaFile(dir), after) {
			t.Fatalf("clone %d: ada's file is not hers", i)
		}
	}
}

// mustQuarantine checks that the clone at dir kept content aside as a copy
// of writer's file.
func mustQuarantine(t *testing.T, dir, writer string, content []byte) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, ".git", "spool", "quarantine", writer+".*"+eventlog.Ext))
	for _, p := range paths {
		if bytes.Equal(must(os.ReadFile(p)), content) {
			return
		}
	}
	t.Fatalf("%s: no quarantined copy of %s's file among %v", dir, writer, paths)
}
