package mergequeue

import (
	"fmt"
	"strings"
)

// WorkspaceID is a workspace's identity across clones: the clone's writer
// id, then "/" and git's worktree id for a linked worktree (the writer id
// alone is the primary worktree). Bytes other than letters, digits, '.',
// '_' and '-' in git's id are %XX-escaped, so the identity never holds ':'
// (it is the first part of the dedupe key), whitespace or '/' beyond the
// first, and two ids never escape alike.
func WorkspaceID(writer, gitID string) string {
	if gitID == "" {
		return writer
	}
	var b strings.Builder
	b.WriteString(writer)
	b.WriteByte('/')
	for i := 0; i < len(gitID); i++ {
		c := gitID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TrailerChangeID picks the change id from the values of a commit's
// Change-Id trailers, in order: the last one, unless it is empty (no id:
// the decider generates one); one with whitespace or ':' is refused.
func TrailerChangeID(workspace string, values []string) (id, source string, err error) {
	if len(values) == 0 {
		return "", "", nil
	}
	last := strings.TrimSpace(values[len(values)-1])
	if last == "" {
		return "", "", nil
	}
	if strings.ContainsAny(last, " \t:") {
		return "", "", ChangeIDExtractionFailed(workspace, "Change-Id trailer "+last+" contains whitespace or ':'")
	}
	return last, SourceTrailer, nil
}
