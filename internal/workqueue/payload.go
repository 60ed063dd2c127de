package workqueue

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The payloads of the busiest events (task.commented, task.updated,
// task.created: nine in ten of a tracker's log) are decoded without
// encoding/json's reflection, which was a sixth of replaying a million
// events. The fast path takes the forms spool writes; anything else (a key
// spelt otherwise, a null, a number with a fraction) goes to json.Unmarshal,
// so the result is always what json.Unmarshal gives. Strings without escapes
// share the payload's bytes (the fold copies the short ones it keeps).

// decodeComment, decodeUpdated, decodeCreated, decodeClaimed,
// decodeHeartbeat and decodeFailed are generated from the payloads'
// declarations (fields_gen.go): a member of a type with a setter below is
// taken here, any other goes to json.Unmarshal.

// unmarshal sets d's fields from data's members through field, which
// reports false for a member it does not take; then d is decoded again,
// from zero, by encoding/json.
func unmarshal[T any](data []byte, d *T, field func(d *T, key string, v gjson.Result) bool) error {
	if r := gjson.Parse(unsafe.String(unsafe.SliceData(data), len(data))); r.IsObject() {
		ok := true
		r.ForEach(func(k, v gjson.Result) bool {
			key := k.Raw[1 : len(k.Raw)-1]
			ok = strings.IndexByte(key, '\\') < 0 && field(d, key, v)
			return ok
		})
		if ok {
			return nil
		}
	}
	var zero T
	*d = zero
	return json.Unmarshal(data, d)
}

func setString(p *string, v gjson.Result) bool {
	if v.Type != gjson.String {
		return false
	}
	raw := v.Raw[1 : len(v.Raw)-1]
	if strings.IndexByte(raw, '\\') < 0 && utf8.ValidString(raw) {
		*p = raw
		return true
	}
	return json.Unmarshal([]byte(v.Raw), p) == nil
}

func setStringPtr(p **string, v gjson.Result) bool {
	var s string
	if !setString(&s, v) {
		return false
	}
	*p = &s
	return true
}

func setIntPtr(p **int, v gjson.Result) bool {
	var n int
	if !setInt(&n, v) {
		return false
	}
	*p = &n
	return true
}

// setInt takes what encoding/json puts in an int: an integer without
// fraction or exponent.
// setTime decodes a time as encoding/json does: the raw string, quotes and
// escapes and all, to time.Time's UnmarshalJSON.
func setTime(p *time.Time, v gjson.Result) bool {
	return v.Type == gjson.String && p.UnmarshalJSON([]byte(v.Raw)) == nil
}

func setInt(p *int, v gjson.Result) bool {
	if v.Type != gjson.Number {
		return false
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	*p = int(n)
	return err == nil
}

func setStrings(p *[]string, v gjson.Result) bool {
	if !v.IsArray() {
		return false
	}
	out := []string{}
	ok := true
	v.ForEach(func(_, e gjson.Result) bool {
		var s string
		ok = setString(&s, e)
		out = append(out, s)
		return ok
	})
	*p = out
	return ok
}
