package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// text makes a string from the log safe to print for people: control
// characters (a newline in a title, an escape sequence that would colour the
// terminal) and bidirectional overrides are shown escaped, as Go writes them.
// JSON output keeps every string exact.
func text(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

// textLines is text for a field that may span lines (a description, a
// comment): each line made safe, the line breaks kept.
func textLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = text(strings.TrimSuffix(l, "\r"))
	}
	return lines
}

// row joins cells for a tabwriter, leaving out empty trailing cells: a
// cell followed by a tab is padded, and rows must not end in spaces.
func row(cells ...string) string {
	n := len(cells)
	for n > 0 && cells[n-1] == "" {
		n--
	}
	return strings.Join(cells[:n], "\t") + "\n"
}

// clip shortens s to at most n bytes without splitting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// nonNil is s, or an empty slice for nil: JSON's [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
