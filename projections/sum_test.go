package projections

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// The checkpoint's sum is a CRC-32C now; a checkpoint written with a
// SHA-256 (before) still loads, and either notices a changed byte.
func TestCheckpointSums(t *testing.T) {
	body := []byte(`{"s0":1,"s1":2}`)
	d := sha256.Sum256(body)
	old := hex.EncodeToString(d[:])
	sum := bodySum(body)
	if !strings.HasPrefix(sum, sumPrefix) || len(sum) != len(sumPrefix)+8 {
		t.Fatalf("bodySum = %q", sum)
	}
	if !sumMatches(sum, body) || !sumMatches(old, body) {
		t.Fatal("a body does not match its own sum")
	}
	for i := range body {
		bad := []byte(string(body))
		bad[i] ^= 0x20
		if sumMatches(sum, bad) || sumMatches(old, bad) {
			t.Fatalf("a change at %d went unnoticed", i)
		}
	}
	for _, s := range []string{"", "crc32c:", "crc32c:zz", sumPrefix + strings.Repeat("0", 8)} {
		if sumMatches(s, body) {
			t.Fatalf("%q matches", s)
		}
	}
}
