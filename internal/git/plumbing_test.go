package git

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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

// spool's pushes of its branch leave the user's remote-tracking refs
// alone (a git fetch running meanwhile would fail to lock them), and still
// go where git would push: the remote's pushurl, through its receivepack,
// or to a remote given as a path. A remote of the user's named as the
// stand-in is not mixed with it, and a setting given by its name alone
// stays true.
func TestPushLeavesTrackingRefs(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	tracked := r.Git(r.Root, "rev-parse", "refs/remotes/origin/main")
	pushTo := filepath.Join(t.TempDir(), "push.git")
	r.Git(r.Root, "init", "-q", "--bare", "-b", "main", pushTo)
	r.Git(r.Root, "push", "-q", pushTo, "main")
	r.Git(r.Root, "config", "remote.origin.pushurl", pushTo)
	received := filepath.Join(t.TempDir(), "received")
	r.Git(r.Root, "config", "remote.origin.receivepack", "touch "+received+"; git-receive-pack")
	r.Git(r.Root, "remote", "add", standIn, r.Remote) // the user's own, fetched into refs/remotes/spool-push/
	r.Git(r.Root, "fetch", "-q", standIn)
	theirs := r.Git(r.Root, "rev-parse", "refs/remotes/"+standIn+"/main")
	config, _ := os.ReadFile(filepath.Join(r.Root, ".git", "config"))
	r.Write(r.Root, ".git/config", string(config)+"[remote \"origin\"]\n\tprune\n")

	via, name, err := pushVia(ctx, r.Root, "origin")
	if err != nil || name != standIn+"-1" || !slices.Contains(via, "remote."+standIn+"-1.prune") {
		t.Fatalf("pushVia: %q through %q, %v", via, name, err)
	}
	commit := r.Commit(r.Root, "f", "one", "one")
	if err := PushCommit(ctx, r.Root, "origin", commit, "main", true); err != nil {
		t.Fatal(err)
	}
	if got := r.Git(pushTo, "rev-parse", "main"); got != commit {
		t.Errorf("the push URL's main is %s, want %s", got, commit)
	}
	if _, err := os.Stat(received); err != nil {
		t.Error("the remote's receivepack did not run")
	}
	if got := r.Git(r.Remote, "rev-parse", "main"); got != tracked {
		t.Error("the push went to the fetch URL, not the push URL")
	}
	for ref, want := range map[string]string{"refs/remotes/origin/main": tracked, "refs/remotes/" + standIn + "/main": theirs} {
		if got := r.Git(r.Root, "rev-parse", ref); got != want {
			t.Errorf("%s moved to %s", ref, got)
		}
	}
	commit = r.Commit(r.Root, "f", "by path", "by path")
	if err := PushCommit(ctx, r.Root, r.Remote, commit, "main", false); err != nil {
		t.Fatal(err)
	}
	if got := r.Git(r.Remote, "rev-parse", "main"); got != commit {
		t.Errorf("a push to a path left main at %s", got)
	}
}
