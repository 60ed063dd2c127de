package main

import (
	"strings"
	"unicode/utf8"

	"github.com/spoolhq/spool/internal/cliout"
)

// text, textLines and nonNil are cliout's Text, TextLines and NonNil, by
// the short names the commands use.
func text(s string) string        { return cliout.Text(s) }
func textLines(s string) []string { return cliout.TextLines(s) }
func nonNil[T any](s []T) []T     { return cliout.NonNil(s) }

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
