// Package jsontest makes random values for the tests that compare
// jsonout's appenders with encoding/json.
package jsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Std is what a json.Encoder writes for v at level (its prefix that many
// indents of two spaces), without the newline Encode ends with.
func Std(v any, level int, escapeHTML bool) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	enc.SetIndent(strings.Repeat("  ", level), "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// Same checks that appended (an AppendJSON at level and escapeHTML, after
// the bytes it is given) writes v as encoding/json does (Std), and
// reports whether encoding/json could write v; when it cannot, appended
// must report false too.
func Same(t testing.TB, v any, level int, escapeHTML bool, appended func(dst []byte) ([]byte, bool)) bool {
	t.Helper()
	want, err := Std(v, level, escapeHTML)
	got, ok := appended([]byte("prefix"))
	if err != nil {
		if ok {
			t.Fatalf("%#v: encoding/json fails (%v), AppendJSON does not", v, err)
		}
		return false
	}
	if !ok || string(got) != "prefix"+want {
		t.Fatalf("%#v, level %d, escapeHTML %v: ok %v, got\n%s\nwant\nprefix%s", v, level, escapeHTML, ok, got, want)
	}
	return true
}

// String is a string of the kinds of bytes encoding/json treats
// differently: HTML characters, quotes, control bytes, DEL, U+2028 and
// U+2029, other multi-byte runes, and invalid UTF-8 (stray continuation
// bytes, truncated sequences, surrogates, overlong forms); empty now and then.
func String(r *rand.Rand) string {
	pieces := []string{"a", "Z", " ", "<", ">", "&", `"`, `\`, "/", "\x00", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f",
		"é", "€", "😀", "\u2028", "\u2029", "\u2027", "\u202a", "\ufffd", "\x80", "\xbf", "\xc3", "\xe2\x80", "\xed\xa0\x80",
		"\xc0\xaf", "\xf4\x90\x80\x80", "\xff", "id-42", "<script>&amp;</script>"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// Time is the zero time now and then, else a time with or without
// nanoseconds in UTC, Local or an odd fixed zone, and rarely one
// MarshalJSON refuses (a year outside 0..9999, a zone of 24 hours or more).
func Time(r *rand.Rand) time.Time {
	if r.IntN(8) == 0 {
		return time.Time{}
	}
	return nonZeroTime(r)
}

func nonZeroTime(r *rand.Rand) time.Time {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", -9*3600-30*60), time.FixedZone("X", 5*3600+45*60),
		time.FixedZone("S", 3600+17)}
	year := 1 + r.IntN(3000)
	switch r.IntN(40) {
	case 0:
		year = 10000 + r.IntN(10)
	case 1:
		year = -r.IntN(10)
	case 2:
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 24*3600+r.IntN(3600)))
	}
	nsec := 0
	switch r.IntN(3) {
	case 0:
		nsec = r.IntN(1e9)
	case 1:
		nsec = r.IntN(1000) * 1e6
	}
	return time.Date(year, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), nsec, zones[r.IntN(len(zones))])
}

var timeType = reflect.TypeFor[time.Time]()

// Fill sets every field of the struct ptr points to at random, through
// embedded structs, pointers and slices' elements; a field is left zero
// (nil, empty) now and then, never when full. A kind it does not know
// panics: a new field's type is to be taught to it, not skipped.
func Fill(r *rand.Rand, ptr any, full bool) {
	fill(r, reflect.ValueOf(ptr).Elem(), full)
}

func fill(r *rand.Rand, v reflect.Value, full bool) {
	zero := !full && r.IntN(4) == 0
	switch {
	case v.Type() == timeType:
		t := Time(r)
		if full {
			t = nonZeroTime(r)
		}
		v.Set(reflect.ValueOf(t))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i), full)
		}
	case zero:
	case v.Kind() == reflect.String:
		s := String(r)
		if full && s == "" {
			s = "x"
		}
		v.SetString(s)
	case v.Kind() == reflect.Int, v.Kind() == reflect.Int64:
		n := r.Int64() >> r.IntN(64)
		if r.IntN(2) == 0 {
			n = -n
		}
		v.SetInt(n)
	case v.Kind() == reflect.Uint64:
		v.SetUint(r.Uint64() >> r.IntN(64))
	case v.Kind() == reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem(), full)
	case v.Kind() == reflect.Slice:
		n := 1 + r.IntN(3)
		if !full && r.IntN(3) == 0 {
			n = 0 // empty, not nil
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(r, v.Index(i), full)
		}
	default:
		panic(fmt.Sprintf("jsontest.Fill: no values for %s", v.Type()))
	}
}
