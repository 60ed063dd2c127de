package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
)

// DemoCmd runs spool in a throwaway repository and prints what it did.
type DemoCmd struct {
	Keep string `placeholder:"DIR" help:"Run the demo in DIR (new or empty) and keep it, instead of a temp directory removed at the end."`
}

// demoScript is what the demo runs; each capability adds its steps.
var demoScript = [][]string{
	{"init"},
	// The work queue. $T1, $T2, ... are the ids of the tasks created so far.
	{"task", "add", "Write the parser", "-p", "1", "-l", "automated"},
	{"task", "add", "Document the parser", "--dep", "$T1"},
	{"task", "add", "Tidy the README", "-p", "3"},
	{"ready"},
	{"next"},
	{"fail", "$T1", "--error", "tests failing"},
	{"next"},
	{"fail", "$T1", "--error", "tests still failing"},
	{"next"},
	{"done", "$T3"},
	{"history"},
	{"stats"},
	// The merge queue: a linked worktree's branch, queued, tested and merged into main.
	{"git", "commit", "-q", "--allow-empty", "-m", "initial commit"},
	{"git", "worktree", "add", "-q", "-b", "feature", "../feature-wt"},
	{"git", "-C", "../feature-wt", "commit", "-q", "--allow-empty", "-m", "feature: a change ready to merge"},
	{"merge", "submit", "--workspace", "feature-wt"},
	{"merge", "list"},
	{"config", "set", "merge.test_command", `["git","log","-1","--format=testing %h %s"]`},
	{"merge", "run", "--once"},
	{"merge", "show", "1"},
	// Events of your own, with an idempotency key: the second append is a no-op.
	{"append", "deploy.finished", "-s", "web", "-d", `{"version":"1.4.2"}`, "--idem", "deploy:web:1.4.2"},
	{"append", "deploy.finished", "-s", "web", "-d", `{"version":"1.4.2"}`, "--idem", "deploy:web:1.4.2"},
	// The log behind it all, and the proof that the projections equal a fresh replay.
	{"log", "-n", "12"},
	{"status"},
	{"replay"},
	{"verify"},
}

// demoCreated finds the id in spool task add's output.
var demoCreated = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^created (\S+):`) })

// The demo's sandbox: a repository (repo), its bare remote (origin.git) and
// the feature worktree, all inside one directory the demo made or was given
// empty. It changes nothing outside that directory (and the merge train's
// scratch worktrees, removed as always), pushes only to its own remote, and
// removes a directory it made itself.
const (
	demoRepo   = "repo"
	demoRemote = "origin.git"
)

func (c *DemoCmd) Run(e *env) error {
	dir, cleanup, err := demoDir(c.Keep)
	if err != nil {
		return err
	}
	defer cleanup()
	defer demoEnviron()()
	root, remote := filepath.Join(dir, demoRepo), filepath.Join(dir, demoRemote)
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", remote},
		{"init", "-q", "-b", "main", root},
		{"-C", root, "config", "user.email", "demo@spool.invalid"},
		{"-C", root, "config", "user.name", "spool demo"},
		{"-C", root, "remote", "add", "origin", remote},
	} {
		if _, err := git.Run(e.ctx, dir, args...); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "# a throwaway git repository: %s (its remote: %s)\n", root, remote)
	if err := runDemo(e, root); err != nil {
		return err
	}
	if c.Keep == "" {
		fmt.Fprintf(e.stdout, "\n# done; %s is removed now (spool demo --keep DIR keeps it)\n", dir)
		return nil
	}
	fmt.Fprintf(e.stdout, "\n# the log is in %s/.git/spool/events/ and on the branch spool-log (git log -p spool-log), projections in %s/.git/spool/state/\n", root, root)
	fmt.Fprintf(e.stdout, "# look around: spool -C %s log --json\n", root)
	return nil
}

// runDemo runs demoScript in the repository at root.
func runDemo(e *env, root string) error {
	var ids []string
	for _, step := range demoScript {
		if err := e.ctx.Err(); err != nil {
			return err
		}
		if step[0] == "git" { // setting the scene
			fmt.Fprintf(e.stdout, "\n$ %s\n", strings.Join(quoteArgs(step), " "))
			if _, err := git.Run(e.ctx, root, step[1:]...); err != nil {
				return err
			}
			continue
		}
		args := make([]string, len(step))
		for i, a := range step {
			args[i] = a
			if n, err := strconv.Atoi(strings.TrimPrefix(a, "$T")); err == nil && strings.HasPrefix(a, "$T") && n >= 1 && n <= len(ids) {
				args[i] = ids[n-1]
			}
		}
		fmt.Fprintf(e.stdout, "\n$ spool %s\n", strings.Join(quoteArgs(args), " "))
		full := append([]string{"-C", root, "--actor", "demo@spool.invalid"}, args...)
		var out bytes.Buffer
		w := io.MultiWriter(e.stdout, &out)
		if code := run(full, w, w, e.storeOpts...); code != 0 {
			return fmt.Errorf("demo step %q exited %d", strings.Join(args, " "), code)
		}
		if m := demoCreated().FindStringSubmatch(out.String()); m != nil {
			ids = append(ids, m[1])
		}
	}
	return nil
}

// demoDir is where the demo runs: a new temporary directory, removed by
// cleanup, or --keep DIR, which must not exist yet (it is created) or be
// empty, so the demo can never write into a repository that matters.
func demoDir(keep string) (dir string, cleanup func(), err error) {
	if keep == "" {
		dir, err := os.MkdirTemp("", "spool-demo-")
		if err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	dir, err = filepath.Abs(keep)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) > 0 {
		return "", nil, fault.New(CodeDemoDirNotEmpty, err,
			fmt.Sprintf("demo --keep %s: not an empty directory; the demo only uses a new or empty one", keep), "dir", dir)
	}
	return dir, func() {}, nil
}

// demoEnviron gives the demo, and the git and test commands it starts, an
// environment that cannot point it at another repository: no GIT_* variable
// (GIT_DIR, GIT_WORK_TREE, ...) and no SPOOL_* one but SPOOL_NOW, and no
// global or system git config (templates, hooks paths, includes). It returns
// the function that puts the caller's environment back.
func demoEnviron() (restore func()) {
	saved := os.Environ()
	for _, kv := range saved {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "SPOOL_") && k != "SPOOL_NOW" {
			os.Unsetenv(k)
		}
	}
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	return func() {
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	}
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " {}\"'*") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}
