// Package sign signs and verifies spool's events and checks who may change
// who is trusted, on git's model: SSH signatures (OpenSSH's SSHSIG format,
// as ssh-keygen -Y and git with gpg.format ssh make them) and an allowed
// signers file that maps principals to keys.
package sign

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Namespaces keep a signature made for one purpose from passing for another.
const (
	NamespaceEvents = "spool" // spool's events
	NamespaceGit    = "git"   // git's commits and tags
)

// magic begins every SSHSIG blob and the data it signs (PROTOCOL.sshsig).
const magic = "SSHSIG"

// sigBlob is an SSHSIG blob after its magic.
type sigBlob struct {
	Version   uint32
	PublicKey []byte
	Namespace string
	Reserved  string
	HashAlg   string
	Signature []byte
}

// signedData is what the key signs, after the magic.
type signedData struct {
	Namespace string
	Reserved  string
	HashAlg   string
	Hash      []byte
}

func messageHash(alg string, message []byte) ([]byte, error) {
	var h hash.Hash
	switch alg {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return nil, fmt.Errorf("hash algorithm %q is not sha256 or sha512", alg)
	}
	h.Write(message)
	return h.Sum(nil), nil
}

func toSign(namespace, alg string, digest []byte) []byte {
	return append([]byte(magic), ssh.Marshal(signedData{Namespace: namespace, HashAlg: alg, Hash: digest})...)
}

// Sign makes an SSHSIG blob of message in namespace, as ssh-keygen -Y sign
// does: SHA-512 of the message, and RSA keys sign with rsa-sha2-512.
func Sign(signer ssh.Signer, namespace string, message []byte) ([]byte, error) {
	digest, _ := messageHash("sha512", message)
	data := toSign(namespace, "sha512", digest)
	var sig *ssh.Signature
	var err error
	if as, ok := signer.(ssh.AlgorithmSigner); ok && signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	blob := sigBlob{Version: 1, PublicKey: signer.PublicKey().Marshal(), Namespace: namespace,
		HashAlg: "sha512", Signature: ssh.Marshal(sig)}
	return append([]byte(magic), ssh.Marshal(blob)...), nil
}

// ErrBadSignature is a signature that does not verify; the message says why.
var ErrBadSignature = errors.New("bad signature")

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSignature, fmt.Sprintf(format, args...))
}

// Verify checks an SSHSIG blob over message in namespace, as ssh-keygen -Y
// verify does, and returns the key that made it. Whether that key may sign
// for anyone is AllowedSigners' question.
func Verify(blob []byte, namespace string, message []byte) (ssh.PublicKey, error) {
	sb, err := parseBlob(blob)
	if err != nil {
		return nil, err
	}
	if sb.Namespace != namespace {
		return nil, badf("made for namespace %q, not %q", sb.Namespace, namespace)
	}
	key, err := ssh.ParsePublicKey(sb.PublicKey)
	if err != nil {
		return nil, badf("its public key: %v", err)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(sb.Signature, &sig); err != nil {
		return nil, badf("its signature: %v", err)
	}
	if sig.Format == ssh.KeyAlgoRSA {
		return nil, badf("an RSA signature with SHA-1 (ssh-rsa), which ssh-keygen refuses too")
	}
	digest, err := messageHash(sb.HashAlg, message)
	if err != nil {
		return nil, badf("%v", err)
	}
	if err := key.Verify(toSign(namespace, sb.HashAlg, digest), &sig); err != nil {
		return nil, badf("does not match the content (%s key %s)", key.Type(), ssh.FingerprintSHA256(key))
	}
	return key, nil
}

func parseBlob(blob []byte) (*sigBlob, error) {
	rest, ok := bytes.CutPrefix(blob, []byte(magic))
	if !ok {
		return nil, badf("not an SSH signature (no %s preamble)", magic)
	}
	var sb sigBlob
	if err := ssh.Unmarshal(rest, &sb); err != nil {
		return nil, badf("not an SSH signature: %v", err)
	}
	if sb.Version != 1 {
		return nil, badf("SSH signature version %d, want 1", sb.Version)
	}
	return &sb, nil
}

// Armor and Unarmor convert between a blob and the text ssh-keygen writes
// and git keeps in a commit's gpgsig header.
const (
	armorBegin = "-----BEGIN SSH SIGNATURE-----"
	armorEnd   = "-----END SSH SIGNATURE-----"
)

func Armor(blob []byte) string {
	enc := base64.StdEncoding.EncodeToString(blob)
	var b strings.Builder
	b.WriteString(armorBegin + "\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n" + armorEnd + "\n")
	return b.String()
}

func Unarmor(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	body, ok := strings.CutPrefix(text, armorBegin)
	if ok {
		body, ok = strings.CutSuffix(body, armorEnd)
	}
	if !ok {
		return nil, badf("not an armored SSH signature")
	}
	blob, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return nil, badf("armored SSH signature: %v", err)
	}
	return blob, nil
}
