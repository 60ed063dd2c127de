package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// writeJSON writes a list an item at a time, byte for byte as json.Encoder writes it whole.
func TestWriteJSONStreamsLikeEncoder(t *testing.T) {
	type item struct {
		ID    string         `json:"id"`
		Tags  []string       `json:"tags,omitempty"`
		Inner map[string]any `json:"inner,omitempty"`
		HTML  string         `json:"html"`
	}
	for _, v := range []any{
		[]item{{ID: "a"}, {ID: "b", Tags: []string{"x", "y"}, Inner: map[string]any{"k": []int{1, 2}}, HTML: "<b>&</b>"}},
		[]item{{ID: "only"}},
		[]item{},
		[]item(nil),
		[]string{"a", "b"},
		[]int{},
		map[string]int{"a": 1},
		item{ID: "x"},
	} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(&got, v); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%T: got\n%s\nwant\n%s", v, got.String(), want.String())
		}
	}
}
