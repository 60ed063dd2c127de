package sign

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"golang.org/x/crypto/ssh"
)

// AllowedSigners is git's allowed signers file (ssh-keygen(1), ALLOWED
// SIGNERS): one key per line, the principals that may sign with it and
// options.
type AllowedSigners struct {
	Path    string
	Entries []Entry
}

// Entry is one line.
type Entry struct {
	Line        int
	Principals  string    // a pattern list: "a@x,*@y.org,!z@y.org"
	Namespaces  string    // a pattern list; "" allows every namespace
	ValidAfter  time.Time // zero: no bound
	ValidBefore time.Time
	Key         ssh.PublicKey
	wire        string // Key.Marshal(), what a signature's key is compared with
}

// LineError is a line of the file that cannot be read.
type LineError struct {
	Path string
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg) }

// FaultFields places the error for --json.
func (e *LineError) FaultFields() map[string]any {
	return map[string]any{"file": e.Path, "line": e.Line}
}

// FaultCode is allowed_signers_invalid.
func (e *LineError) FaultCode() fault.Code { return CodeAllowedSignersInvalid }

// ParseAllowedSigners reads the file's content; path is for messages. Every
// line must be understood: a line skipped would silently trust less, or
// more, than the file says.
func ParseAllowedSigners(path string, data []byte) (*AllowedSigners, error) {
	a := &AllowedSigners{Path: path}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		e, err := parseEntry(line)
		if err != nil {
			return nil, &LineError{Path: path, Line: n + 1, Msg: err.Error()}
		}
		e.Line = n + 1
		a.Entries = append(a.Entries, e)
	}
	return a, nil
}

func parseEntry(line string) (Entry, error) {
	var e Entry
	principals, rest, err := firstField(line)
	if err != nil {
		return e, err
	}
	if principals == "" {
		return e, fmt.Errorf("no principals")
	}
	if rest == "" {
		return e, fmt.Errorf("no key after the principals %q", principals)
	}
	e.Principals = principals
	key, _, options, tail, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return e, fmt.Errorf("no key I can read after the principals %q (want: principals [options] keytype base64 [comment])", principals)
	}
	if len(bytes.TrimSpace(tail)) > 0 {
		return e, fmt.Errorf("more than one line")
	}
	e.Key, e.wire = key, string(key.Marshal())
	for _, opt := range options {
		if err := e.setOption(opt); err != nil {
			return e, err
		}
	}
	return e, nil
}

// firstField splits off the principals: up to the first space or tab, or a
// double-quoted string, as OpenSSH reads them.
func firstField(line string) (string, string, error) {
	if line[0] == '"' {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return "", "", fmt.Errorf("the principals' quote is not closed")
		}
		return line[1 : end+1], strings.TrimLeft(line[end+2:], " \t"), nil
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return line, "", nil
	}
	return line[:i], strings.TrimLeft(line[i:], " \t"), nil
}

func (e *Entry) setOption(opt string) error {
	name, value, hasValue := strings.Cut(opt, "=")
	name = strings.ToLower(name)
	if hasValue {
		if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
			return fmt.Errorf("option %s: the value must be in double quotes", name)
		}
		value = value[1 : len(value)-1]
	}
	switch {
	case name == "cert-authority" && !hasValue:
		return fmt.Errorf("cert-authority: spool does not accept certificate authorities; list each key")
	case name == "namespaces" && hasValue:
		e.Namespaces = value
	case name == "valid-after" && hasValue:
		t, err := parseTime(value)
		if err != nil {
			return fmt.Errorf("valid-after: %v", err)
		}
		e.ValidAfter = t
	case name == "valid-before" && hasValue:
		t, err := parseTime(value)
		if err != nil {
			return fmt.Errorf("valid-before: %v", err)
		}
		e.ValidBefore = t
	default:
		return fmt.Errorf("option %q is not one spool knows (namespaces, valid-after, valid-before)", opt)
	}
	return nil
}

// parseTime reads YYYYMMDD[HHMM[SS]], in local time unless it ends in Z or
// UTC, as OpenSSH does.
func parseTime(s string) (time.Time, error) {
	loc, v := time.Local, s
	if u, ok := strings.CutSuffix(strings.ToUpper(s), "Z"); ok && len(s) > 1 {
		loc, v = time.UTC, u
	} else if u, ok := strings.CutSuffix(strings.ToUpper(s), "UTC"); ok && len(s) > 3 {
		loc, v = time.UTC, u
	}
	layout := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}[len(v)]
	if layout == "" {
		return time.Time{}, fmt.Errorf("%q is not YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS (Z for UTC)", s)
	}
	t, err := time.ParseInLocation(layout, v, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date and time", s)
	}
	return t, nil
}

// Check says whether key may sign in namespace as principal at time at:
// nil if a line allows it, else why not, from the line that came closest.
func (a *AllowedSigners) Check(principal, namespace string, key ssh.PublicKey, at time.Time) error {
	wire := string(key.Marshal())
	var why error
	for _, e := range a.Entries {
		if e.wire != wire || matchList(principal, e.Principals) != 1 {
			continue
		}
		err := e.allows(namespace, at)
		if err == nil {
			return nil
		}
		why = fmt.Errorf("%s:%d lists the key for %s, but %v", a.Path, e.Line, principal, err)
	}
	if why == nil {
		why = fmt.Errorf("key %s is not in %s for %s", ssh.FingerprintSHA256(key), a.Path, principal)
	}
	return why
}

// allows says whether the line's options allow a signature in namespace at
// time at.
func (e Entry) allows(namespace string, at time.Time) error {
	switch {
	case e.Namespaces != "" && matchList(namespace, e.Namespaces) != 1:
		return fmt.Errorf("not for namespace %s (namespaces=%q)", namespace, e.Namespaces)
	case !e.ValidAfter.IsZero() && at.Before(e.ValidAfter):
		return fmt.Errorf("only from %s, after %s", e.ValidAfter.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	case !e.ValidBefore.IsZero() && at.After(e.ValidBefore):
		return fmt.Errorf("only until %s, before %s", e.ValidBefore.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	return nil
}

// Lists reports whether any line allows key in namespace at time at, for
// whichever principal.
func (a *AllowedSigners) Lists(namespace string, key ssh.PublicKey, at time.Time) bool {
	wire := string(key.Marshal())
	for _, e := range a.Entries {
		if e.wire == wire && e.allows(namespace, at) == nil {
			return true
		}
	}
	return false
}

// matchList is OpenSSH's match_pattern_list: 1 if s matches a pattern of
// the comma-separated list and no negated one (!pattern), -1 if a negated
// one matches, 0 if none does.
func matchList(s, list string) int {
	got := 0
	for _, p := range strings.Split(list, ",") {
		negated := strings.HasPrefix(p, "!")
		if negated {
			p = p[1:]
		}
		if p == "" || !matchPattern(s, p) {
			continue
		}
		if negated {
			return -1
		}
		got = 1
	}
	return got
}

// matchPattern matches s against a pattern of * (any run) and ? (any one
// byte), as OpenSSH's match_pattern does, in time linear in len(s)*len(p):
// on a mismatch, only the last star is moved on.
func matchPattern(s, p string) bool {
	si, pi, starP, starS := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			starP, starS = pi, si
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			si, pi = si+1, pi+1
		case starP >= 0:
			starS++
			si, pi = starS, starP+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
