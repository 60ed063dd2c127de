package ids

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func TestNew(t *testing.T) {
	if Length(0) != 4 || Length(100) != 4 || Length(10_000) < 6 {
		t.Fatalf("lengths %d %d %d", Length(0), Length(100), Length(10_000))
	}
	seen := map[string]bool{}
	for i := 0; i < 3000; i++ {
		// Same title and time on every call: only the collision check separates them.
		id := New("sp", "w", "same", t0, len(seen), func(id string) bool { return seen[id] })
		if seen[id] {
			t.Fatalf("duplicate %s", id)
		}
		seen[id] = true
	}
	a := New("sp", "clone-a", "t", t0, 0, func(string) bool { return false })
	b := New("sp", "clone-b", "t", t0, 0, func(string) bool { return false })
	if a == b {
		t.Fatalf("two clones made the same id %s", a)
	}
}

// ForKey is a function of the key alone: every clone derives the same id,
// and two keys two ids.
func TestForKey(t *testing.T) {
	a, b := ForKey("sp", "prd-a:1"), ForKey("sp", "prd-a:2")
	if a != ForKey("sp", "prd-a:1") || a == b {
		t.Fatalf("ForKey: %s, %s", a, b)
	}
	if len(a) != len("sp-")+8 || a[:3] != "sp-" {
		t.Fatalf("ForKey = %q, want sp- and 8 characters", a)
	}
}
