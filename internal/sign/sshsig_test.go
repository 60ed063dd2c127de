package sign

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestSignVerify(t *testing.T) {
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(kind, func(t *testing.T) {
			k := newKey(t, kind)
			msg := []byte("4f1c…content hash")
			blob, err := Sign(k.signer, NamespaceEvents, msg)
			if err != nil {
				t.Fatal(err)
			}
			key, err := Verify(blob, NamespaceEvents, msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(key.Marshal(), k.signer.PublicKey().Marshal()) {
				t.Fatal("Verify returned another key")
			}
			flipped := append([]byte(nil), blob...)
			flipped[len(flipped)-3] ^= 1
			for name, c := range map[string]struct {
				blob      []byte
				namespace string
				msg       []byte
				want      string
			}{
				"other message":   {blob, NamespaceEvents, []byte("another hash"), "does not match the content"},
				"other namespace": {blob, NamespaceGit, msg, `made for namespace "spool", not "git"`},
				"flipped bit":     {flipped, NamespaceEvents, msg, ""},
				"truncated":       {blob[:len(blob)-5], NamespaceEvents, msg, "not an SSH signature"},
				"no preamble":     {blob[6:], NamespaceEvents, msg, "no SSHSIG preamble"},
				"empty":           {nil, NamespaceEvents, msg, "no SSHSIG preamble"},
			} {
				_, err := Verify(c.blob, c.namespace, c.msg)
				if !errors.Is(err, ErrBadSignature) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: got %v, want a bad signature saying %q", name, err, c.want)
				}
			}
		})
	}
}

// An RSA signature made with SHA-1 (the ssh-rsa algorithm) is refused, as
// ssh-keygen refuses it.
func TestVerifyRefusesSHA1RSA(t *testing.T) {
	k := newKey(t, "rsa")
	msg := []byte("m")
	digest, _ := messageHash("sha512", msg)
	sig, err := k.signer.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, toSign(NamespaceEvents, "sha512", digest), ssh.KeyAlgoRSA)
	if err != nil {
		t.Fatal(err)
	}
	blob := append([]byte(magic), ssh.Marshal(sigBlob{Version: 1, PublicKey: k.signer.PublicKey().Marshal(),
		Namespace: NamespaceEvents, HashAlg: "sha512", Signature: ssh.Marshal(sig)})...)
	if _, err := Verify(blob, NamespaceEvents, msg); err == nil || !strings.Contains(err.Error(), "SHA-1") {
		t.Fatalf("got %v, want SHA-1 refused", err)
	}
}

func TestArmor(t *testing.T) {
	k := newKey(t, "ed25519")
	blob, err := Sign(k.signer, NamespaceGit, []byte("commit"))
	if err != nil {
		t.Fatal(err)
	}
	text := Armor(blob)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if len(line) > 70 && !strings.HasPrefix(line, "-----") {
			t.Fatalf("line longer than 70: %q", line)
		}
	}
	back, err := Unarmor(text)
	if err != nil || !bytes.Equal(back, blob) {
		t.Fatalf("Unarmor: %v", err)
	}
	if _, err := Unarmor("-----BEGIN PGP SIGNATURE-----\nxx\n-----END PGP SIGNATURE-----\n"); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("a PGP signature: %v", err)
	}
}

// ssh-keygen -Y verify accepts what spool signs, and spool what ssh-keygen
// -Y sign makes: the format is OpenSSH's, not a lookalike.
func TestSSHKeygenInterop(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("no ssh-keygen on PATH")
	}
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(kind, func(t *testing.T) {
			k := newKey(t, kind)
			dir := t.TempDir()
			msg := []byte("9c2f0d5e6b7a8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f")
			allowed := filepath.Join(dir, "allowed_signers")
			write(t, allowed, `ada@example.com namespaces="spool" `+k.publicLine+"\n")
			blob, err := Sign(k.signer, NamespaceEvents, msg)
			if err != nil {
				t.Fatal(err)
			}
			sigFile := filepath.Join(dir, "msg.sig")
			write(t, sigFile, Armor(blob))
			cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "ada@example.com", "-n", NamespaceEvents, "-s", sigFile)
			cmd.Stdin = bytes.NewReader(msg)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y verify refused spool's signature: %v\n%s", err, out)
			}
			// And the other way.
			msgFile := filepath.Join(dir, "msg")
			write(t, msgFile, string(msg))
			if out, err := exec.Command(keygen, "-Y", "sign", "-q", "-f", k.private, "-n", NamespaceEvents, msgFile).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			armored, err := os.ReadFile(msgFile + ".sig")
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := Unarmor(string(armored))
			if err != nil {
				t.Fatal(err)
			}
			key, err := Verify(theirs, NamespaceEvents, msg)
			if err != nil {
				t.Fatalf("spool refused ssh-keygen's signature: %v", err)
			}
			a, err := ParseAllowedSigners("allowed_signers", []byte(`ada@example.com namespaces="spool" `+k.publicLine+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Check("ada@example.com", NamespaceEvents, key, time.Now()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzVerify(f *testing.F) {
	k := newKey(f, "ed25519")
	blob, err := Sign(k.signer, NamespaceEvents, []byte("m"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(blob, []byte("m"))
	f.Add(blob[:20], []byte("m"))
	f.Add([]byte("SSHSIG\x00\x00\x00\x01"), []byte(""))
	f.Add([]byte("SSHSIG\x00\x00\x00\x01\xff\xff\xff\xff"), []byte("m"))
	f.Fuzz(func(t *testing.T, blob, msg []byte) {
		key, err := Verify(blob, NamespaceEvents, msg)
		if err != nil {
			if key != nil || !errors.Is(err, ErrBadSignature) {
				t.Fatalf("error %v with key %v", err, key)
			}
			return
		}
		// Whatever verifies must verify again the same way, armored or not.
		back, err := Unarmor(Armor(blob))
		if err != nil || !bytes.Equal(back, blob) {
			t.Fatalf("armor round trip: %v", err)
		}
	})
}
