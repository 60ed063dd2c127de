package train

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
)

// fixture is a real repository: a primary worktree on main with spool
// initialized, a bare remote "origin", and linked worktrees for branches.
type fixture struct {
	t      *testing.T
	root   string
	remote string
	now    time.Time
}

func gitEnv(t *testing.T) {
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
		"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com", "GIT_CONFIG_NOSYSTEM": "1",
		"HOME": t.TempDir(), "SPOOL_NOW": ""} {
		t.Setenv(k, v)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	gitEnv(t)
	dir := t.TempDir()
	f := &fixture{t: t, root: filepath.Join(dir, "repo"), remote: filepath.Join(dir, "remote.git"), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.git(dir, "init", "-q", "--bare", "-b", "main", f.remote)
	f.git(dir, "init", "-q", "-b", "main", f.root)
	f.write(f.root, "README", "hello\n")
	os.MkdirAll(filepath.Join(f.root, ".spool", "events"), 0o755)
	f.write(f.root, ".spool/config.json", "{}\n")
	f.write(f.root, ".spool/.gitignore", "state/\nruns/\n")
	f.git(f.root, "add", "-A")
	f.git(f.root, "commit", "-q", "-m", "init")
	f.git(f.root, "remote", "add", "origin", f.remote)
	f.git(f.root, "push", "-q", "origin", "main")
	return f
}

func (f *fixture) git(dir string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if d := time.Since(start); d > 300*time.Millisecond {
		f.t.Logf("slow: git %s took %s", strings.Join(args, " "), d)
	}
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (f *fixture) write(dir, name, content string) {
	f.t.Helper()
	path := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// worktree adds a linked worktree named name on branch name with one commit
// writing file.
func (f *fixture) worktree(name, file, content string) string {
	f.t.Helper()
	path := filepath.Join(filepath.Dir(f.root), name)
	f.git(f.root, "worktree", "add", "-q", path, "-b", name)
	f.commit(path, file, content, name+": change "+file)
	return path
}

func (f *fixture) commit(dir, file, content, msg string) string {
	f.write(dir, file, content)
	f.git(dir, "add", file)
	f.git(dir, "commit", "-q", "-m", msg)
	return f.git(dir, "rev-parse", "HEAD")
}

func (f *fixture) store(dir string) *store.Store {
	f.t.Helper()
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) config(key, value string) {
	f.t.Helper()
	st := f.store(f.root)
	if err := st.Config.Set(key, value); err != nil {
		f.t.Fatal(err)
	}
	if err := st.Config.Save(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) submit(dir string, opt SubmitOptions, actor string) (*Response, error) {
	f.now = f.now.Add(time.Second)
	return Submit(context.Background(), f.store(dir), opt, actor, f.now)
}

func (f *fixture) mustSubmit(dir string, opt SubmitOptions) *Response {
	f.t.Helper()
	resp, err := f.submit(dir, opt, "ada@example.com")
	if err != nil {
		f.t.Fatalf("submit %s: %v", dir, err)
	}
	return resp
}

func (f *fixture) queue() *mergequeue.State {
	f.t.Helper()
	v, err := f.store(f.root).Read(context.Background(), mergequeue.Name)
	if err != nil {
		f.t.Fatal(err)
	}
	q := queueOf(v)
	if bad := mergequeue.CheckInvariants(q); len(bad) > 0 {
		f.t.Fatalf("invariants: %v", bad)
	}
	return q
}

// events counts lines in the log.
func (f *fixture) events() int {
	n := 0
	files, _ := filepath.Glob(filepath.Join(f.root, ".spool", "events", "*.jsonl"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		n += strings.Count(string(b), "\n")
	}
	return n
}

func (f *fixture) runner() *Runner {
	st := f.store(f.root)
	return &Runner{Store: st, Actor: "train@example.com", Target: "main", ID: NewRunnerID("train"),
		Now: func() time.Time { f.now = f.now.Add(time.Second); return f.now }}
}

func (f *fixture) run() []Result {
	f.t.Helper()
	res, err := f.runner().Run(context.Background(), true)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}
