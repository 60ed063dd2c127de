package prdqueue

import (
	"fmt"
	"path"
	"strings"

	"github.com/spoolhq/spool/internal/fault"
)

// MaxSlug is the longest slug.
const MaxSlug = 100

// CheckSlug refuses a feature or PRD slug spool could not use as a file
// name: empty, longer than MaxSlug, anything but lowercase letters, digits,
// "-" and ".", or "..".
func CheckSlug(kind, s string) error {
	bad := func(why string) error {
		return fault.New(CodeInvalidSlug, nil, fmt.Sprintf("%s slug %q %s", kind, s, why), "slug", s)
	}
	switch {
	case s == "":
		return bad("is empty")
	case len(s) > MaxSlug:
		return bad(fmt.Sprintf("is longer than %d characters", MaxSlug))
	case strings.Contains(s, ".."):
		return bad(`contains ".."`)
	case s[0] == '.' || s[0] == '-':
		return bad(`starts with "." or "-"`)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return bad(`may hold only lowercase letters, digits, "-" and "."`)
		}
	}
	return nil
}

// DefaultPath is where a PRD lives unless --path says otherwise.
func DefaultPath(slug string) string { return "docs/prd/" + slug + ".md" }

// CheckPath refuses a PRD path that is not a markdown file inside the
// repository: p is slash-separated and relative to the repository root.
func CheckPath(p string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fault.New(CodeInvalidPath, nil, fmt.Sprintf("PRD path %q %s", p, why), "path", p)
	}
	clean := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	switch {
	case p == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../"):
		return bad("is not inside the repository")
	case !strings.HasSuffix(clean, ".md"):
		return bad(`does not end in ".md"`)
	case clean == ".git" || strings.HasPrefix(clean, ".git/"):
		return bad("is inside .git")
	}
	return clean, nil
}

// SafePath reports whether p is a PRD path as prd add records it: CheckPath
// takes it and it is already clean. The fold takes no other (an event's
// path is written into by spool prd approve).
func SafePath(p string) bool {
	clean, err := CheckPath(p)
	return err == nil && clean == p
}
