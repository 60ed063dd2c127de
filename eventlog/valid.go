package eventlog

// The replay hot path validates a line and finds its members in one pass:
// members accepts exactly what gjson.Valid accepts (FuzzMembersMatchGJSON
// holds it to that), where checking with gjson and then walking the object
// read every byte twice.

// member is where one member of a top-level object sits in a line.
type member struct {
	keyStart, keyEnd int  // the key, quotes included
	valStart, valEnd int  // the raw value
	escaped          bool // the key holds escapes
}

// members checks that s is valid JSON and, when it is an object, appends
// its members to buf in order. valid is false for anything gjson.Valid
// refuses; object is false for valid JSON that is not an object.
func members(s []byte, buf []member) (ms []member, valid, object bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		end, ok := validAny(s, i)
		return buf, ok && skipSpace(s, end) == len(s), false
	}
	ms = buf
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return ms, skipSpace(s, i+1) == len(s), true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return ms, false, true
		}
		var m member
		var ok bool
		m.keyStart = i
		if i, m.escaped, ok = validString(s, i+1); !ok {
			return ms, false, true
		}
		m.keyEnd = i
		if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
			return ms, false, true
		}
		m.valStart = skipSpace(s, i+1)
		if i, ok = validAny(s, m.valStart); !ok {
			return ms, false, true
		}
		m.valEnd = i
		ms = append(ms, m)
		switch i = skipSpace(s, i); {
		case i >= len(s):
			return ms, false, true
		case s[i] == '}':
			return ms, skipSpace(s, i+1) == len(s), true
		case s[i] != ',':
			return ms, false, true
		}
		i = skipSpace(s, i+1)
	}
}

// validAny returns the index after the JSON value at s[i], and whether it is
// one.
func validAny(s []byte, i int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '{':
		return validObject(s, i+1)
	case c == '[':
		return validArray(s, i+1)
	case c == '"':
		end, _, ok := validString(s, i+1)
		return end, ok
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(s, i)
	case c == 't':
		return validWord(s, i, "true")
	case c == 'f':
		return validWord(s, i, "false")
	case c == 'n':
		return validWord(s, i, "null")
	}
	return i, false
}

func validWord(s []byte, i int, w string) (int, bool) {
	if len(s)-i >= len(w) && string(s[i:i+len(w)]) == w {
		return i + len(w), true
	}
	return i, false
}

// validObject: s[i-1] is '{'.
func validObject(s []byte, i int) (int, bool) {
	i = skipSpace(s, i)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		var ok bool
		if i, _, ok = validString(s, i+1); !ok {
			return i, false
		}
		if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
			return i, false
		}
		if i, ok = validAny(s, skipSpace(s, i+1)); !ok {
			return i, false
		}
		switch i = skipSpace(s, i); {
		case i >= len(s):
			return i, false
		case s[i] == '}':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		i = skipSpace(s, i+1)
	}
}

// validArray: s[i-1] is '['.
func validArray(s []byte, i int) (int, bool) {
	i = skipSpace(s, i)
	if i < len(s) && s[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = validAny(s, i); !ok {
			return i, false
		}
		switch i = skipSpace(s, i); {
		case i >= len(s):
			return i, false
		case s[i] == ']':
			return i + 1, true
		case s[i] != ',':
			return i, false
		}
		i = skipSpace(s, i+1)
	}
}

// stringStop marks the bytes a JSON string cannot hold as they are: the
// quote, the backslash and control characters.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// validString returns the index after the string whose contents begin at
// s[i] (after the opening quote), whether it holds escapes, and whether it
// is a valid string.
func validString(s []byte, i int) (end int, escaped, ok bool) {
	for i < len(s) {
		c := s[i]
		if !stringStop[c] {
			i++
			continue
		}
		switch c {
		case '"':
			return i + 1, escaped, true
		case '\\':
			escaped = true
			if i+1 >= len(s) {
				return i + 1, escaped, false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(s)-i < 6 || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return i, escaped, false
				}
				i += 6
			default:
				return i, escaped, false
			}
		default:
			return i, escaped, false // a control character
		}
	}
	return i, escaped, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// validNumber: s[i] is '-' or a digit.
func validNumber(s []byte, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i >= len(s):
		return i, false
	case s[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}
