package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/hooks"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/fleet"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// DoctorCmd is a preflight: one line per check.
type DoctorCmd struct {
	Verbose bool `short:"v" help:"Say more about checks that pass (which of the queues' saved states are behind the log, as they may be)."`
	Repair  bool `help:"First fix what can be fixed without losing an event: torn tails, duplicated and reordered lines, this clone's file forked by a copy of the clone on another machine (a new writer id), and another writer's file taken rewritten that the sync branch holds whole again (backups in .git/spool/repair/)."`
}

type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
}

func (c *DoctorCmd) Run(e *env) error {
	longRunning() // reads the whole log: keep memory bounded
	var repairs []eventlog.FileRepair
	if c.Repair {
		var err error
		if repairs, err = repair(e); err != nil {
			return err
		}
	}
	checks := doctor(e, c.Verbose)
	failed := 0
	for _, ch := range checks {
		if ch.Status == "fail" {
			failed++
		}
	}
	if e.JSON {
		out := map[string]any{"ok": failed == 0, "checks": checks}
		if c.Repair {
			out["repairs"] = nonNil(repairs)
		}
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		printRepairs(e, c.Repair, repairs)
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		for _, ch := range checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Status, ch.Name, ch.Detail)
		}
		tw.Flush()
	}
	if failed > 0 {
		what := "1 check failed"
		if failed > 1 {
			what = fmt.Sprintf("%d checks failed", failed)
		}
		return fault.New(CodeDoctorFailed, nil, "doctor: "+what+": see the fail lines above")
	}
	return nil
}

func doctor(e *env, verbose bool) []check {
	var checks []check
	add := func(name, status, format string, args ...any) {
		checks = append(checks, check{name, status, fmt.Sprintf(format, args...)})
	}
	out, err := git.Run(e.ctx, ".", "--version")
	if err != nil {
		add("git", "fail", "git not found on PATH: %v", err)
		return checks
	}
	add("git", "ok", "%s", strings.TrimSpace(out))
	r, err := git.Discover(e.ctx, e.dir())
	if err != nil {
		add("repository", "fail", "%v", err)
		return checks
	}
	add("repository", "ok", "%s", r.Root)
	st, err := store.OpenLenient(e.ctx, e.dir(), e.warn, e.storeOptions()...)
	if err != nil {
		add("spool", "fail", "%v", err)
		return checks
	}
	add("spool", "ok", "%s", r.SpoolDir())
	if err := st.Config.Check(); err != nil {
		add("config", "fail", "%s", fault.Classify(err).Message)
	} else if problems := st.Config.Problems(); len(problems) > 0 {
		add("config", "fail", "%s (fix with spool config set)", strings.Join(problems, "; "))
	} else if unknown := st.Config.Unknown(); len(unknown) > 0 {
		add("config", "warn", "written for a newer spool; its keys are ignored: %s", strings.Join(unknown, ", "))
	} else {
		add("config", "ok", "%s", store.ConfigPath(r))
	}
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	unlock, err := st.Log.Lock(ctx)
	cancel()
	switch {
	case errors.Is(err, eventlog.ErrLockTimeout), errors.Is(err, context.DeadlineExceeded):
		who := ""
		if pid, cmd, ok := st.Log.LockHolder(); ok && pid > 0 {
			who = fmt.Sprintf(" (pid %d: %s)", pid, text(clip(cmd, 80)))
		}
		add("lock", "fail", "%s is held by another process%s", st.Log.LockPath(), who)
	case err != nil:
		add("lock", "fail", "%v", err)
	default:
		unlock()
		writer, _ := st.Log.WriterID()
		add("lock", "ok", "%s (writer %s)", st.Log.LockPath(), writer)
	}
	rep, err := st.Log.Check()
	switch {
	case err != nil:
		add("log", "fail", "%v", err)
	case len(rep.Problems) > 0:
		add("log", "fail", "%d problems, first: %s (run spool verify)", len(rep.Problems), rep.Problems[0])
	default:
		add("log", "ok", "%d events in %d writer files in %s", rep.Events, rep.Files, relTo(r.Root, st.Log.Dir()))
	}
	if q, _ := st.Log.Quarantined(); len(q) > 0 {
		add("quarantine", "warn", "%d copies of writer files kept aside, not folded: %s. Why each was refused, and where it came from, is in the .why file beside it. "+
			"The rest of the log is unaffected; the writer whose file it is puts the file back with their next spool sync (when two machines write as that writer, spool doctor --repair on one of them first), or, if it is not a teammate's, remove it from the branch "+
			"(git push a commit of spool-log without it); then delete the copy here", len(q), strings.Join(q, ", "))
	}
	sharing(e, st, add)
	if damaged := st.Engine.DamagedSnapshots(); len(damaged) > 0 {
		var what []string
		for _, d := range damaged {
			what = append(what, relTo(r.Root, d.Path)+": "+d.Problem)
		}
		add("snapshots", "warn", "%s", strings.Join(what, "; "))
	} else {
		add("snapshots", "ok", "every checksum matches")
	}
	if v, err := st.Engine.Open(); err == nil {
		// Behind the log is normal (commands catch up what they read, and
		// large projections save lazily): only a failure is worth a line's alarm.
		if stale, err := v.Stale(); err != nil {
			add("projections", "fail", "%v", err)
		} else if stale && verbose {
			add("projections", "ok", "behind the log: commands catch up what they read, large projections save lazily (spool replay writes them all)")
		} else if stale {
			add("projections", "ok", "caught up as commands read them")
		} else {
			add("projections", "ok", "up to date")
		}
	}
	if dir, err := hooks.Dir(e.ctx, e.dir()); err != nil {
		add("hooks", "warn", "%v", err)
	} else if statuses, err := hooks.Inspect(dir); err != nil {
		add("hooks", "warn", "%v", err)
	} else {
		var missing []string
		for _, s := range statuses {
			if s.State != hooks.Installed {
				missing = append(missing, s.Name)
			}
		}
		if len(missing) > 0 {
			add("hooks", "warn", "not installed: %s (run spool hooks install)", strings.Join(missing, ", "))
		} else {
			add("hooks", "ok", "installed in %s", dir)
		}
	}
	orchestratorCheck(e, st, add)
	legacy(e, r, add)
	if a, err := e.actor(e.ctx, r); err != nil {
		add("actor", "warn", "%v", err)
	} else {
		add("actor", "ok", "%s", a)
	}
	return checks
}

