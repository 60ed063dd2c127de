package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/hooks"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/fleet"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/sign"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
)

// HooksCmd manages the git hook shims.
type HooksCmd struct {
	Install   HooksInstallCmd   `cmd:"" help:"Install shims that run spool from git hooks, chaining existing hooks."`
	Uninstall HooksUninstallCmd `cmd:"" help:"Remove the shims and restore the hooks that were there."`
	Status    HooksStatusCmd    `cmd:"" help:"Show which hooks are installed."`
}

type HooksInstallCmd struct{}
type HooksUninstallCmd struct{}
type HooksStatusCmd struct{}

func (c *HooksInstallCmd) Run(e *env) error {
	// Shims in a repository without .spool/ would run spool for nothing on
	// every commit: say what is missing instead of half-installing.
	if _, err := e.open(); err != nil {
		return err
	}
	return hooksDo(e, hooks.Install)
}
func (c *HooksUninstallCmd) Run(e *env) error { return hooksDo(e, hooks.Uninstall) }
func (c *HooksStatusCmd) Run(e *env) error    { return hooksDo(e, hooks.Inspect) }

func hooksDo(e *env, op func(dir string) ([]hooks.Status, error)) error {
	// Discover first: outside a repository that is not_a_git_repository (exit 4).
	r, err := git.Discover(e.ctx, e.dir())
	if err != nil {
		return err
	}
	dir, err := hooks.Dir(e.ctx, r.WorkTree)
	if err != nil {
		return err
	}
	statuses, err := op(dir)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"dir": dir, "hooks": statuses})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, s := range statuses {
		chained := ""
		if s.Chained {
			chained = " (chains the original hook)"
		}
		fmt.Fprintf(tw, "%s\t%s%s\n", s.Name, s.State, chained)
	}
	return tw.Flush()
}

// HookCmd is what the shims run.
type HookCmd struct {
	Name string   `arg:"" enum:"post-commit,post-merge,post-checkout,post-rewrite,pre-push" help:"Hook name."`
	Args []string `arg:"" optional:"" passthrough:"" help:"Arguments git gave the hook."`
}

func (c *HookCmd) Run(e *env) error {
	longRunning() // reads the whole log: keep memory bounded
	r, err := git.Discover(e.ctx, e.dir())
	if err != nil {
		return nil // not our business: never break git
	}
	st, err := store.Open(e.ctx, r.WorkTree, e.warn, e.storeOptions()...)
	if err != nil {
		if f := fault.Classify(err); f.Code != store.CodeNotInitialized.Name {
			fmt.Fprintf(e.stderr, "spool: %s hook: %s\n", c.Name, f.Message) // one line; git goes on
		}
		return nil
	}
	e.remoteClaims(st)
	if c.Name == "pre-push" {
		if err := prePush(e, st); err != nil {
			return err
		}
		shareOnPush(e, st, c.Args)
		return nil
	}
	// post-commit, post-merge, post-checkout, post-rewrite: git may have
	// changed the log; bring projections up to date. A failure is reported
	// but never changes git's outcome.
	if _, err := st.Read(e.ctx); err != nil {
		fmt.Fprintf(e.stderr, "spool: %s hook: %v\n", c.Name, err)
		return nil
	}
	if c.Name != "post-rewrite" {
		hookPass(e, st, c.Name)
	}
	return nil
}

// hookTimeout bounds what a hook spends on its own pass (hooks.timeout):
// git waits for it, and a slow bd would hold every commit.
func hookTimeout(st *store.Store) time.Duration { return config.SettingsFrom(st.Config).GitHookTimeout }

// hookPass has a running spool watch do what the commit, merge or checkout
// may have made due (it is pinged and does it at once), or, with no
// watcher, does it here: recovery, PRD sync and promotion (so that
// committing an approval promotes the PRD), the scheduler's clock; never
// the merge train or job workers. When it runs out of time it says, in one
// line, what was cut short and what finishes it.
func hookPass(e *env, st *store.Store, hook string) {
	if running, err := watch.Running(e.ctx, st); err == nil && running {
		if err := watch.Ping(st.Repo); err != nil {
			fmt.Fprintf(e.stderr, "spool: %s hook: could not wake spool watch: %v\n", hook, err)
		}
		return
	}
	parent, timeout := e.ctx, hookTimeout(st)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	e.ctx = ctx
	say := func(_, msg string) { fmt.Fprintf(e.stderr, "spool: %s hook: %s\n", hook, text(msg)) }
	var current string // the driver running: what a timeout cuts short
	drivers := watch.Recovery(say)
	for i, d := range drivers {
		drivers[i] = noting{d, &current}
	}
	loop := &watch.Loop{
		Drivers: drivers,
		Env:     e.envs(st),
		Once:    true,
		Errorf:  func(driver string, err error) { say(driver, driver+": "+err.Error()) },
	}
	err := loop.Run(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
		fmt.Fprintln(e.stderr, cutShort(hook, current, timeout))
		return
	}
	if err != nil {
		say("", err.Error())
	}
}

