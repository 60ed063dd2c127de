package workqueue

import (
	"strings"
	"testing"
)

func TestFoldFinder(t *testing.T) {
	for _, tc := range []struct {
		b, q string
		want bool
	}{
		{"Fix the login page", "login", true},
		{"Fix the LOGIN page", "login page", true},
		{"Fix the login page", "fix", true},
		{"Fix the login page", "logout", false},
		{"xlogi", "login", false}, // cut short by the end
		{"ogin", "login", false},  // the anchor's place is before the start
		{"\u212aelvin", "kelv", true},
		{"\u0130stanbul", "istan", true},
		{"\u212aelvin", "elvis", false},
		{"a\xffb", "ab", false}, // an invalid byte lowers to U+FFFD
		{"zzz", "z", true},
		{"say \"hi\"", "\"hi\"", true},
	} {
		find := foldFinder(tc.q, nil)
		if got := find(tc.b); got != tc.want {
			t.Errorf("foldFinder(%q)(%q) = %v, want %v", tc.q, tc.b, got, tc.want)
		}
	}
	if foldFinder("ünï", nil) != nil {
		t.Error("a query that is not ASCII got a finder")
	}
}

// FuzzFoldFinder: a text that strings.ToLower makes hold the query is
// never passed over.
func FuzzFoldFinder(f *testing.F) {
	for _, s := range [][2]string{{"Fix the login page", "LOGIN"}, {"\u212aelvin", "kel"}, {"\u0130", "i"}, {"a\xffb", "b"}, {"ÉCOLE école", "cole"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, b, q string) {
		lq := strings.ToLower(q)
		find := foldFinder(lq, []string{b[:len(b)/2]}) // any byte may be the anchor
		if find == nil {
			return
		}
		if strings.Contains(strings.ToLower(b), lq) && !find(b) {
			t.Fatalf("%q lowers to hold %q, and the finder passed it over", b, lq)
		}
	})
}
