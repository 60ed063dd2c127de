package eventlog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzAppendLine: AppendLine writes what Encode writes, for any data and
// any strings, or fails as Encode fails.
func FuzzAppendLine(f *testing.F) {
	f.Add([]byte(`{"title":"a b","n":[1,2.5e3,null,true]}`), "ada@example.com", "task.created", "sp-1", "", "", int64(1767225600), int64(123456789), 0, uint64(3), true)
	f.Add([]byte(`{ "title" : "spaced" }`), "", "x", "", "idem", "sig", int64(0), int64(0), 3600, uint64(0), false)
	f.Add([]byte(`"<&>\u2028"`), "<b>", "\u2028", "\xff", "", "", int64(-62135596800), int64(0), -1800, uint64(1), false)
	f.Add([]byte(`{"a":"\"}"}`), "a", "t", "s", "", "", int64(253402300800), int64(1), 0, uint64(7), false) // year 10000: refused
	f.Add([]byte(`{"a":1}`), "a", "t", "s", "", "", int64(5), int64(0), 86400, uint64(7), false)            // a zone a day ahead: refused
	f.Add([]byte(`{"a":1,}`), "a", "t", "s", "", "", int64(5), int64(0), 0, uint64(7), false)
	f.Add([]byte(``), "a", "t", "", "", "", int64(5), int64(0), 0, uint64(7), false)
	f.Fuzz(func(t *testing.T, data []byte, actor, typ, subject, idem, sig string, sec, nsec int64, zone int, seq uint64, more bool) {
		at := time.Unix(sec, nsec).In(time.FixedZone("z", zone))
		e := &Event{V: 1, ID: "0123456789abcdef01234567", Writer: "w1", Seq: seq, Prev: subject, LC: seq / 2,
			At: at, Actor: actor, Type: typ, Subject: subject, Idem: idem, Data: json.RawMessage(data), More: more, Sig: sig}
		want, wantErr := e.Encode()
		got, err := e.AppendLine([]byte("kept"))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("AppendLine: %v, Encode: %v", err, wantErr)
		}
		if !bytes.HasPrefix(got, []byte("kept")) {
			t.Fatalf("dst's bytes lost: %q", got)
		}
		if err == nil && !bytes.Equal(got[4:], want) {
			t.Fatalf("AppendLine:\n%s\nEncode:\n%s", got[4:], want)
		}
	})
}
