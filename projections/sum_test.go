package projections

import (
	"strings"
	"testing"
)

// The checkpoint's sum notices any changed byte.
func TestCheckpointSums(t *testing.T) {
	body := []byte(`{"s0":1,"s1":2}`)
	sum := bodySum(body)
	if !strings.HasPrefix(sum, sumPrefix) || len(sum) != len(sumPrefix)+8 {
		t.Fatalf("bodySum = %q", sum)
	}
	if !sumMatches(sum, body) {
		t.Fatal("a body does not match its own sum")
	}
	for i := range body {
		bad := []byte(string(body))
		bad[i] ^= 0x20
		if sumMatches(sum, bad) {
			t.Fatalf("a change at %d went unnoticed", i)
		}
	}
	for _, s := range []string{"", "crc32:", "crc32:zz", sumPrefix + strings.Repeat("0", 8), "crc32c:" + sum[len(sumPrefix):]} {
		if sumMatches(s, body) {
			t.Fatalf("%q matches", s)
		}
	}
}
