// Package refname holds git's rules for ref names as pure functions, so
// that domain packages (which never run git) and the git edge share them.
package refname

import (
	"fmt"
	"strings"
	"unicode"
)

// CheckBranch applies git check-ref-format's rules to refs/heads/name, so
// that a configured branch is refused when set rather than when the merge
// train first uses it.
func CheckBranch(name string) error {
	bad := func(why string) error { return fmt.Errorf("%q is not a valid branch name: %s", name, why) }
	switch {
	case name == "":
		return bad("it is empty")
	case name == "@":
		return bad(`it is "@"`)
	case strings.HasPrefix(name, "-"):
		return bad("it starts with '-'")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("it has an empty path component")
	case strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock"):
		return bad("it ends with '.' or '.lock'")
	case strings.Contains(name, "..") || strings.Contains(name, "@{"):
		return bad(`it contains ".." or "@{"`)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad("a path component starts with '.' or ends with '.lock'")
		}
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("it contains %q", r))
		}
	}
	return nil
}

// CheckRemote refuses what cannot be a git remote's name on spool's command
// lines ("" is allowed: no remote).
func CheckRemote(name string) error {
	if name != "" && (strings.HasPrefix(name, "-") || strings.ContainsFunc(name, unicode.IsSpace) || strings.ContainsAny(name, "\x00:")) {
		return fmt.Errorf("%q is not a remote name", name)
	}
	return nil
}

// ObjectID reports whether s is a git object id as spool records commits:
// 40 lowercase hex digits (SHA-1) or 64 (SHA-256). A commit read from the
// log is handed to git only if it is one, never as an option or a
// revision expression.
func ObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
