package main

import "testing"

func TestText(t *testing.T) {
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
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRowAndClip(t *testing.T) {
	if got := row("a", "b", "", ""); got != "a\tb\n" {
		t.Errorf("row = %q", got)
	}
	if got := row("a", "", "c"); got != "a\t\tc\n" {
		t.Errorf("row = %q", got)
	}
	if got := clip("ééééé", 7); got != "éé..." {
		t.Errorf("clip = %q", got)
	}
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip = %q", got)
	}
}
