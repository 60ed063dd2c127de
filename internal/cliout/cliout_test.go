package cliout

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain title":        "plain title",
		"two\nlines":         `two\nlines`,
		"\x1b[31mred\x1b[0m": `\x1b[31mred\x1b[0m`,
		"tab\there":          `tab\there`,
		"del\x7f":            `del\x7f`,
		"c1\u0085":           `c1\u0085`,
		"rtl\u202eevil":      `rtl\u202eevil`,
		"héllo wörld ✓":      "héllo wörld ✓",
		"bad\xffutf8":        `bad\xffutf8`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// The fast path passes only bytes the rune test passes.
func TestPrintableASCIIIsSafe(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		s := string([]byte{byte(b)})
		if printableASCII(s) && strings.ContainsFunc(s, unsafeRune) {
			t.Errorf("byte %#x passes the fast path but is unsafe", b)
		}
	}
}
