package store

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/sign"
	"github.com/spoolhq/spool/projections"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// sshKey writes a new ed25519 key to dir/name (OpenSSH, no passphrase) and
// dir/name.pub, and returns its private key and authorized_keys line.
func sshKey(t *testing.T, dir, name string) (ed25519.PrivateKey, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, name)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".pub"), []byte(pub+" "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// signedRepo is a repository whose allowed signers list ada (an admin)
// and bob, committed, with ada's key as this clone's signing key.
type signedRepo struct {
	dir, keys string
	ada, bob  ed25519.PrivateKey
}

func newSignedRepo(t *testing.T) *signedRepo {
	t.Helper()
	r := &signedRepo{dir: newRepo(t), keys: t.TempDir()}
	var adaPub, bobPub string
	r.ada, adaPub = sshKey(t, r.keys, "ada")
	r.bob, bobPub = sshKey(t, r.keys, "bob")
	writeFile(t, filepath.Join(r.dir, sign.AllowedSignersFile), "ada@example.com "+adaPub+"\nbob@example.com "+bobPub+"\n")
	writeFile(t, filepath.Join(r.dir, ".spool/config.json"), `{"admins":["ada@example.com"]}`+"\n")
	runGit(t, r.dir, "add", "-A")
	runGit(t, r.dir, "commit", "-q", "-m", "spool: init, allowed signers")
	runGit(t, r.dir, "config", "spool.signingkey", filepath.Join(r.keys, "ada"))
	return r
}

func writeAs(s *Store, actor string, drafts ...eventlog.Draft) ([]eventlog.Event, error) {
	evs, _, err := s.Write(context.Background(), t0, actor, nil, func(*projections.View) ([]eventlog.Draft, error) {
		return drafts, nil
	})
	return evs, err
}

func verifySignatures(t *testing.T, s *Store) *sign.Report {
	t.Helper()
	rep, err := s.Verify(context.Background())
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	sigs, err := s.VerifySignatures(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sigs
}

// problemCodes lists the problems as "line:code".
func problemCodes(rep *sign.Report) []string {
	var out []string
	for _, p := range rep.Problems {
		out = append(out, fmt.Sprintf("%d:%s", p.Line, p.Code))
	}
	return out
}

func TestSignedEvents(t *testing.T) {
	r := newSignedRepo(t)
	s, _ := open(t, r.dir)
	evs, err := writeAs(s, "ada@example.com",
		eventlog.Draft{Type: "deploy.started", Subject: "web"}, eventlog.Draft{Type: "deploy.finished", Subject: "web", Data: map[string]string{"v": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if !strings.HasPrefix(e.Sig, "U1NIU0lH") { // base64 of "SSHSIG"
			t.Fatalf("event not signed: %+v", e)
		}
	}
	rep := verifySignatures(t, s)
	if len(rep.Problems) != 0 || rep.Signed != 2 || rep.Events != 2 {
		t.Fatalf("signed appends: %+v", rep)
	}

	// An event for bob, signed with ada's key: the log takes it, verify does not.
	if _, err := writeAs(s, "bob@example.com", eventlog.Draft{Type: "deploy.started", Subject: "db"}); err != nil {
		t.Fatal(err)
	}
	rep = verifySignatures(t, s)
	if got := problemCodes(rep); len(got) != 1 || got[0] != "3:signer_not_allowed" {
		t.Fatalf("another actor: %v", rep.Problems)
	}
	if err := rep.Err(); fault.Classify(err).Code != "signatures_invalid" || fault.Classify(err).Kind != fault.Rejected {
		t.Fatalf("Err: %v", err)
	}
	path := ownFile(t, s)
	good, _ := os.ReadFile(path)

	// A forged event: its content changed and its id made to match again,
	// and the next event's prev and id too (the log's own checks pass),
	// their signatures kept: both signatures fail.
	line := strings.SplitAfter(string(good), "\n")[1]
	forged, err := eventlog.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	forged.Data = []byte(`{"v":"2"}`)
	if forged.ID, err = forged.ContentID(); err != nil {
		t.Fatal(err)
	}
	forgedLine, _ := forged.Encode()
	replaceLine(t, path, 2, string(forgedLine))
	replaceLine(t, path, 3, string(rechained(t, strings.SplitAfter(string(good), "\n")[2], forged.ID, 3)))
	if check, err := s.Log.Check(); err != nil || len(check.Problems) != 0 {
		t.Fatalf("the forged line breaks the log's rules: %v %v", err, check)
	}
	rep, err = s.VerifySignatures(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := problemCodes(rep); len(got) != 2 || got[0] != "2:bad_signature" || got[1] != "3:bad_signature" ||
		!strings.Contains(rep.Problems[0].Message, "does not match the content") || rep.Problems[0].ID != forged.ID {
		t.Fatalf("forged: %+v", rep.Problems)
	}
	os.WriteFile(path, good, 0o644)
	// A signature moved from another event.
	other := strings.SplitAfter(string(good), "\n")[0]
	first, _ := eventlog.Decode([]byte(other))
	moved, _ := eventlog.Decode([]byte(line))
	moved.Sig = first.Sig
	movedLine, _ := moved.Encode()
	replaceLine(t, path, 2, string(movedLine))
	rep, _ = s.VerifySignatures(context.Background(), nil)
	if len(rep.Problems) < 1 || rep.Problems[0].Code != "bad_signature" {
		t.Fatalf("moved signature: %+v", rep.Problems)
	}
	// An unsigned event.
	moved.Sig = ""
	unsignedLine, _ := moved.Encode()
	replaceLine(t, path, 2, string(unsignedLine))
	rep, _ = s.VerifySignatures(context.Background(), nil)
	if got := problemCodes(rep); len(got) != 2 || got[0] != "2:unsigned_event" {
		t.Fatalf("unsigned: %v", rep.Problems)
	}
	// Signing keeps ids: the unsigned line has the signed one's id.
	if moved.ID != evs[1].ID {
		t.Fatalf("id changed: %s, %s", moved.ID, evs[1].ID)
	}
}

// rechained is line after an edit of the line before: prev and seq set, the
// id made to match again, the signature kept.
func rechained(t *testing.T, line, prev string, seq uint64) []byte {
	t.Helper()
	e, err := eventlog.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	e.Prev, e.Seq = prev, seq
	if e.ID, err = e.ContentID(); err != nil {
		t.Fatal(err)
	}
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSignaturesCoverTheChain is issue 26: Bob deletes Ada's signed
// task.claimed from her file and renumbers seq. The chain breaks (the next
// line names the deleted one as prev); made whole again (prev and ids
// recomputed), the signatures break, since they cover prev.
func TestSignaturesCoverTheChain(t *testing.T) {
	r := newSignedRepo(t)
	s, _ := open(t, r.dir)
	var evs []eventlog.Event
	for _, typ := range []string{"task.created", "task.claimed", "task.failed"} {
		e, err := writeAs(s, "ada@example.com", eventlog.Draft{Type: typ, Subject: "sp-1"})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e...)
	}
	if rep := verifySignatures(t, s); len(rep.Problems) != 0 || rep.Signed != 3 {
		t.Fatalf("signed appends: %+v", rep)
	}
	path := ownFile(t, s)
	good, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(good), "\n")

	// Deleted, seq renumbered: the log's rules refuse it.
	renumbered := strings.Replace(lines[2], `"seq":3`, `"seq":2`, 1)
	os.WriteFile(path, []byte(lines[0]+renumbered), 0o644)
	check, err := s.Log.Check()
	if err != nil || len(check.Problems) != 1 || check.Problems[0].Line != 2 ||
		!strings.Contains(check.Problems[0].Message, "prev "+evs[1].ID+" is not the id of line 1") {
		t.Fatalf("Check: %v %+v", err, check)
	}
	vrep, err := s.Verify(context.Background())
	if err != nil || vrep.OK || len(vrep.Problems) == 0 || vrep.Problems[0].Line != 2 {
		t.Fatalf("verify: %v %+v", err, vrep)
	}

	// Deleted, renumbered, prev and id recomputed: the rules pass, the
	// signature of the line that followed the deleted one does not.
	os.WriteFile(path, append([]byte(lines[0]), rechained(t, lines[2], evs[0].ID, 2)...), 0o644)
	if check, err := s.Log.Check(); err != nil || len(check.Problems) != 0 {
		t.Fatalf("the rewritten file breaks the rules: %v %+v", err, check)
	}
	rep, err := s.VerifySignatures(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := problemCodes(rep); len(got) != 1 || got[0] != "2:bad_signature" || rep.Problems[0].Actor != "ada@example.com" {
		t.Fatalf("rewritten: %+v", rep.Problems)
	}
}

// With sign.required an append verify would refuse is refused, and
// nothing is appended.
func TestSignRequiredRefusesAppends(t *testing.T) {
	r := newSignedRepo(t)
	writeFile(t, filepath.Join(r.dir, ".spool/config.json"), `{"admins":["ada@example.com"],"sign.required":true}`+"\n")
	s, _ := open(t, r.dir)
	if _, err := writeAs(s, "ada@example.com", eventlog.Draft{Type: "deploy.started"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		setup func()
		actor string
		code  string
		msg   string
	}{
		{"another actor", func() {}, "bob@example.com", "signer_not_allowed", "may not sign as bob@example.com"},
		{"no key", func() { runGit(t, r.dir, "config", "--unset", "spool.signingkey") }, "ada@example.com", "no_signing_key", "sign.required is true and no signing key is set"},
		{"missing key file", func() { runGit(t, r.dir, "config", "spool.signingkey", filepath.Join(r.keys, "nope")) }, "ada@example.com",
			"signing_key_unusable", "no such file or directory (set by git config spool.signingkey)"},
		{"unreadable allowed_signers", func() {
			runGit(t, r.dir, "config", "spool.signingkey", filepath.Join(r.keys, "ada"))
			f, _ := os.OpenFile(filepath.Join(r.dir, sign.AllowedSignersFile), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("carol@example.com ssh-ed25519 AAAA\n")
			f.Close()
		}, "ada@example.com", "allowed_signers_invalid", ".spool/allowed_signers:3:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.setup()
			s, _ := open(t, r.dir) // the key is found once per store
			before := snapshotEvents(t, s)
			_, err := writeAs(s, c.actor, eventlog.Draft{Type: "deploy.finished"})
			f := fault.Classify(err)
			if f.Code != c.code || !strings.Contains(f.Message, c.msg) {
				t.Fatalf("got %s %q, want %s %q", f.Code, f.Message, c.code, c.msg)
			}
			mustBeUnchanged(t, s, before)
		})
	}
}

// A public key as the setting signs through ssh-agent: here an agent
// served in process on a socket in the test's directory.
func TestSignThroughAgent(t *testing.T) {
	r := newSignedRepo(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: r.ada}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); agent.ServeAgent(keyring, c) }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
	runGit(t, r.dir, "config", "spool.signingkey", filepath.Join(r.keys, "ada.pub"))
	s, _ := open(t, r.dir)
	if _, err := writeAs(s, "ada@example.com", eventlog.Draft{Type: "deploy.started"}); err != nil {
		t.Fatal(err)
	}
	if rep := verifySignatures(t, s); len(rep.Problems) != 0 || rep.Signed != 1 {
		t.Fatalf("%+v", rep)
	}
	// bob's key is not in the agent.
	runGit(t, r.dir, "config", "spool.signingkey", filepath.Join(r.keys, "bob.pub"))
	s, _ = open(t, r.dir)
	_, err = writeAs(s, "bob@example.com", eventlog.Draft{Type: "deploy.started"})
	if f := fault.Classify(err); f.Code != "signing_key_unusable" || !strings.Contains(f.Message, "ssh-agent does not hold it") {
		t.Fatalf("got %v", err)
	}
}

// An admins change committed without a signature is refused; the same
// change signed by an admin passes.
func TestUnsignedAdminsChange(t *testing.T) {
	r := newSignedRepo(t)
	s, _ := open(t, r.dir)
	if _, err := writeAs(s, "ada@example.com", eventlog.Draft{Type: "deploy.started"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(r.dir, ".spool/config.json"), `{"admins":["ada@example.com","bob@example.com"]}`+"\n")
	runGit(t, r.dir, "commit", "-q", "-am", "bob is an admin")
	head := strings.TrimSpace(runGit(t, r.dir, "rev-parse", "HEAD"))
	rep := verifySignatures(t, s)
	if len(rep.Problems) != 1 || rep.Problems[0].Commit != head || rep.Problems[0].Code != "unsigned_trust_change" {
		t.Fatalf("%+v", rep.Problems)
	}
	// Signed by ada (an admin) instead, as git commit -S would with gpg.format ssh.
	runGit(t, r.dir, "reset", "-q", "--soft", "HEAD~1")
	signCommit(t, r.dir, r.ada, "bob is an admin")
	if rep := verifySignatures(t, s); len(rep.Problems) != 0 || rep.Commits != 1 || rep.Signed != 1 {
		t.Fatalf("%+v", rep)
	}
}

// signCommit commits the index signed by key, as git commit -S does with
// gpg.format ssh, without needing ssh-keygen.
func signCommit(t *testing.T, dir string, key ed25519.PrivateKey, msg string) {
	t.Helper()
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	tree := strings.TrimSpace(runGit(t, dir, "write-tree"))
	parent := strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
	hdr := "tree " + tree + "\nparent " + parent + "\nauthor Ada <ada@example.com> 1780000000 +0000\ncommitter Ada <ada@example.com> 1780000000 +0000\n"
	body := "\n" + msg + "\n"
	blob, err := sign.Sign(signer, sign.NamespaceGit, []byte(hdr+body))
	if err != nil {
		t.Fatal(err)
	}
	armored := strings.TrimSuffix(sign.Armor(blob), "\n")
	raw := hdr + "gpgsig " + strings.ReplaceAll(armored, "\n", "\n ") + "\n" + body
	out, err := git.RunInput(context.Background(), dir, []byte(raw), "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "update-ref", "HEAD", strings.TrimSpace(out))
}
