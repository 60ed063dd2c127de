package workqueue

import (
	"maps"
	"testing"
)

// A label's count that reaches 0 goes: bd label list-all does not list a
// label no task has any more. The blocked label is never counted.
func TestCountLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before map[string]int
		labels []string
		k      int
		want   map[string]int
	}{
		{"added", map[string]int{}, []string{"ui", BlockedLabel}, 1, map[string]int{"ui": 1}},
		{"counted again", map[string]int{"ui": 1}, []string{"ui", "api"}, 1, map[string]int{"ui": 2, "api": 1}},
		{"taken out", map[string]int{"ui": 2, "api": 1}, []string{"ui"}, -1, map[string]int{"ui": 1, "api": 1}},
		{"the last one", map[string]int{"ui": 1, "api": 1}, []string{"ui", BlockedLabel}, -1, map[string]int{"api": 1}},
	} {
		n := maps.Clone(tc.before)
		countLabels(n, &Task{Labels: tc.labels}, tc.k)
		if !maps.Equal(n, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, n, tc.want)
		}
	}
}
