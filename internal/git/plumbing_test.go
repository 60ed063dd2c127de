package git

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// RemoteExists finds what git remote get-url finds: a remote in the
// repository's config without running git, one in an included file by
// asking git, and no remote that is only a section header or a path.
func TestRemoteExists(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	other := filepath.Join(t.TempDir(), "other.config")
	r.Write(filepath.Dir(other), filepath.Base(other), "[remote \"included\"]\n\turl = "+r.Remote+"\n")
	r.Git(r.Root, "config", "include.path", other)
	config, err := os.ReadFile(filepath.Join(r.Root, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	r.Write(r.Root, ".git/config", string(config)+"[remote \"empty\"]\n")
	for _, tc := range []struct {
		remote string
		want   bool
	}{{"origin", true}, {"included", true}, {"empty", false}, {"nope", false}, {r.Remote, false}} {
		if got := RemoteExists(ctx, r.Root, tc.remote); got != tc.want {
			t.Errorf("RemoteExists(%q) = %v, want %v", tc.remote, got, tc.want)
		}
	}
	t.Setenv("PATH", "") // no git: only what the config file says
	if !RemoteExists(ctx, r.Root, "origin") {
		t.Error("origin, in .git/config, was not found without git")
	}
}

// A remote is local when git would reach it as a path, the way git reads
// a URL: scheme://, or host:path (a colon before any slash) is another
// machine.
func TestIsLocalURL(t *testing.T) {
	for url, want := range map[string]bool{
		"/srv/git/remote.git": true, "../remote.git": true, "remote.git": true, "file:///srv/remote.git": true,
		"./a:b": true, "/tmp/a:b": true,
		"git@github.com:spoolhq/spool.git": false, "host:remote.git": false, "ssh://host/remote.git": false, "https://github.com/spoolhq/spool": false,
	} {
		if got := isLocalURL(url); got != want {
			t.Errorf("isLocalURL(%q) = %v, want %v", url, got, want)
		}
	}
}
