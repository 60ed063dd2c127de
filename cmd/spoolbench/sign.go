package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/sign"
	"golang.org/x/crypto/ssh"
)

// signMain times signed events as whole processes: spool task add in a
// repository that does not sign, then with an ed25519 key and allowed
// signers, and spool verify with and without --signatures over a log of
// signed events (spoolbench gen -sign):
//
//	spoolbench sign -spool BIN [-events 10000] [-runs 21]
func signMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench sign", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	events := fs.Int("events", 10_000, "signed events in the log verify reads")
	runs := fs.Int("runs", 21, "runs per command")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	printLoad()
	keys, err := os.MkdirTemp("", "spoolbench-keys-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(keys)
	key, pub, err := writeKey(keys)
	if err != nil {
		return err
	}
	allowed := "bench@example.com " + pub + "\n"

	spool, dir, env, cleanup, err := benchRepo(*bin, "", "spoolbench-sign-", "bench@example.com")
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Println("no allowed signers (nothing signed):")
	if err := timeCommands(spool, dir, env, *runs, [][]string{{"task", "add", "benchmark task"}}); err != nil {
		return err
	}
	if err := trustKey(dir, env, allowed, key); err != nil {
		return err
	}
	fmt.Println("allowed signers and git config spool.signingkey (an ed25519 key file):")
	if err := timeCommands(spool, dir, env, *runs, [][]string{{"task", "add", "benchmark task"}}); err != nil {
		return err
	}

	logDir := filepath.Join(keys, "log")
	if err := genMain([]string{"-dir", logDir, "-events", fmt.Sprint(*events), "-writers", "1", "-sign", key}); err != nil {
		return err
	}
	if _, err := run(logDir, env, spool, "init"); err != nil {
		return err
	}
	if err := trustKey(logDir, env, allowed, key); err != nil {
		return err
	}
	fmt.Printf("%d signed events (no exemption: the log is not committed):\n", *events)
	return timeCommands(spool, logDir, env, *runs, [][]string{{"verify"}, {"verify", "--signatures"}})
}

// writeKey writes an ed25519 key (OpenSSH, no passphrase) in dir.
func writeKey(dir string) (path, pub string, err error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "bench")
	if err != nil {
		return "", "", err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "id_ed25519")
	pub = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	return path, pub, os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

// trustKey commits allowed signers (and the config, not the log) and makes
// key the clone's signing key.
func trustKey(dir string, env []string, allowed, key string) error {
	if err := os.WriteFile(filepath.Join(dir, sign.AllowedSignersFile), []byte(allowed), 0o644); err != nil {
		return err
	}
	for _, c := range [][]string{
		{"add", sign.AllowedSignersFile, ".spool/config.json"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "allowed signers"},
		{"config", "spool.signingkey", key},
	} {
		if _, err := run(dir, env, "git", c...); err != nil {
			return err
		}
	}
	return nil
}
