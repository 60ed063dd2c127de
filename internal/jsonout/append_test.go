package jsonout

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jsonout/jsontest"
)

func TestAppendStringAsTheLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := []string{"", "plain", "\u2028\u2029", "\xe2\x80\xa8", "\xe2\x80", "<>&", "\x7f\x00\x1f\x20"}
	for range 5000 {
		all = append(all, jsontest.String(r))
	}
	for b := range 256 { // every byte alone
		all = append(all, string([]byte{byte(b)}))
	}
	for _, s := range all {
		for _, escape := range []bool{true, false} {
			want, _ := jsontest.Std(s, 0, escape)
			if got := string(AppendString(nil, s, escape)); got != want {
				t.Fatalf("%q escapeHTML %v: got %s, want %s", s, escape, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "<a href=\"x\">&</a>", "\u2028", "\xff\xfe", "tab\there\n", "\x00\x1f\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, escape := range []bool{true, false} {
			want, _ := jsontest.Std(s, 0, escape)
			if got := string(AppendString(nil, s, escape)); got != want {
				t.Fatalf("%q escapeHTML %v: got %s, want %s", s, escape, got, want)
			}
		}
	})
}

// inner and outer use every helper of Object, nested, as the work queue's
// types do.
type inner struct {
	N  int64     `json:"n"`
	At time.Time `json:"at"`
}

func (v inner) AppendJSON(dst []byte, f Format) ([]byte, bool) {
	o := NewObject(dst, f)
	o.Int("n", v.N)
	o.Time("at", v.At)
	return o.End()
}

type outer struct {
	S    string     `json:"s"`
	SO   string     `json:"s_o,omitempty"`
	I    int64      `json:"i"`
	B    bool       `json:"b"`
	T    time.Time  `json:"t"`
	TP   *time.Time `json:"tp,omitempty"`
	L    []string   `json:"l,omitempty"`
	List []inner    `json:"list,omitempty"`
}

func (v outer) AppendJSON(dst []byte, f Format) ([]byte, bool) {
	o := NewObject(dst, f)
	o.String("s", v.S)
	o.StringOmitEmpty("s_o", v.SO)
	o.Int("i", v.I)
	o.Bool("b", v.B)
	o.Time("t", v.T)
	o.TimeOmitNil("tp", v.TP)
	o.StringsOmitEmpty("l", v.L)
	ListOmitEmpty(&o, "list", v.List)
	return o.End()
}

// empty has no field to write: encoding/json writes {}.
type empty struct {
	S string `json:"s,omitempty"`
}

func (v empty) AppendJSON(dst []byte, f Format) ([]byte, bool) {
	o := NewObject(dst, f)
	o.StringOmitEmpty("s", v.S)
	return o.End()
}

func randOuter(r *rand.Rand) outer {
	var v outer
	jsontest.Fill(r, &v, false)
	return v
}

// Object writes what encoding/json writes, at every level, or declines
// where encoding/json fails.
func TestObjectAsTheLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	values := []Appender{empty{}, empty{S: "<x>"}, outer{}, inner{}}
	for range 3000 {
		values = append(values, randOuter(r))
	}
	failed := 0
	for _, v := range values {
		for _, escape := range []bool{true, false} {
			level := r.IntN(4)
			if !jsontest.Same(t, v, level, escape, func(dst []byte) ([]byte, bool) {
				return v.AppendJSON(dst, Format{Level: level, EscapeHTML: escape})
			}) {
				failed++
			}
		}
	}
	if failed == 0 {
		t.Error("no value encoding/json refuses was tried")
	}
}

// WriteList writes Appenders as encoding/json does, and a list holding
// one that declines fails as encoding/json fails.
func TestWriteListAppenders(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		v := make([]outer, 1+r.IntN(4))
		for i := range v {
			v[i] = randOuter(r)
		}
		for _, escape := range []bool{true, false} {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(escape)
			enc.SetIndent("", "  ")
			wantErr := enc.Encode(v)
			err := WriteList(&got, len(v), func(i int) any { return v[i] }, escape)
			if wantErr != nil {
				if err == nil || err.Error() != wantErr.Error() {
					t.Fatalf("error %v, want %v", err, wantErr)
				}
				continue
			}
			if err != nil || got.String() != want.String() {
				t.Fatalf("escapeHTML %v: %v, got\n%s\nwant\n%s", escape, err, got.String(), want.String())
			}
		}
	}
}
