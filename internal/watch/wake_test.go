package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/store"
)

// What wakes the watcher: the ping, a writer file, a new branch (in a new
// directory too) and packed refs; not git's own busywork (the index, lock
// files) nor spool's other private files.
func TestWakes(t *testing.T) {
	repo := gittest.New(t, nil)
	r, err := git.Discover(context.Background(), repo.Root)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(store.EventsDir(r), 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var warned []string
	wakes := Wakes(ctx, r, time.Hour, func(s string) { warned = append(warned, s) })
	if len(warned) > 0 {
		t.Fatalf("fsnotify could not be set up here: %q", warned)
	}
	drain := func() {
		for {
			select {
			case <-wakes:
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	woken := func(what string, act func()) {
		t.Helper()
		drain()
		act()
		select {
		case <-wakes:
		case <-time.After(5 * time.Second):
			t.Errorf("%s did not wake the watcher within 5 s", what)
		}
	}
	quiet := func(what string, act func()) {
		t.Helper()
		drain()
		act()
		select {
		case <-wakes:
			t.Errorf("%s woke the watcher", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	woken("a ping", func() { Ping(r) })
	woken("an append", func() { os.WriteFile(filepath.Join(store.EventsDir(r), "w1.jsonl"), []byte("{}\n"), 0o644) })
	woken("a commit", func() { repo.Commit(repo.Root, "a.txt", "a\n", "a") })
	woken("a branch in a new directory", func() { repo.Git(repo.Root, "branch", "feature/x") })
	woken("a ref under it", func() { repo.Git(repo.Root, "branch", "feature/y") })
	woken("packed refs", func() { repo.Git(repo.Root, "pack-refs", "--all") })
	quiet("git status", func() { repo.Git(repo.Root, "status") })
	quiet("another private file", func() { os.WriteFile(filepath.Join(r.PrivateDir(), "prd-cache"), []byte("x"), 0o644) })
}