// noting is a driver that notes, in current, that it runs.
type noting struct {
	watch.Driver
	current *string
}

func (d noting) Recover(ctx context.Context, env store.Env) error {
	*d.current = d.Name()
	return d.Driver.Recover(ctx, env)
}

func (d noting) Pass(ctx context.Context, env store.Env) (watch.Result, error) {
	*d.current = d.Name()
	return d.Driver.Pass(ctx, env)
}

// cutShort is the line a hook prints when its pass ran out of time: what
// was cut short, that git's own work is done, and the command that
// finishes it (every step is an event, so nothing is lost in between).
func cutShort(hook, driver string, timeout time.Duration) string {
	what, finish := "its pass", "spool watch --once"
	switch driver {
	case "prd":
		what, finish = "PRD sync and promotion", "spool prd promote"
	case "tasks":
		what = "releasing expired task claims"
	case "merge":
		what = "recovering merge entries"
	case "jobs":
		what = "the scheduler's clock"
	}
	return fmt.Sprintf("spool: %s hook: %s was cut short after %s (hooks.timeout); git's work is done and nothing is lost: run %s to finish it",
		hook, what, timeout, finish)
}

// shareOnPush syncs the log with the remote git pushes to, when that is
// the remote the log is shared through: a push of code shares the log too.
// It never refuses the push: a sync that fails says so, and the next sync
// (or claim, or spool watch) shares what this one could not.
func shareOnPush(e *env, st *store.Store, args []string) {
	o, err := fleet.OptionsFrom(e.ctx, st, "")
	if err != nil || o.Remote == "" || len(args) == 0 || args[0] != o.Remote {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, hookTimeout(st))
	defer cancel()
	if _, err := fleet.Sync(ctx, st, o); err != nil {
		fmt.Fprintf(e.stderr, "spool: pre-push: the log was not shared (%v); spool sync shares it later\n", err)
	}
}

// prePush refuses a push that spool verify refuses (hooks.verify_on_push),
// or, with sign.required, verify --signatures over the commits pushed.
func prePush(e *env, st *store.Store) error {
	if config.SettingsFrom(st.Config).GitHookVerifyPush {
		rep, err := st.Verify(e.ctx)
		if err != nil {
			return err
		}
		if !rep.OK {
			for _, p := range rep.Problems {
				fmt.Fprintln(e.stderr, "spool: log:", p)
			}
			for _, d := range rep.Differences {
				fmt.Fprintf(e.stderr, "spool: projection %s: %s: %s\n", d.Projection, d.Path, d.Problem)
			}
			fmt.Fprintln(e.stderr, "spool: push refused because spool verify fails; fix the log or set hooks.verify_on_push false")
			return errVerifyFailed
		}
	}
	if !sign.SettingsFrom(st.Config).Required {
		return nil
	}
	sigs, err := st.VerifySignatures(e.ctx, pushedCommits(os.Stdin))
	if err != nil {
		return err
	}
	for _, p := range sigs.Problems {
		fmt.Fprintln(e.stderr, "spool: signature:", text(p.String()))
	}
	if err := sigs.Err(); err != nil {
		fmt.Fprintln(e.stderr, "spool: push refused because sign.required is true and spool verify --signatures fails")
		return err
	}
	return nil
}

// pushedCommits reads git's pre-push lines ("<local ref> <local sha>
// <remote ref> <remote sha>") for the commits pushed; none when stdin is a
// terminal (the hook run by hand) or only deletes.
func pushedCommits(stdin *os.File) []string {
	if st, err := stdin.Stat(); err != nil || st.Mode()&os.ModeCharDevice != 0 {
		return nil
	}
	var tips []string
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && strings.Trim(f[1], "0") != "" {
			tips = append(tips, f[1])
		}
	}
	return tips
}
