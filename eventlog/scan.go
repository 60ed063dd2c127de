package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// fieldsAt walks the members of a top-level JSON object that gjson.Valid has
// already accepted, calling fn with each key and the byte range of its raw
// value. It is the replay hot path: one pass over the line as read, no copy
// of it, no float parsing. key is s's own bytes for a plain key (valid only
// during the call) and decoded for one with escapes.
func fieldsAt(s []byte, fn func(key []byte, start, end int) error) error {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return nil
	}
	for i < len(s) {
		end := skipString(s, i)
		key := s[i:end]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(key))
		} else {
			key = key[1 : len(key)-1]
		}
		i = skipSpace(s, end)
		i = skipSpace(s, i+1) // ':'
		end = skipValue(s, i)
		if err := fn(key, i, end); err != nil {
			return err
		}
		i = skipSpace(s, end)
		if i >= len(s) || s[i] == '}' {
			return nil
		}
		i = skipSpace(s, i+1) // ','
	}
	return nil
}

func skipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at s[i] == '"'.
func skipString(s []byte, i int) int {
	for j := i + 1; j < len(s); {
		k := bytes.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s)
		}
		j += k
		// The quote ends the string unless an odd run of backslashes escapes it.
		n := 0
		for b := j - 1; b > i && s[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(s)
}

// skipValue returns the index after the value starting at s[i].
func skipValue(s []byte, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = skipString(s, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	j := i
	for j < len(s) && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '\r' {
		j++
	}
	return j
}

// unquote decodes a JSON string literal with escapes (rare in keys and values).
func unquote(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return string(raw)
	}
	return s
}

// stringRaw checks that raw is a JSON string and returns its contents
// between the quotes, and whether they hold escapes (then unquote the whole).
func stringRaw(name string, raw []byte) (inner []byte, escaped bool, err error) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false, fmt.Errorf("%w: field %s must be a string", ErrCorrupt, name)
	}
	inner = raw[1 : len(raw)-1]
	return inner, bytes.IndexByte(inner, '\\') >= 0, nil
}

// uintValue decodes raw as a non-negative JSON integer.
func uintValue(name string, raw []byte) (uint64, error) {
	if len(raw) == 0 || len(raw) > 20 {
		return 0, fmt.Errorf("%w: field %s must be a non-negative integer", ErrCorrupt, name)
	}
	var n uint64
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if c < '0' || c > '9' || (k == 0 && c == '0' && len(raw) > 1) {
			return 0, fmt.Errorf("%w: field %s must be a non-negative integer", ErrCorrupt, name)
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, fmt.Errorf("%w: field %s is too large", ErrCorrupt, name)
		}
		n = n*10 + d
	}
	return n, nil
}
