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
	if v, ok := plainUserEmail(r.CommonDir, os.LookupEnv); ok {
		return v
	}
	out, _ := Run(ctx, r.WorkTree, "config", "user.email")
	return strings.TrimSpace(out)
}

// plainUserEmail is user.email from the first of the clone's config, then
// ~/.gitconfig, then the XDG one, that sets it: git's order of precedence,
// highest first. It reports false, for git to answer, whenever it could
// differ from git: a variable that adds or moves config files (GIT_CONFIG*,
// set even empty), a file that includes another or turns on per-worktree
// config, a file that does not parse, that go-git's decoder reads more
// leniently than git, or that cannot be read, a value that is empty or
// holds whitespace git rewrites, and a key set nowhere here (the system
// file, whose place git's build decides).
func plainUserEmail(commonDir string, lookup func(string) (string, bool)) (string, bool) {
	// (GIT_CONFIG_NOSYSTEM and GIT_CONFIG_SYSTEM touch only the system
	// file, which is never read here.)
	for _, v := range []string{"GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"} {
		if _, set := lookup(v); set {
			return "", false
		}
	}
	home, _ := lookup("HOME")
	if home == "" {
		return "", false
	}
	xdg, _ := lookup("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	} else if !filepath.IsAbs(xdg) {
		return "", false // git takes it from the work tree, not from here
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
		bytes.Contains(b, []byte("\\\n")) || bytes.Contains(b, []byte("\\\r")) || // a continued line, which go-git's decoder reads otherwise
		!plainHeaders(b) {
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
	// git turns an unquoted tab into a space, and a lone CR too, which
	// go-git drops: such a file is git's to read.
	if strings.ContainsAny(v, "\t\v\f") || !crlfOnly(b) {
		return "", false, false
	}
	return strings.TrimSpace(v), set, true
}

// crlfOnly says whether every CR in b ends a line.
func crlfOnly(b []byte) bool {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			return false
		}
	}
	return true
}

// plainHeaders says whether every section header in b is one git takes
// and go-git's decoder reads the same: [name], [name "sub"] or
// [name.sub], with nothing else on the line but a comment or a variable.
// go-git also takes [user ], which git refuses.
func plainHeaders(b []byte) bool {
	for line := range bytes.Lines(b) {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 || line[0] != '[' {
			continue
		}
		i := 1
		for i < len(line) && (isAlnum(line[i]) || line[i] == '-' || line[i] == '.') {
			i++
		}
		if i == 1 || i == len(line) {
			return false
		}
		if line[i] == ' ' {
			if i+1 >= len(line) || line[i+1] != '"' {
				return false
			}
			end := bytes.IndexByte(line[i+2:], '"')
			if end < 0 {
				return false
			}
			i += 2 + end + 1
		}
		if i >= len(line) || line[i] != ']' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
