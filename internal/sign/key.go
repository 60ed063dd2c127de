package sign

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/fault"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// LoadKey returns the signer a key setting names, read as git reads
// user.signingkey with gpg.format ssh: a path to a private key (not
// passphrase-protected), a path to a public key whose private half
// ssh-agent holds, or a public key itself ("key::ssh-ed25519 AAAA…", or
// "ssh-…" as git still accepts). A relative path is relative to dir; ~/ is
// the home directory.
func LoadKey(setting, dir string) (ssh.Signer, error) {
	unusable := func(err error, format string, args ...any) error {
		return fault.New(CodeSigningKeyUnusable, err, fmt.Sprintf(format, args...), "key", setting)
	}
	if literal, ok := literalKey(setting); ok {
		pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(literal))
		if err != nil {
			return nil, unusable(err, "signing key %q is not a public key I can read", setting)
		}
		return agentSigner(pub, setting)
	}
	path := setting
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, unusable(err, "signing key %s: %v", setting, err)
		}
		path = filepath.Join(home, rest)
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, unusable(err, "signing key %s: %v", setting, unwrapPath(err))
	}
	if bytes.Contains(b, []byte("PRIVATE KEY-----")) {
		signer, err := ssh.ParsePrivateKey(b)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			return nil, unusable(err, "signing key %s is protected by a passphrase: add it to ssh-agent (ssh-add %s) and set the key to %s.pub", setting, path, path)
		case err != nil:
			return nil, unusable(err, "signing key %s is not a private key I can read: %v", setting, err)
		}
		return signer, nil
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, unusable(err, "signing key %s is neither an OpenSSH private key nor a public key", setting)
	}
	return agentSigner(pub, setting)
}

func literalKey(setting string) (string, bool) {
	if rest, ok := strings.CutPrefix(setting, "key::"); ok {
		return rest, true
	}
	for _, prefix := range []string{"ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-"} {
		if strings.HasPrefix(setting, prefix) {
			return setting, true
		}
	}
	return "", false
}

// agentSigner finds pub among the keys ssh-agent holds ($SSH_AUTH_SOCK).
// The connection stays open: each event is one request to the agent.
func agentSigner(pub ssh.PublicKey, setting string) (ssh.Signer, error) {
	unusable := func(err error, msg string) error {
		return fault.New(CodeSigningKeyUnusable, err, fmt.Sprintf("signing key %s (%s): %s", setting, ssh.FingerprintSHA256(pub), msg), "key", setting)
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, unusable(nil, "a public key, whose private half must be in ssh-agent, and SSH_AUTH_SOCK is not set")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, unusable(err, fmt.Sprintf("cannot reach ssh-agent at %s: %v", sock, err))
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, unusable(err, fmt.Sprintf("ssh-agent: %v", err))
	}
	want := pub.Marshal()
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), want) {
			return s, nil
		}
	}
	conn.Close()
	return nil, unusable(nil, "ssh-agent does not hold it (ssh-add the private key)")
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
