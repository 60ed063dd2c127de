package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
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
	c := &clone{t: t, dir: dir}
	c.s, _ = open(t, dir)
	return c
}

func (c *clone) write(typ string, n int) {
	c.t.Helper()
	writeN(c.t, c.s, typ, n)
}

func (c *clone) git(args ...string) string {
	c.t.Helper()
	return runGit(c.t, c.dir, args...)
}

// publish does what spool sync does, with git alone: the log's files
// committed on the remote's sync branch (on its tip, never forced).
func (c *clone) publish() {
	c.t.Helper()
	runGit(c.t, c.dir, "fetch", "-q", "origin")
	if _, err := c.s.Read(context.Background()); err != nil { // brings the fetched events in first
		c.t.Fatal(err)
	}
	parent := ""
	if out, err := runGitErr(c.dir, "rev-parse", "-q", "--verify", "refs/remotes/origin/spool-log"); err == nil {
		parent = strings.TrimSpace(out)
	}
	commit := commitTree(c.t, c.dir, EventsDir(c.s.Repo), parent)
	runGit(c.t, c.dir, "push", "-q", "origin", commit+":refs/heads/spool-log")
}

// commitLog commits the log's files as the sync branch's tree at ref.
func commitLog(t testing.TB, dir, ref string) {
	t.Helper()
	commit := commitTree(t, dir, filepath.Join(dir, ".git", "spool", "events"), "")
	runGit(t, dir, "update-ref", ref, commit)
}

// commitTree commits the writer files of logDir as events/<name> on parent.
func commitTree(t testing.TB, dir, logDir, parent string) string {
	t.Helper()
	entries, _ := os.ReadDir(logDir)
	var lines []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), eventlog.Ext) {
			blob := strings.TrimSpace(runGit(t, dir, "hash-object", "-w", filepath.Join(logDir, e.Name())))
			lines = append(lines, "100644 blob "+blob+"\t"+e.Name())
		}
	}
	sort.Strings(lines)
	events := mktree(t, dir, strings.Join(lines, "\n"))
	root := mktree(t, dir, "040000 tree "+events+"\tevents")
	args := []string{"commit-tree", root, "-m", "spool: events"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return strings.TrimSpace(runGit(t, dir, args...))
}

