package mergequeue

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written check must accept exactly what the regexp it replaces did.
func TestHeadSHACheckMatchesRegexp(t *testing.T) {
	sha := regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	inputs := []string{"", "a", "A1", strings.Repeat("0", 40), strings.Repeat("f", 64),
		strings.Repeat("F", 40), strings.Repeat("0", 39), strings.Repeat("0", 41), strings.Repeat("g", 40)}
	for _, s := range inputs {
		if got, want := ValidHeadSHA(s), sha.MatchString(s); got != want {
			t.Errorf("ValidHeadSHA(%q) = %v, want %v", s, got, want)
		}
	}
}

// Display names are what a directory may be called; identities are not
// names people type, and never hold ':' or whitespace.
func TestWorkspaceNamesAndIdentities(t *testing.T) {
	for name, ok := range map[string]bool{"feat": true, "with space": true, "a:b": true, "été": true, "-x": true,
		"": false, "a\tb": false, "a\nb": false, "a\x00b": false, "a\x7fb": false, "a\u0085b": false, "a\xff": false,
		strings.Repeat("a", 255): true, strings.Repeat("a", 256): false} {
		if err := ValidateWorkspaceName(name); (err == nil) != ok {
			t.Errorf("ValidateWorkspaceName(%q) = %v, want ok %v", name, err, ok)
		}
	}
	ids := map[string]string{"": "w1", "feat": "w1/feat", "with space": "w1/with%20space", "a:b": "w1/a%3Ab",
		"a%20b": "w1/a%2520b", "été": "w1/%C3%A9t%C3%A9", "x/y": "w1/x%2Fy", "-dot.1_": "w1/-dot.1_"}
	seen := map[string]bool{}
	for gitID, want := range ids {
		got := WorkspaceID("w1", gitID)
		if got != want {
			t.Errorf("WorkspaceID(w1, %q) = %q, want %q", gitID, got, want)
		}
		if seen[got] {
			t.Errorf("two git ids give %q", got)
		}
		seen[got] = true
		if err := ValidateWorkspaceID(got); err != nil {
			t.Errorf("ValidateWorkspaceID(%q): %v", got, err)
		}
		if err := ValidateDedupeKey(ComputeDedupeKey("I1", got)); err != nil {
			t.Errorf("dedupe key of %q: %v", got, err)
		}
	}
	for _, bad := range []string{"", "a:b", "a b", "a\tb"} {
		if ValidateWorkspaceID(bad) == nil {
			t.Errorf("ValidateWorkspaceID(%q) accepted", bad)
		}
	}
}
