package main

import (
	"runtime/debug"
	"testing"
)

func TestRowAndClip(t *testing.T) {
	t.Parallel()
	if got := row("a", "b", "", ""); got != "a\tb\n" {
		t.Errorf("row = %q", got)
	}
	if got := row("a", "", "c"); got != "a\t\tc\n" {
		t.Errorf("row = %q", got)
	}
	if got := clip("ééééé", 7); got != "éé..." {
		t.Errorf("clip = %q", got)
	}
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip = %q", got)
	}
}

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	info := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123184500-0123456789ab"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}
	if v, rev := buildVersion(info, true); v != "v0.0.0-20261123184500-0123456789ab" || rev != "0123456789abcdef+dirty" {
		t.Errorf("buildVersion = %q, %q", v, rev)
	}
	info = &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	if v, rev := buildVersion(info, true); v != "dev" || rev != "" {
		t.Errorf("devel build: %q, %q", v, rev)
	}
	if v, _ := buildVersion(nil, false); v != "dev" {
		t.Errorf("no build info: %q", v)
	}
}
