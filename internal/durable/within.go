package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is Within's error for a path that leads outside its root.
var ErrOutside = errors.New("leads outside the work tree")

// Within is where path (under root, which it names lexically) is once the
// symbolic links on the way are resolved, the file's own included when it
// exists: a path inside root, and not in root's .git, or ErrOutside. A
// path of spool's that comes from the log or from what was committed (a
// PRD, a manifest, prd.json) is read and written only through Within, so
// that a committed link (docs/prd/x.md -> /etc/passwd, docs -> ~) never
// leads spool outside the work tree. What does not exist yet is resolved
// as far as it does.
func Within(root, path string) (string, error) {
	rroot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: %w", path, ErrOutside)
	}
	at, rest := path, ""
	for i := 0; ; i++ {
		resolved, err := filepath.EvalSymlinks(at)
		if err == nil {
			at = filepath.Join(resolved, rest)
			break
		}
		parent := filepath.Dir(at)
		if !errors.Is(err, fs.ErrNotExist) || parent == at || i > 4096 {
			return "", err
		}
		if _, lerr := os.Lstat(at); lerr == nil { // a link to nothing: where it would lead is not known
			return "", fmt.Errorf("%s is a dangling symbolic link: %w", at, ErrOutside)
		}
		at, rest = parent, filepath.Join(filepath.Base(at), rest)
	}
	rel, err = filepath.Rel(rroot, at)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s (to %s): %w", path, at, ErrOutside)
	}
	if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); first == ".git" {
		return "", fmt.Errorf("%s (to %s, in .git): %w", path, at, ErrOutside)
	}
	return at, nil
}
