package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

var (
	buildOnce sync.Once
	spoolBin  string
	buildErr  error
)

// spoolOnPath builds the spool binary once and puts it on PATH, for git to
// run it as the merge driver.
func spoolOnPath(t *testing.T) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build spool for the merge driver")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spool-bin-")
		if err != nil {
			buildErr = err
			return
		}
		spoolBin = filepath.Join(dir, "spool")
		out, err := exec.Command(goTool, "build", "-o", spoolBin, "github.com/spoolhq/spool/cmd/spool").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build spool: %v", buildErr)
	}
	t.Setenv("PATH", filepath.Dir(spoolBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if spoolBin != "" {
		os.RemoveAll(filepath.Dir(spoolBin))
	}
	os.Exit(code)
}

// clone is one working copy with its own writer id.
type clone struct {
	t   *testing.T
	dir string
	s   *Store
}

func newClone(t *testing.T, remote, name string) *clone {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	runGit(t, filepath.Dir(dir), "clone", "-q", remote, dir)
	registerDriver(t, dir) // git config is not cloned
	c := &clone{t: t, dir: dir}
	c.s, _ = open(t, dir)
	return c
}

func (c *clone) write(typ string, n int) {
	c.t.Helper()
	writeN(c.t, c.s, typ, n)
}

func (c *clone) commit(msg string) {
	c.t.Helper()
	runGit(c.t, c.dir, "add", "-A")
	runGit(c.t, c.dir, "commit", "-qm", msg)
}

func (c *clone) git(args ...string) string {
	c.t.Helper()
	return runGit(c.t, c.dir, args...)
}

// noConflicts checks the work tree holds no unmerged path.
func (c *clone) noConflicts() {
	c.t.Helper()
	if out := c.git("diff", "--name-only", "--diff-filter=U"); strings.TrimSpace(out) != "" {
		c.t.Fatalf("%s: unmerged paths:\n%s", c.dir, out)
	}
	if out := c.git("status", "--porcelain", "--", ".spool"); strings.TrimSpace(out) != "" {
		c.t.Fatalf("%s: .spool not clean after the merge:\n%s", c.dir, out)
	}
}

// projected brings the projections up to date as a command would
// (incrementally, from the snapshots), then returns the rendered files; it
// also checks them against a full rebuild and the log against Check.
func (c *clone) projected() map[string]string {
	c.t.Helper()
	v, err := c.s.Read(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	got := map[string]string{}
	for _, spec := range c.s.Engine.Specs {
		files, err := v.Get(spec.Name).Files()
		if err != nil {
			c.t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(f.Path)))
			if err != nil {
				c.t.Fatal(err)
			}
			if string(b) != string(f.Data) {
				c.t.Fatalf("%s: %s on disk is not the view's", c.dir, f.Path)
			}
			got[f.Path] = string(b)
		}
	}
	if _, err := c.s.Rebuild(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	for path, data := range got {
		b, _ := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(path)))
		if string(b) != data {
			c.t.Fatalf("%s: %s after the incremental catch-up differs from a full replay:\n%s\n%s", c.dir, path, data, b)
		}
	}
	rep, err := c.s.Log.Check()
	if err != nil {
		c.t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		c.t.Fatalf("%s: Check: %v", c.dir, rep.Problems)
	}
	return got
}

func sameProjections(t *testing.T, a, b *clone, events int) {
	t.Helper()
	pa, pb := a.projected(), b.projected()
	if len(pa) == 0 {
		t.Fatal("no projection files")
	}
	for path, data := range pa {
		if pb[path] != data {
			t.Fatalf("%s differs between the clones:\n%s\n%s", path, data, pb[path])
		}
	}
	rep, _ := a.s.Log.Check()
	if rep.Events != events {
		t.Fatalf("%d events, want %d", rep.Events, events)
	}
}

func TestConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spool and runs git")
	}
	isolateGit(t)
	spoolOnPath(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	runGit(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)

	// The first clone initialises spool and publishes it.
	seed := t.TempDir()
	runGit(t, seed, "clone", "-q", remote, "a")
	a := &clone{t: t, dir: filepath.Join(seed, "a")}
	a.git("checkout", "-q", "-b", "main")
	initSpool(t, a.dir)
	a.s, _ = open(t, a.dir)
	a.write("task.created", 3)
	a.commit("init spool")
	a.git("push", "-q", "-u", "origin", "main")
	b := newClone(t, remote, "b")
	if wa, _ := a.s.Log.WriterID(); func() bool { wb, _ := b.s.Log.WriterID(); return wa == wb }() {
		t.Fatal("the clones share a writer id")
	}
	b.projected() // b has projections of a's events before its own

	// Both append independently, each on its own branch, then each merges
	// the other's: two merge commits, no conflict.
	a.write("task.created", 4)
	a.commit("a: more")
	b.write("task.claimed", 5)
	b.commit("b: work")
	a.git("push", "-q", "origin", "main")
	b.git("push", "-q", "origin", "main:b-work")
	a.git("fetch", "-q", "origin")
	b.git("fetch", "-q", "origin")
	a.git("merge", "-q", "--no-edit", "origin/b-work")
	b.git("merge", "-q", "--no-edit", "origin/main")
	a.noConflicts()
	b.noConflicts()
	sameProjections(t, a, b, 12)

	// Then a plain pull (merge) one way...
	a.write("task.done", 2)
	a.commit("a: done")
	b.write("task.done", 1)
	b.commit("b: done")
	a.git("push", "-q", "origin", "main")
	b.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
	b.noConflicts()
	b.git("push", "-q", "origin", "main")
	a.git("pull", "-q", "--no-rebase", "origin", "main")
	a.noConflicts()
	sameProjections(t, a, b, 15)

	// ...and once with rebase.
	a.write("task.created", 2)
	a.commit("a: again")
	b.write("task.claimed", 3)
	b.commit("b: again")
	a.git("push", "-q", "origin", "main")
	b.git("pull", "-q", "--rebase", "origin", "main")
	b.noConflicts()
	b.git("push", "-q", "origin", "main")
	a.git("pull", "-q", "--rebase", "origin", "main")
	a.noConflicts()
	sameProjections(t, a, b, 20)
	if a.git("rev-parse", "HEAD") != b.git("rev-parse", "HEAD") {
		t.Fatal("the clones ended on different commits")
	}
}

func TestDivergedSameWriterMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds spool and runs git")
	}
	isolateGit(t)
	spoolOnPath(t)
	dir := newRepo(t)
	c := &clone{t: t, dir: dir}
	c.s, _ = open(t, dir)
	c.write("task.created", 3)
	c.commit("base")

	// One clone, one writer, two branches: the writer file diverges.
	c.git("checkout", "-q", "-b", "side")
	c.write("task.side", 2)
	c.commit("side")
	c.git("checkout", "-q", "main")
	c.projected()
	c.write("task.main", 3)
	c.commit("main")
	c.git("merge", "-q", "--no-edit", "side")
	c.noConflicts()

	ids := map[string]bool{}
	events := readEvents(t, c.s.Log)
	for i, e := range events {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d after the union", i, e.Seq)
		}
		ids[e.ID] = true
	}
	if len(events) != 8 || len(ids) != 8 {
		t.Fatalf("%d events, %d ids after the merge, want 8", len(events), len(ids))
	}
	c.projected() // Check is clean, incremental equals full replay

	// Appending continues the renumbered file.
	evs := write(t, c.s, eventlog.Draft{Type: "task.after"})
	if evs[0].Seq != 9 {
		t.Fatalf("next seq %d, want 9", evs[0].Seq)
	}
	c.projected()
}

func readEvents(t *testing.T, l *eventlog.Log) []*eventlog.Event {
	t.Helper()
	r, err := l.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*eventlog.Event
	for {
		e, _, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}
