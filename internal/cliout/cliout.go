// Package cliout is how spool's commands print, shared by cmd/spool and
// the bd front end (internal/bdcli): text from the log made safe for a
// terminal, and JSON as spool writes it.
package cliout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spoolhq/spool/internal/jsonout"
)

// Text makes a string from the log safe to print for people: control
// characters (a newline in a title, an escape sequence that would colour the
// terminal) and bidirectional overrides are shown escaped, as Go writes them.
// JSON output keeps every string exact.
func Text(s string) string {
	if printableASCII(s) || !strings.ContainsFunc(s, unsafeRune) {
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

// printableASCII is the common case, told at a byte a step: a table of
// 100,000 tasks spent a tenth of its time asking unicode of each rune.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

// TextLines is Text for a field that may span lines (a description, a
// comment): each line made safe, the line breaks kept.
func TextLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = Text(strings.TrimSuffix(l, "\r"))
	}
	return lines
}

// NonNil is s, or an empty slice for nil: JSON's [] rather than null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteJSON prints v as indented JSON; a list an item at a time (jsonout).
func WriteJSON(w io.Writer, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Len() == 0 {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return jsonout.WriteList(w, rv.Len(), func(i int) any { return rv.Index(i).Interface() }, false)
}

// JSONCompact is v as JSON on one line, without a newline, HTML unescaped.
func JSONCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), err
}

// WantsJSON looks for --json before parsing, so parse errors honour it too.
func WantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--json" || a == "--json=true" {
			return true
		}
		if a == "--" {
			break
		}
	}
	return false
}

// Buffered is stdout behind a 64 KiB buffer, and stderr flushing it
// before each write (FlushFirst): for a command that prints what it read
// and nothing else, whose caller flushes the buffer when it returns.
func Buffered(stdout, stderr io.Writer) (*bufio.Writer, io.Writer) {
	out := bufio.NewWriterSize(stdout, 64<<10)
	return out, FlushFirst{Out: out, W: stderr}
}

// FlushFirst is W with Out flushed before each write: what a command
// printed to its buffered stdout comes before what it writes to stderr
// next, as it would unbuffered (bd list's "Showing 50 issues" after them).
type FlushFirst struct {
	Out *bufio.Writer
	W   io.Writer
}

func (f FlushFirst) Write(p []byte) (int, error) {
	f.Out.Flush() // its error is the command's to report: the message still goes out
	return f.W.Write(p)
}

// Unwrap is the writer under w: a FlushFirst's stderr, for asking whether
// it is a terminal.
func Unwrap(w io.Writer) io.Writer {
	if f, ok := w.(FlushFirst); ok {
		return f.W
	}
	return w
}
