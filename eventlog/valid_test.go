package eventlog

import (
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzMembersMatchGJSON: members accepts what gjson.Valid accepts, and
// finds the members fieldsAt finds.
func FuzzMembersMatchGJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{``, ` `, `{`, `}`, `{}`, ` {} `, `{} x`, `{,}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`,
		`[]`, `[1,]`, `[,1]`, `[1 2]`, `"x"`, `"\u12"`, `"\u12g4"`, `"\x"`, "\"\x01\"", `"\"`, `-`, `-0`, `01`, `1.`, `1.5e`, `1e+`,
		`1E-7`, `-0.0e0`, `tru`, `true`, `nul`, `falsey`, `{"a":[{"b":[]}],"c":{"d":"\\\""}}`, `{"a":1}}`, `{"k\"ey":"v\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		ms, valid, object := members(s, nil)
		if valid != gjson.ValidBytes(s) {
			t.Fatalf("%q: valid %v, gjson says %v", s, valid, !valid)
		}
		if !valid {
			return
		}
		var want []member
		err := fieldsAt(s, func(key []byte, start, end int) error {
			want = append(want, member{valStart: start, valEnd: end})
			return nil
		})
		if object != (err == nil) {
			t.Fatalf("%q: object %v, fieldsAt: %v", s, object, err)
		}
		if !object {
			return
		}
		if len(ms) != len(want) {
			t.Fatalf("%q: %d members, fieldsAt %d", s, len(ms), len(want))
		}
		for i := range ms {
			if ms[i].valStart != want[i].valStart || ms[i].valEnd != want[i].valEnd {
				t.Fatalf("%q: member %d at %+v, fieldsAt %+v", s, i, ms[i], want[i])
			}
		}
	})
}
