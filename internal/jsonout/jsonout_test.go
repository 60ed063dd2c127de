package jsonout

import (
	"bytes"
	"encoding/json"
	"testing"
)

// WriteList writes what json.Encoder writes for the whole list.
func TestWriteListAsTheLibrary(t *testing.T) {
	type item struct {
		ID    string         `json:"id"`
		Title string         `json:"title"`
		Tags  []string       `json:"tags,omitempty"`
		Inner map[string]any `json:"inner,omitempty"`
	}
	all := []item{{ID: "a", Title: `<b>html</b> & "quotes"`}, {ID: "b", Title: "second", Tags: []string{"x", "y"}, Inner: map[string]any{"k": []int{1, 2}}}}
	for _, escape := range []bool{true, false} {
		for _, v := range [][]item{{}, all[:1], all} {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(escape)
			enc.SetIndent("", "  ")
			enc.Encode(v)
			if err := WriteList(&got, len(v), func(i int) any { return v[i] }, escape); err != nil || got.String() != want.String() {
				t.Errorf("escape %v, %d items: got\n%s\nwant\n%s", escape, len(v), got.String(), want.String())
			}
		}
	}
}
