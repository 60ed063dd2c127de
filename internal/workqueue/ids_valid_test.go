package workqueue

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// ValidPrefix is the pattern it was written from, on every short string
// over the bytes that matter and on random longer ones.
func TestValidPrefixAsPattern(t *testing.T) {
	sameAsPattern(t, `^[a-z][a-z0-9]{0,15}$`, ValidPrefix, "aAz0-_.é")
}

// sameAsPattern checks valid against pattern on every string of up to 3
// of the bytes of alphabet, and on 20,000 random strings of up to 70.
func sameAsPattern(t *testing.T, pattern string, valid func(string) bool, alphabet string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	check := func(s string) {
		if valid(s) != re.MatchString(s) {
			t.Errorf("%q: %v, %s says %v", s, valid(s), pattern, re.MatchString(s))
		}
	}
	words := []string{""}
	for range 3 {
		var next []string
		for _, w := range words {
			for _, c := range []byte(alphabet) {
				next = append(next, w+string(c))
			}
		}
		for _, w := range next {
			check(w)
		}
		words = next
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(71) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		check(b.String())
		check("a" + strings.Repeat("b", r.IntN(70)))
	}
}
