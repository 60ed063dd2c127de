package refname

import "testing"

func TestCheckBranch(t *testing.T) {
	for name, ok := range map[string]bool{
		"main": true, "release/1.4": true, "feature-x_y.z": true, "héllo": true,
		"": false, "@": false, "-x": false, "/x": false, "x/": false, "a//b": false, "x.": false,
		"x.lock": false, "a/b.lock/c": false, "../../etc": false, "a..b": false, "a@{1}": false,
		".hidden": false, "a/.b": false, "a b": false, "a~1": false, "a^": false, "a:b": false,
		"a?": false, "a*": false, "a[": false, `a\b`: false, "a\x01": false,
	} {
		if err := CheckBranch(name); (err == nil) != ok {
			t.Errorf("CheckBranch(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
