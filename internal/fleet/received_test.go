package fleet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// In a fresh clone the sync cache knows each writer file taken whole from
// its blob by the receive, without reading it: its blob and lines, for as
// long as the file is unchanged (an append makes it read again).
func TestCacheKnowsTheFilesTakenWhole(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	ctx := context.Background()
	st := openStore(t, r)
	tick(t, st, 3)
	// The log as another clone pushed it, on git's tracking ref.
	path := st.Log.Dir()
	files, _ := filepath.Glob(filepath.Join(path, "*"+eventlog.Ext))
	if len(files) != 1 {
		t.Fatalf("writer files %v", files)
	}
	name := filepath.Base(files[0])
	blob := r.Git(r.Root, "hash-object", "-w", files[0])
	tree := mktree(t, r, "100644 blob "+blob+"\t"+name)
	root := mktree(t, r, "040000 tree "+tree+"\tevents")
	r.Git(r.Root, "update-ref", "refs/remotes/origin/spool-log", r.Git(r.Root, "commit-tree", root, "-m", "spool: events"))
	os.RemoveAll(filepath.Join(r.Root, ".git", "spool")) // a fresh clone
	st = openStore(t, r)
	if _, err := st.Read(ctx, "stats"); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(store.EventsDir(st.Repo), name)
	c := loadCache(st)
	if e, ok := c.unchanged(local); !ok || e.Hash != blob || e.Lines != 3 || c.lines[blob] != 3 {
		t.Fatalf("after the receive: %+v, %v; lines %v", e, ok, c.lines)
	}
	tick(t, st, 1) // to this clone's own file; the received one is as it was
	if e, ok := loadCache(st).unchanged(local); !ok || e.Hash != blob {
		t.Fatalf("after an append elsewhere: %+v, %v", e, ok)
	}
	f, err := os.OpenFile(local, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
	if _, ok := loadCache(st).unchanged(local); ok {
		t.Fatal("a file that grew is still taken for its blob")
	}
}

func mktree(t *testing.T, r *gittest.Repo, entries string) string {
	t.Helper()
	cmd := exec.Command("git", "mktree")
	cmd.Dir, cmd.Stdin = r.Root, strings.NewReader(entries+"\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A claim through the remote integrates, then replaces its own file's
// snapshot with the file and the claim's lines: the file as it was is
// never stored as a blob (a zlib pass over the whole file at every claim,
// and an object nothing references).
func TestClaimStoresItsOwnFileOnce(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	ctx := context.Background()
	st := openStore(t, r)
	tick(t, st, 3)
	sess, err := st.Log.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	name := sess.Writer() + eventlog.Ext
	before := r.Git(r.Root, "hash-object", filepath.Join(st.Log.Dir(), name)) // not written
	c := loadCache(st)
	snaps, _, err := integrateIn(ctx, st, sess, Options{Remote: "origin", Branch: "spool-log"}, map[string]git.Blob{}, c)
	if err == nil {
		snaps, err = withLines(snaps, st.Log.Dir(), name, []byte("{}\n"))
	}
	if err == nil {
		_, _, err = writeTree(ctx, r.Root, snaps, map[string]git.Blob{}, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("git", "-C", r.Root, "cat-file", "-e", before).Run() == nil {
		t.Fatalf("the own file before the claim's lines was stored as blob %s", before)
	}
}

func openStore(t *testing.T, r *gittest.Repo) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), r.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tick appends n events, one command each.
func tick(t *testing.T, st *store.Store, n int) {
	t.Helper()
	for range n {
		if _, _, err := st.Write(context.Background(), time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC), "ada", nil, func(*projections.View) ([]eventlog.Draft, error) {
			return []eventlog.Draft{{Type: "test.tick", Subject: "x"}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// follow moves the local sync branch forward to the remote's tip, leaves
// it where another spool of the clone took it (to the tip, or past it:
// that spool's sync or claim ran meanwhile), and refuses a branch that is
// not spool's.
func TestFollow(t *testing.T) {
	r, st, o, c1, c2 := followRepo(t)
	ctx := context.Background()
	other := r.Git(r.Root, "commit-tree", r.Git(r.Root, "mktree", "--missing"), "-m", "someone's branch")
	for _, tc := range []struct {
		at, to, want string
		foreign      bool
	}{
		{"", c1, c1, false},      // none yet
		{c1, c2, c2, false},      // forward
		{c2, c2, c2, false},      // there already
		{c2, c1, c2, false},      // past it: left
		{other, c2, other, true}, // not spool's
	} {
		if tc.at == "" {
			r.Git(r.Root, "update-ref", "-d", LocalRef(o))
		} else {
			r.Git(r.Root, "update-ref", LocalRef(o), tc.at)
		}
		err := follow(ctx, st, o, tc.to)
		if f, ok := fault.As(err); tc.foreign != (ok && f.Has(CodeSyncBranchForeign)) || !tc.foreign && err != nil {
			t.Errorf("from %.7s to %.7s: %v", tc.at, tc.to, err)
		}
		if got := r.Git(r.Root, "rev-parse", LocalRef(o)); got != tc.want {
			t.Errorf("from %.7s to %.7s: the branch is at %.7s, want %.7s", tc.at, tc.to, got, tc.want)
		}
	}
}

// Another spool of the clone moves the branch to the tip while follow
// waits for the lock on it: follow reads it again there, and leaves it.
func TestFollowWhileAnotherMovesIt(t *testing.T) {
	r, st, o, c1, c2 := followRepo(t)
	ctx := context.Background()
	r.Git(r.Root, "update-ref", LocalRef(o), c1)
	unlock, ok, err := st.Mutex(ctx, "sync-ref", 5*time.Second)
	if err != nil || !ok {
		t.Fatal("the lock on the sync refs", err)
	}
	done := make(chan error, 1)
	go func() { done <- follow(ctx, st, o, c2) }()
	time.Sleep(200 * time.Millisecond) // follow has read the branch, and waits
	r.Git(r.Root, "update-ref", LocalRef(o), c2, c1)
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("follow after another spool moved the branch: %v", err)
	}
}

// followRepo is a clone's store and two commits of its sync branch, the
// second on the first.
func followRepo(t *testing.T) (r *gittest.Repo, st *store.Store, o Options, c1, c2 string) {
	t.Helper()
	r = gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	tree := r.Git(r.Root, "mktree", "--missing")
	c1 = r.Git(r.Root, "commit-tree", tree, "-m", "one")
	c2 = r.Git(r.Root, "commit-tree", tree, "-p", c1, "-m", "two")
	return r, openStore(t, r), Options{Remote: "origin", Branch: "spool-log"}, c1, c2
}
