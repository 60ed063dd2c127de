package mergequeue

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written checks must accept exactly what the regexps they replace did.
func TestNameChecksMatchRegexps(t *testing.T) {
	name := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	sha := regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	inputs := []string{"", "a", "A1", "feature-x", "x.y_z-1", "-x", ".x", "_x", "a b", "a/b", "é", "a\n",
		strings.Repeat("a", 100), strings.Repeat("a", 101), strings.Repeat("0", 40), strings.Repeat("f", 64),
		strings.Repeat("F", 40), strings.Repeat("0", 39), strings.Repeat("0", 41), strings.Repeat("g", 40)}
	for _, s := range inputs {
		if got, want := plainName(s), name.MatchString(s); got != want {
			t.Errorf("plainName(%q) = %v, want %v", s, got, want)
		}
		if got, want := ValidHeadSHA(s), sha.MatchString(s); got != want {
			t.Errorf("ValidHeadSHA(%q) = %v, want %v", s, got, want)
		}
	}
}
