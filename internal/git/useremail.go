package git

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gitconfig "github.com/go-git/go-git/v5/plumbing/format/config"
)

// UserEmail is git config user.email in r, or "". It reads the clone's and
// the user's config files itself when they say it plainly (plainUserEmail):
// running git for it was a millisecond of every write.
func UserEmail(ctx context.Context, r *Repo) string {
	if v, ok := plainUserEmail(r.CommonDir, os.Getenv); ok {
		return v
	}
	out, _ := Run(ctx, r.WorkTree, "config", "user.email")
	return strings.TrimSpace(out)
}

// plainUserEmail is user.email from the first of the clone's config, then
// ~/.gitconfig, then the XDG one, that sets it: git's order of precedence,
// highest first. It reports false, for git to answer, whenever it could
// differ from git: a variable that adds or moves config files (GIT_CONFIG*),
// a file that includes another or turns on per-worktree config, a file
// that does not parse or cannot be read, a value that is empty, and a key
// set nowhere here (the system file, whose place git's build decides).
func plainUserEmail(commonDir string, getenv func(string) string) (string, bool) {
	// (GIT_CONFIG_NOSYSTEM and GIT_CONFIG_SYSTEM touch only the system
	// file, which is never read here.)
	for _, v := range []string{"GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"} {
		if getenv(v) != "" {
			return "", false
		}
	}
	home := getenv("HOME")
	if home == "" {
		return "", false
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, path := range []string{filepath.Join(commonDir, "config"), filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config")} {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", false
		}
		v, set, ok := emailIn(b)
		if !ok {
			return "", false
		}
		if set {
			return v, v != ""
		}
	}
	return "", false
}

// emailIn is the last user.email a config file sets, whether it sets one,
// and false when the file is not plain enough to say (see plainUserEmail).
func emailIn(b []byte) (v string, set, ok bool) {
	lower := bytes.ToLower(b)
	if bytes.Contains(lower, []byte("include")) || bytes.Contains(lower, []byte("worktreeconfig")) ||
		bytes.Contains(b, []byte("\\\n")) || bytes.Contains(b, []byte("\\\r")) { // a continued line, which go-git's decoder reads otherwise
		return "", false, false
	}
	var c gitconfig.Config
	if gitconfig.NewDecoder(bytes.NewReader(b)).Decode(&c) != nil {
		return "", false, false
	}
	for _, s := range c.Sections {
		if s.IsName("user") && s.Options.Has("email") {
			v, set = s.Options.Get("email"), true
		}
	}
	return strings.TrimSpace(v), set, true
}
