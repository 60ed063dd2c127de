package sign

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"

	"golang.org/x/crypto/ssh"
)

// testKey is a fresh key: its signer, and its files written as ssh-keygen
// writes them.
type testKey struct {
	signer      ssh.Signer
	private     string // OpenSSH private key file
	public      string // .pub file
	publicLine  string // "ssh-ed25519 AAAA…"
	fingerprint string
}

func newKey(t testing.TB, kind string) testKey {
	t.Helper()
	var raw any
	var err error
	switch kind {
	case "ed25519":
		_, raw, err = ed25519.GenerateKey(rand.Reader)
	case "ecdsa":
		raw, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("key kind %s", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(raw, "test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	k := testKey{signer: signer, private: filepath.Join(dir, "id_"+kind), publicLine: string(ssh.MarshalAuthorizedKey(signer.PublicKey())),
		fingerprint: ssh.FingerprintSHA256(signer.PublicKey())}
	k.publicLine = k.publicLine[:len(k.publicLine)-1]
	k.public = k.private + ".pub"
	if err := os.WriteFile(k.private, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(k.public, []byte(k.publicLine+" test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// decodeWithID decodes a line and sets its id to its content's.
func decodeWithID(line string) (*eventlog.Event, error) {
	e, err := eventlog.Decode([]byte(strings.Replace(line, `"id":""`, `"id":"x"`, 1)))
	if err != nil {
		return nil, err
	}
	e.ID, err = e.ContentID()
	return e, err
}
