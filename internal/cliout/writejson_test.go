package cliout

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/spoolhq/spool/internal/jsonout/jsontest"
	"github.com/spoolhq/spool/internal/workqueue"
)

// WriteJSON writes a list an item at a time, byte for byte as json.Encoder writes it whole.
func TestWriteJSONStreamsLikeEncoder(t *testing.T) {
	t.Parallel()
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
		if err := WriteJSON(&got, v); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%T: got\n%s\nwant\n%s", v, got.String(), want.String())
		}
	}
}

// The lists ready, task list, bd list and history print write themselves
// (jsonout.Appender): still the bytes json.Encoder writes for the whole.
func TestWriteJSONTaskLists(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for range 100 {
		for _, v := range []any{
			randSlice[workqueue.TaskJSON](r),
			randSlice[workqueue.ListItemJSON](r),
			randSlice[workqueue.EntryJSON](r),
			randSlice[workqueue.DetailJSON](r),
		} {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			wantErr := enc.Encode(v)
			err := WriteJSON(&got, v)
			if (err == nil) != (wantErr == nil) || err == nil && got.String() != want.String() {
				t.Fatalf("%T: %v (encoding/json: %v), got\n%s\nwant\n%s", v, err, wantErr, got.String(), want.String())
			}
		}
	}
}

// randSlice is one to three values of T with their fields filled at random.
func randSlice[T any](r *rand.Rand) []T {
	v := make([]T, 1+r.IntN(3))
	for i := range v {
		jsontest.Fill(r, &v[i], false)
	}
	return v
}
