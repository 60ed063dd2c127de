package workqueue

// MaxIDLength bounds a task id, spool's own or an import's.
const MaxIDLength = 128

// ValidID reports whether id can name a task: one a command makes
// (prefix-base36, a key's prefix-xxxxxxxx) or imports (bd's bd-a1b2,
// bd-a1b2.1, …): letters, digits, '.', '_' and '-', starting with a letter
// or a digit. The orchestrator names a worktree, a run directory and a
// branch after a task, and anyone who can push writes events, so the fold
// takes no other: no separator, no leading dot or dash, nothing a path
// could climb out with or an argument be taken for an option. (A loop, not
// a regexp: the fold asks for every task event.)
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValidPrefix reports whether p can start task ids (ids.prefix).
func ValidPrefix(p string) bool {
	if len(p) < 1 || len(p) > 16 || p[0] < 'a' || p[0] > 'z' {
		return false
	}
	for _, c := range []byte(p[1:]) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