// orchestratorCheck reports the breaker's pause: no agent runs until it is
// lifted.
func orchestratorCheck(e *env, st *store.Store, add func(name, status, format string, args ...any)) {
	v, err := st.Read(e.ctx, orchestrator.Name)
	if err != nil {
		return // the log's own check says why
	}
	p, ok := projections.As[*orchestrator.Projection](v, orchestrator.Name)
	if !ok {
		return
	}
	switch s := p.State(); {
	case s.Paused != nil:
		add("orchestrator", "fail", "paused since %s: %s", s.Paused.At.Format(time.RFC3339), text(s.Paused.Reason))
	case orchestrator.PolicyFrom(st.Config).Enabled():
		add("orchestrator", "ok", "agents start for ready tasks under spool watch")
	}
}

// sharing says where the log is committed and shared, as the last sync saw
// the remote.
func sharing(e *env, st *store.Store, add func(name, status, format string, args ...any)) {
	v, err := st.Read(e.ctx, "stats")
	if err != nil {
		return // the log check says why
	}
	stats, _ := projections.As[*projections.Stats](v, projections.StatsSpec.Name)
	s, err := fleet.SyncStatus(e.ctx, st, stats.ByWriter)
	switch {
	case err != nil:
		add("sharing", "warn", "%v", err)
	case s.Remote == "":
		add("sharing", "ok", "no remote: the log is committed on the local branch %s by spool sync", s.Branch)
	case !s.Synced:
		add("sharing", "warn", "never synced with %s/%s: spool sync shares the log (or spool watch, or git push with the hooks)", s.Remote, s.Branch)
	default:
		add("sharing", "ok", "%s/%s: %s", s.Remote, s.Branch, strings.TrimPrefix(syncLine(s), "ahead of "+s.Remote+"/"+s.Branch+" "))
	}
}

// legacy tells a repository of the old layout what is left to tidy: writer
// files or PRD manifests still tracked on the branch, and the merge driver
// the old writer files need while they are.
func legacy(e *env, r *git.Repo, add func(name, status, format string, args ...any)) {
	out, _ := git.Run(e.ctx, r.Root, "ls-files", "--", ".spool/events/*.jsonl", "docs/prd/_queue/*.json")
	if tracked := strings.Fields(out); len(tracked) > 0 {
		add("layout", "warn", "%d files of the old layout are still committed on this branch (%s): spool reads them, never writes them; "+
			"when everyone runs this spool, git rm -r --cached .spool/events docs/prd/_queue and drop '.spool/events/*.jsonl merge=spool' from .gitattributes",
			len(tracked), clip(strings.Join(tracked, ", "), 120))
		if driver, _ := git.Run(e.ctx, r.Root, "config", "--get", "merge.spool.driver"); strings.TrimSpace(driver) == "" {
			add("merge-driver", "warn", "not registered, and the old writer files need it to merge (run spool init)")
		} else {
			add("merge-driver", "ok", "%s", strings.TrimSpace(driver))
		}
	}
}

// repair fixes the log and, when it changed a file, rebuilds the projections.
func repair(e *env) ([]eventlog.FileRepair, error) {
	st, err := e.open()
	if err != nil {
		return nil, err
	}
	now, err := e.now()
	if err != nil {
		return nil, err
	}
	repairs, err := st.Log.Repair(e.ctx, now)
	if err != nil {
		return repairs, err
	}
	rewrote := false
	for _, r := range repairs {
		if len(r.Left) > 0 {
			return repairs, nil // the log is still unreadable: the checks below say where
		}
		rewrote = rewrote || r.Backup != ""
	}
	// This clone's own file forked on the sync branch (its files copied to
	// another machine): it takes a new writer id.
	fork, err := st.RepairFork(e.ctx, now)
	if err != nil {
		return repairs, err
	}
	if fork != nil {
		repairs = append(repairs, *fork)
		if len(fork.Left) > 0 {
			return repairs, nil
		}
		rewrote = true
	}
	// Another writer's file taken rewritten (a fresh clone of a rewritten
	// branch), which a copy of the branch now holds whole again.
	taken, err := st.RepairTaken(e.ctx, now)
	if err != nil {
		return repairs, err
	}
	repairs = append(repairs, taken...)
	rewrote = rewrote || len(taken) > 0
	if rewrote {
		_, err = st.Rebuild(e.ctx)
	}
	return repairs, err
}

func printRepairs(e *env, asked bool, repairs []eventlog.FileRepair) {
	if !asked {
		return
	}
	if len(repairs) == 0 {
		fmt.Fprintln(e.stdout, "repair: nothing to repair")
	}
	for _, r := range repairs {
		for _, f := range r.Fixed {
			fmt.Fprintf(e.stdout, "repair: %s: %s\n", r.Path, f)
		}
		for _, l := range r.Left {
			fmt.Fprintf(e.stdout, "repair: %s: not repaired: %s\n", r.Path, l)
		}
		if r.Backup != "" {
			fmt.Fprintf(e.stdout, "repair: %s: the file as it was is in %s\n", r.Path, r.Backup)
		}
	}
}