func mktree(t testing.TB, dir, listing string) string {
	t.Helper()
	out, err := runGitInput(dir, listing+"\n", "mktree")
	if err != nil {
		t.Fatalf("mktree: %v", err)
	}
	return strings.TrimSpace(out)
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
			b, err := os.ReadFile(c.s.Engine.FilePath(f.Path, f.WorkTree))
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
		b, _ := os.ReadFile(c.s.Engine.FilePath(path, false))
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

// Clones meet through copies of the sync branch that git itself brings:
// whatever fetched origin/spool-log (git fetch, git pull, a fresh clone), the
// next read has its events, and the clones' projections are byte for
// byte the same.
func TestConvergence(t *testing.T) {
	isolateGit(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	runGit(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)

	seed := t.TempDir()
	runGit(t, seed, "clone", "-q", remote, "a")
	a := &clone{t: t, dir: filepath.Join(seed, "a")}
	a.git("checkout", "-q", "-b", "main")
	initSpool(t, a.dir)
	a.s, _ = open(t, a.dir)
	a.write("task.created", 3)
	a.git("add", "-A")
	a.git("commit", "-qm", "init spool")
	a.git("push", "-q", "-u", "origin", "main")
	a.publish()

	// A fresh clone reads the remote's log at its first command.
	b := newClone(t, remote, "b")
	if wa, _ := a.s.Log.WriterID(); func() bool { wb, _ := b.s.Log.WriterID(); return wa == wb }() {
		t.Fatal("the clones share a writer id")
	}
	sameProjections(t, a, b, 3)

	// Both append independently, and each publishes; a git pull, or a
	// git fetch, brings the other's events.
	a.write("task.created", 4)
	b.write("task.claimed", 5)
	a.publish()
	b.publish()
	a.git("pull", "-q", "--no-rebase")
	b.git("fetch", "-q", "origin")
	sameProjections(t, a, b, 12)

	// Nothing the work tree does touches the log: a branch switch, a hard
	// reset and a clean of everything untracked and ignored.
	a.git("switch", "-q", "-c", "topic")
	a.write("task.done", 2)
	a.git("switch", "-q", "main")
	a.git("reset", "-q", "--hard")
	a.git("clean", "-q", "-fdx")
	a.git("branch", "-q", "-D", "topic")
	if st := a.git("status", "--porcelain"); st != "" {
		t.Fatalf("spool left the work tree dirty:\n%s", st)
	}
	a.publish()
	b.git("fetch", "-q", "origin")
	sameProjections(t, a, b, 14)
}

// A repository of the old layout (.spool/events committed on branches)
// moves at its first command: every event of every branch, of the work
// tree and of a remote-tracking branch is kept; a writer whose file
// diverged between branches is unioned, as the merge driver did.
func TestMigrationKeepsEveryEvent(t *testing.T) {
	isolateGit(t)
	old := newRepo(t)
	legacy := filepath.Join(old, ".spool", "events")
	// Two writers of the old layout: their files, as an older spool wrote
	// them, come from a scratch log.
	scratch := t.TempDir()
	mine := eventlog.Open(eventlog.Options{Dir: filepath.Join(scratch, "mine"), PrivateDir: filepath.Join(scratch, "p1")})
	theirs := eventlog.Open(eventlog.Options{Dir: filepath.Join(scratch, "theirs"), PrivateDir: filepath.Join(scratch, "p2")})
	appendTo := func(l *eventlog.Log, typ string, n int) {
		for range n {
			if _, err := l.Append(context.Background(), t0, "ada", []eventlog.Draft{{Type: typ}}, eventlog.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyIn := func(l *eventlog.Log) {
		files, _ := l.Files()
		for _, f := range files {
			b, _ := os.ReadFile(f)
			writeFile(t, filepath.Join(legacy, filepath.Base(f)), string(unchained(t, b)))
		}
	}
	appendTo(mine, "task.created", 3)
	copyIn(mine)
	runGit(t, old, "add", "-A")
	runGit(t, old, "commit", "-qm", "base")
	// The same writer on a second branch, from the same three events.
	fork := eventlog.Open(eventlog.Options{Dir: filepath.Join(scratch, "fork"), PrivateDir: filepath.Join(scratch, "p3")})
	copyDir(t, filepath.Join(scratch, "mine"), filepath.Join(scratch, "fork"))
	copyDir(t, filepath.Join(scratch, "p1"), filepath.Join(scratch, "p3"))
	runGit(t, old, "checkout", "-q", "-b", "side")
	appendTo(mine, "task.side", 2)
	copyIn(mine)
	runGit(t, old, "commit", "-qam", "side")
	// Another writer's events only on a remote-tracking branch.
	runGit(t, old, "checkout", "-q", "-b", "feature", "main")
	appendTo(theirs, "task.theirs", 4)
	copyIn(theirs)
	runGit(t, old, "add", "-A")
	runGit(t, old, "commit", "-qm", "theirs")
	runGit(t, old, "update-ref", "refs/remotes/origin/feature", "HEAD")
	runGit(t, old, "checkout", "-q", "main")
	runGit(t, old, "branch", "-q", "-D", "feature")
	// On main, the file diverges in the work tree, uncommitted.
	appendTo(fork, "task.main", 1)
	copyIn(fork)

	s, warns := open(t, old)
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, s.Log)
	if len(events) != 3+2+1+4 {
		t.Fatalf("%d events after the move, want 10", len(events))
	}
	if len(*warns) != 1 || !strings.Contains((*warns)[0], "10 events") {
		t.Fatalf("warnings %q", *warns)
	}
	if rep, _ := s.Log.Check(); len(rep.Problems) > 0 {
		t.Fatalf("Check: %v", rep.Problems)
	}
	// Appending goes to .git/spool, and the work tree stays as it was.
	status := runGit(t, old, "status", "--porcelain")
	write(t, s, eventlog.Draft{Type: "task.after"})
	if st := runGit(t, old, "status", "--porcelain"); st != status {
		t.Fatalf("the work tree changed:\n%s", st)
	}
	if n := len(readEvents(t, s.Log)); n != 11 {
		t.Fatalf("%d events, want 11", n)
	}
}

// unchained is a writer file as a spool from before the chain wrote it: no
// prev, ids hashed without it.
func unchained(t *testing.T, b []byte) []byte {
	t.Helper()
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		e, err := eventlog.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		e.Prev = ""
		if e.ID, err = e.ContentID(); err != nil {
			t.Fatal(err)
		}
		enc, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, enc...)
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, _ := os.ReadFile(filepath.Join(from, e.Name()))
			writeFile(t, filepath.Join(to, e.Name()), string(b))
		}
	}
}

func runGitErr(dir string, args ...string) (string, error) {
	return git.Run(context.Background(), dir, args...)
}

func runGitInput(dir, input string, args ...string) (string, error) {
	return git.RunInput(context.Background(), dir, []byte(input), args...)
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
