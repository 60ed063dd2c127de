package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/hooks"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
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
	st, err := store.Open(e.ctx, r.WorkTree, e.warn)
	if err != nil {
		return nil // spool not initialized here
	}
	if c.Name == "pre-push" {
		if !st.Config.Bool("hooks.verify_on_push") {
			return nil
		}
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
		promotePRDs(e, c.Name)
	}
	return nil
}

// prdHookTimeout bounds what a hook spends on the PRD queue.
const prdHookTimeout = 30 * time.Second

// promotePRDs syncs the PRD queue with the PRD files the commit, merge or
// checkout changed and promotes what became runnable, so that committing an
// approval promotes the PRD. It does nothing when there is no feature run.
func promotePRDs(e *env, hook string) {
	q, err := e.prdqueue()
	if err != nil {
		return
	}
	st, err := q.Read(e.ctx)
	if err != nil || len(st.Features) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, prdHookTimeout)
	defer cancel()
	e.ctx = ctx
	done, err := q.Promote(ctx, "")
	for _, p := range done {
		if p.Failed {
			fmt.Fprintf(e.stderr, "spool: %s hook: PRD %s could not be enqueued: %s\n", hook, text(p.PRD), text(p.Error))
		} else {
			fmt.Fprintf(e.stderr, "spool: %s hook: PRD %s queued as %s\n", hook, text(p.PRD), p.Epic)
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "spool: %s hook: prd: %v\n", hook, err)
	}
}
