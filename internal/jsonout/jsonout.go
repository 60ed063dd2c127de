// Package jsonout writes a long JSON list an item at a time, byte for byte
// as encoding/json writes the whole list indented by two spaces: a list of
// 100,000 tasks then needs one item's buffer, not the output three times
// over (marshalled, indented, written).
package jsonout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"iter"
)

// WriteList writes n items, item(i) each, as a json.Encoder with
// SetIndent("", "  ") and escapeHTML writes the list, newline included.
// An item that is an Appender writes itself; encoding/json writes the rest.
func WriteList(w io.Writer, n int, item func(i int) any, escapeHTML bool) error {
	return WriteSeq(w, func(yield func(any) bool) {
		for i := range n {
			if !yield(item(i)) {
				return
			}
		}
	}, escapeHTML)
}

// WriteSeq is WriteList for the items a sequence yields, each written
// before the next is asked for.
func WriteSeq(w io.Writer, items iter.Seq[any], escapeHTML bool) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	enc.SetIndent("  ", "  ")
	f := Format{Level: 1, EscapeHTML: escapeHTML} // as the prefix "  " indents each item
	var b []byte
	n := 0
	for v := range items {
		if n++; n == 1 {
			bw.WriteString("[\n  ")
		} else {
			bw.WriteString(",\n  ")
		}
		if a, ok := v.(Appender); ok {
			if b, ok = a.AppendJSON(b[:0], f); ok {
				bw.Write(b)
				continue
			}
		}
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return err
		}
		bw.Write(buf.Bytes()[:buf.Len()-1]) // without Encode's newline
	}
	if n == 0 {
		bw.WriteString("[]\n")
	} else {
		bw.WriteString("\n]\n")
	}
	return bw.Flush()
}
