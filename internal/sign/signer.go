package sign

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"golang.org/x/crypto/ssh"
)

// AllowedSignersFile is where a repository keeps its allowed signers,
// relative to its root (tracked by git).
const AllowedSignersFile = ".spool/allowed_signers"

// EventMessage is what an event's signature covers: its content hash in
// lower-case hex, so that ssh-keygen -Y verify can check one by hand.
func EventMessage(hash [sha256.Size]byte) []byte { return []byte(hex.EncodeToString(hash[:])) }

// KeySetting finds the signing key setting that applies in the repository
// at root, and names where it came from: git config spool.signingkey (a
// person's own, in ~/.gitconfig or the clone's .git/config), then sign.key
// in .spool/config.json (shared by every clone), then git's
// user.signingkey when gpg.format is ssh (the key git signs commits with).
// "" means none.
func KeySetting(ctx context.Context, root string, cfg *config.Config) (setting, source string, err error) {
	values, err := git.ConfigValues(ctx, root, `^(spool\.signingkey|user\.signingkey|gpg\.format)$`)
	if err != nil {
		return "", "", err
	}
	key := SettingsFrom(cfg).Key
	switch {
	case values["spool.signingkey"] != "":
		return values["spool.signingkey"], "git config spool.signingkey", nil
	case key != "":
		return key, "sign.key", nil
	case values["gpg.format"] == "ssh" && values["user.signingkey"] != "":
		return values["user.signingkey"], "git config user.signingkey", nil
	}
	return "", "", nil
}

// LoadAllowedSigners reads the repository's allowed signers file; a missing
// file is fs.ErrNotExist.
func LoadAllowedSigners(root string) (*AllowedSigners, error) {
	b, err := os.ReadFile(filepath.Join(root, AllowedSignersFile))
	if err != nil {
		return nil, err
	}
	return ParseAllowedSigners(AllowedSignersFile, b)
}

// EventSigner is the log's Signer for one clone. It finds the key on the
// first append (a command that appends nothing never reads it), and with
// sign.required refuses to append what verify --signatures would refuse: no
// key, or a key allowed_signers does not list for the event's actor. In a
// repository with no allowed signers file, and neither sign.key nor
// sign.required set, it signs nothing.
type EventSigner struct {
	Root   string // the primary worktree
	Config *config.Config

	mu      sync.Mutex
	loaded  bool
	key     ssh.Signer
	source  string
	allowed *AllowedSigners // only with sign.required
}

// SignEvent signs the event's content hash in namespace spool.
func (s *EventSigner) SignEvent(e *eventlog.Event, hash [sha256.Size]byte) (string, error) {
	key, source, allowed, err := s.load()
	if err != nil || key == nil {
		return "", err
	}
	if allowed != nil {
		if err := allowed.Check(e.Actor, NamespaceEvents, key.PublicKey(), e.At); err != nil {
			return "", fault.New(CodeSignerNotAllowed, err,
				fmt.Sprintf("sign.required: the signing key (%s) may not sign as %s: %v", source, e.Actor, err), "actor", e.Actor)
		}
	}
	blob, err := Sign(key, NamespaceEvents, EventMessage(hash))
	if err != nil {
		return "", fault.New(CodeSigningKeyUnusable, err, fmt.Sprintf("signing key (%s): %v", source, err))
	}
	return encodeSig(blob), nil
}

// encodeSig is an SSHSIG blob as an event's sig: base64, unwrapped.
func encodeSig(blob []byte) string { return base64.StdEncoding.EncodeToString(blob) }

// load finds and loads the key once; a failure is tried again next time
// (a long-running watch outlives an agent that was briefly away).
func (s *EventSigner) load() (ssh.Signer, string, *AllowedSigners, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded {
		return s.key, s.source, s.allowed, nil
	}
	set := SettingsFrom(s.Config)
	required := set.Required
	if !required && set.Key == "" {
		// A repository without allowed signers has no use for signatures:
		// spare every append the git config lookup.
		if _, err := os.Stat(filepath.Join(s.Root, AllowedSignersFile)); errors.Is(err, fs.ErrNotExist) {
			s.loaded = true
			return nil, "", nil, nil
		}
	}
	setting, source, err := KeySetting(context.Background(), s.Root, s.Config)
	if err != nil {
		return nil, "", nil, err
	}
	var key ssh.Signer
	switch {
	case setting != "":
		if key, err = LoadKey(setting, s.Root); err != nil {
			if f, ok := fault.As(err); ok {
				f.Message += " (set by " + source + ")"
			}
			return nil, "", nil, err
		}
		source += " " + setting
	case required:
		return nil, "", nil, fault.New(CodeNoSigningKey, nil,
			"sign.required is true and no signing key is set: git config spool.signingkey PATH (a private key, or a .pub whose key ssh-agent holds)")
	}
	var allowed *AllowedSigners
	if required {
		allowed, err = LoadAllowedSigners(s.Root)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil, fault.New(CodeAllowedSignersInvalid, err,
				fmt.Sprintf("sign.required is true and there is no %s to say whose key signs for whom", AllowedSignersFile), "file", AllowedSignersFile)
		}
		if err != nil {
			return nil, "", nil, err
		}
	}
	s.key, s.source, s.allowed, s.loaded = key, source, allowed, true
	return key, source, allowed, nil
}
