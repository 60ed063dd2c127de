package jsonout

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Appender is a value that writes itself as encoding/json writes it
// indented, without reflection: the long lists (tasks.json, history.json,
// the CLI's --json lists) spent most of their time in encoding/json's.
//
// AppendJSON appends the value to dst at f and reports whether it could:
// false when the value holds something encoding/json refuses (a time
// outside year 0..9999) or writes in a way the method does not know, and
// the caller then writes it with encoding/json (dst's bytes past its
// length on entry are then garbage). A type that embeds an Appender
// inherits its method, so it must declare its own, if only to return false.
type Appender interface {
	AppendJSON(dst []byte, f Format) ([]byte, bool)
}

// Format is how a value is written: as encoding/json with indent "  "
// (and any prefix of whole indents) and with or without SetEscapeHTML.
type Format struct {
	Level      int  // the indent of the line the value starts on: its fields one more, its closing bracket this
	EscapeHTML bool // <, > and & as \u003c, \u003e and \u0026
}

const spaces = "                                "

// newline starts a line indented by level.
func newline(dst []byte, level int) []byte {
	dst = append(dst, '\n')
	for n := 2 * level; n > 0; n -= len(spaces) {
		dst = append(dst, spaces[:min(n, len(spaces))]...)
	}
	return dst
}

const hex = "0123456789abcdef"

// safe are the ASCII bytes encoding/json writes as they are (its safeSet),
// html those of them it writes as they are with escapeHTML (htmlSafeSet).
var safe, html = func() (safe, html [utf8.RuneSelf]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		safe[b] = b != '"' && b != '\\'
		html[b] = safe[b] && b != '<' && b != '>' && b != '&'
	}
	return
}()

// AppendString appends s quoted as encoding/json's appendString does:
// control bytes, quote and backslash escaped (\b \f \n \r \t by name),
// <, > and & too with escapeHTML, U+2028 and U+2029 always, and each byte
// of invalid UTF-8 as \ufffd.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	set := &safe
	if escapeHTML {
		set = &html
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if set[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Object appends a struct's fields as encoding/json writes them indented:
// "{", then a line per field, "name": value, then "}" on its own line (or
// "{}" without fields). The caller writes the fields in their declared
// order, leaving out what omitempty leaves out.
type Object struct {
	dst []byte
	f   Format
	n   int  // fields so far
	ok  bool // false once a value encoding/json refuses was met
}

// NewObject starts an object at f.
func NewObject(dst []byte, f Format) Object {
	return Object{dst: dst, f: f, ok: true}
}

// End closes the object and returns what AppendJSON returns.
func (o *Object) End() ([]byte, bool) {
	if o.n == 0 {
		return append(o.dst, "{}"...), o.ok
	}
	o.dst = newline(o.dst, o.f.Level)
	return append(o.dst, '}'), o.ok
}

// key starts a field: the comma after the previous one, its line, its name.
func (o *Object) key(name string) {
	if o.n == 0 {
		o.dst = append(o.dst, '{')
	} else {
		o.dst = append(o.dst, ',')
	}
	o.n++
	o.dst = newline(o.dst, o.f.Level+1)
	o.dst = AppendString(o.dst, name, o.f.EscapeHTML)
	o.dst = append(o.dst, ':', ' ')
}

// String writes a string field.
func (o *Object) String(name, v string) {
	o.key(name)
	o.dst = AppendString(o.dst, v, o.f.EscapeHTML)
}

// StringOmitEmpty writes a string field tagged omitempty.
func (o *Object) StringOmitEmpty(name, v string) {
	if v != "" {
		o.String(name, v)
	}
}

// Int writes an integer field.
func (o *Object) Int(name string, v int64) {
	o.key(name)
	o.dst = strconv.AppendInt(o.dst, v, 10)
}

// Uint writes an unsigned integer field.
func (o *Object) Uint(name string, v uint64) {
	o.key(name)
	o.dst = strconv.AppendUint(o.dst, v, 10)
}

// Bool writes a boolean field.
func (o *Object) Bool(name string, v bool) {
	o.key(name)
	o.dst = strconv.AppendBool(o.dst, v)
}

// BoolOmitEmpty writes a bool field tagged omitempty: left out when false.
func (o *Object) BoolOmitEmpty(name string, v bool) {
	if v {
		o.Bool(name, v)
	}
}

// Time writes a time.Time field as its MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros dropped); AppendText is that text, and
// refuses the same times.
func (o *Object) Time(name string, v time.Time) {
	o.key(name)
	b, err := v.AppendText(append(o.dst, '"'))
	if err != nil {
		o.ok = false
		return
	}
	o.dst = append(b, '"')
}

// TimeOmitZero writes a time.Time field tagged omitzero: left out when
// zero.
func (o *Object) TimeOmitZero(name string, v time.Time) {
	if !v.IsZero() {
		o.Time(name, v)
	}
}

// TimeOmitNil writes a *time.Time field tagged omitempty: left out when
// nil (a non-nil zero time is written).
func (o *Object) TimeOmitNil(name string, v *time.Time) {
	if v != nil {
		o.Time(name, *v)
	}
}

// Strings writes a []string field: null when nil, [] when empty.
func (o *Object) Strings(name string, v []string) {
	o.key(name)
	o.array(len(v), v == nil, func(i int) {
		o.dst = AppendString(o.dst, v[i], o.f.EscapeHTML)
	})
}

// StringsOmitEmpty writes a []string field tagged omitempty: left out
// when empty, nil or not.
func (o *Object) StringsOmitEmpty(name string, v []string) {
	if len(v) > 0 {
		o.Strings(name, v)
	}
}

// List writes a slice field whose elements are Appenders: null when nil,
// [] when empty.
func List[T Appender](o *Object, name string, v []T) {
	o.key(name)
	f := Format{Level: o.f.Level + 2, EscapeHTML: o.f.EscapeHTML}
	o.array(len(v), v == nil, func(i int) {
		var ok bool
		o.dst, ok = v[i].AppendJSON(o.dst, f)
		o.ok = o.ok && ok
	})
}

// ListOmitEmpty writes a slice field tagged omitempty whose elements are
// Appenders: left out when empty, nil or not.
func ListOmitEmpty[T Appender](o *Object, name string, v []T) {
	if len(v) > 0 {
		List(o, name, v)
	}
}

// array writes n elements, each on its own line (elem writes the i-th),
// as a field's value: null for a nil slice.
func (o *Object) array(n int, isNil bool, elem func(i int)) {
	switch {
	case isNil:
		o.dst = append(o.dst, "null"...)
		return
	case n == 0:
		o.dst = append(o.dst, "[]"...)
		return
	}
	o.dst = append(o.dst, '[')
	for i := range n {
		if i > 0 {
			o.dst = append(o.dst, ',')
		}
		o.dst = newline(o.dst, o.f.Level+2)
		elem(i)
	}
	o.dst = newline(o.dst, o.f.Level+1)
	o.dst = append(o.dst, ']')
}

// Value writes a field whose value is an Appender (a struct, or a pointer
// to one that is not nil).
func (o *Object) Value(name string, v Appender) {
	o.key(name)
	var ok bool
	o.dst, ok = v.AppendJSON(o.dst, Format{Level: o.f.Level + 1, EscapeHTML: o.f.EscapeHTML})
	o.ok = o.ok && ok
}
