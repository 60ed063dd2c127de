package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/internal/repo"
)

// DemoCmd runs spool in a throwaway repository and prints what it did.
type DemoCmd struct {
	Keep string `placeholder:"DIR" help:"Make the demo repository in DIR instead of a new temp directory."`
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
	{"git", "worktree", "add", "-q", "-b", "feature", "feature-wt"},
	{"git", "-C", "feature-wt", "commit", "-q", "--allow-empty", "-m", "feature: a change ready to merge"},
	{"merge", "submit", "--workspace", "feature-wt", "--no-push"},
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
var demoCreated = regexp.MustCompile(`(?m)^created (\S+):`)

func (c *DemoCmd) Run(e *env) error {
	dir := c.Keep
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "spool-demo-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "demo@spool.invalid"}, {"config", "user.name", "spool demo"}} {
		if _, err := repo.Git(e.ctx, dir, args...); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "# a throwaway git repository: %s\n", dir)
	var ids []string
	for _, step := range demoScript {
		if step[0] == "git" { // setting the scene
			fmt.Fprintf(e.stdout, "\n$ %s\n", strings.Join(quoteArgs(step), " "))
			if _, err := repo.Git(e.ctx, dir, step[1:]...); err != nil {
				if !strings.Contains(err.Error(), "already exists") {
					return err
				}
				fmt.Fprintln(e.stdout, "(already there from an earlier run)")
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
		full := append([]string{"-C", dir, "--actor", "demo@spool.invalid"}, args...)
		var out bytes.Buffer
		w := io.MultiWriter(e.stdout, &out)
		if code := run(full, w, w); code != 0 {
			return fmt.Errorf("demo step %q exited %d", strings.Join(args, " "), code)
		}
		if m := demoCreated.FindStringSubmatch(out.String()); m != nil {
			ids = append(ids, m[1])
		}
	}
	fmt.Fprintf(e.stdout, "\n# the log is in %s/.spool/events/, projections in %s/.spool/state/\n", dir, dir)
	fmt.Fprintf(e.stdout, "# look around: spool -C %s log --json\n", dir)
	return nil
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
