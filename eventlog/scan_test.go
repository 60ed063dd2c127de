package eventlog

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestFieldsMatchesGJSON checks the hot-path walker against gjson on tricky objects.
func TestFieldsMatchesGJSON(t *testing.T) {
	for _, obj := range []string{
		`{}`,
		` { "a" : 1 , "b":"x" } `,
		`{"k\"ey":"v\\","data":{"s":"}{][\"","n":[1,{"x":"]"}]},"z":null}`,
		`{"a":"\\\\","b":"\\\"}","c":[],"d":{},"e":true,"f":-1.5e3}`,
		`{"data":"\u00e9\n","x":"é"}`,
	} {
		if !gjson.Valid(obj) {
			t.Fatalf("test object not valid: %s", obj)
		}
		want := map[string]string{}
		gjson.Parse(obj).ForEach(func(k, v gjson.Result) bool { want[k.String()] = v.Raw; return true })
		got := map[string]string{}
		if err := fields(obj, func(k, raw string) error { got[k] = raw; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %v, want %v", obj, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: key %q: got %q, want %q", obj, k, got[k], v)
			}
		}
	}
}

func TestUintValue(t *testing.T) {
	for raw, want := range map[string]uint64{"0": 0, "7": 7, "18446744073709551615": 1<<64 - 1} {
		if got, err := uintValue("n", []byte(raw)); err != nil || got != want {
			t.Errorf("%s: got %d, %v", raw, got, err)
		}
	}
	for _, raw := range []string{"", "-1", "01", "1.5", "1e3", "18446744073709551616", `"1"`} {
		if _, err := uintValue("n", []byte(raw)); err == nil {
			t.Errorf("%s: accepted", raw)
		}
	}
}

// fields is fieldsAt with each raw value rather than its range.
func fields(s string, fn func(key, raw string) error) error {
	return fieldsAt([]byte(s), func(key []byte, start, end int) error { return fn(string(key), s[start:end]) })
}
