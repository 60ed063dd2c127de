package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/clock"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/fleet"
	"github.com/spoolhq/spool/internal/git"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	planservice "github.com/spoolhq/spool/internal/plans/service"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"github.com/spoolhq/spool/internal/store"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// dir is where the command runs: -C DIR or the working directory.
func (e *env) dir() string {
	if e.Dir != "" {
		return e.Dir
	}
	return "."
}

// open opens the spool repository the command runs in.
func (e *env) open() (*store.Store, error) {
	return e.openWith(store.Open)
}

// openLenient is open for the commands that show and fix the
// configuration: a key spool does not know does not stop them.
func (e *env) openLenient() (*store.Store, error) {
	return e.openWith(store.OpenLenient)
}

func (e *env) openWith(open func(context.Context, string, func(string), ...store.Option) (*store.Store, error)) (*store.Store, error) {
	st, err := open(e.ctx, e.dir(), e.warn, e.storeOptions()...)
	if err != nil {
		return nil, err
	}
	if e.interactive() {
		st.Engine.Progress = e.progress()
	}
	e.remoteClaims(st)
	return st, nil
}

// remoteClaims takes st's claims through the git remote when sync.claims
// says so.
func (e *env) remoteClaims(st *store.Store) {
	if c := fleet.ClaimsFrom(st, e.Offline, e.warn); c != nil {
		st.Claims = c
	}
}

// storeEnv opens the repository and reads the clock: what every domain's
// service needs for one command. The actor is asked for on the first write.
func (e *env) storeEnv() (store.Env, error) {
	now, err := e.now()
	if err != nil {
		return store.Env{}, err
	}
	st, err := e.open()
	if err != nil {
		return store.Env{}, err
	}
	return store.Env{Store: st, Now: now, Warn: e.warn, Actor: e.actorOnce(st)}, nil
}

// envs returns a fresh env on st for each pass of a loop (spool watch, a
// hook's pass): the clock read again, the actor asked for once.
func (e *env) envs(st *store.Store) func() (store.Env, error) {
	actor := e.actorOnce(st)
	return func() (store.Env, error) {
		now, err := e.now()
		return store.Env{Store: st, Now: now, Warn: e.warn, Actor: actor}, err
	}
}

// actorOnce asks for the actor on its first call (it may run git) and
// remembers the answer.
func (e *env) actorOnce(st *store.Store) func(context.Context) (string, error) {
	var actor string
	return func(ctx context.Context) (string, error) {
		var err error
		if actor == "" {
			actor, err = e.actor(ctx, st.Repo)
		}
		return actor, err
	}
}

// openService opens a domain's service on a fresh storeEnv.
func openService[S any](e *env, open func(store.Env) S) (S, error) {
	env, err := e.storeEnv()
	if err != nil {
		var zero S
		return zero, err
	}
	return open(env), nil
}

// workqueue opens the work queue's service.
func (e *env) workqueue() (*wqservice.Service, error) { return openService(e, wqservice.Open) }

// prdqueue opens the PRD queue's service, reading PRD files from the work
// tree the command runs in.
func (e *env) prdqueue() (*prdservice.Service, error) {
	return openService(e, func(env store.Env) *prdservice.Service { return prdservice.Open(env, env.Store.Repo.WorkTree) })
}

// jobs opens the job scheduler's service.
func (e *env) jobs() (*jobservice.Service, error) { return openService(e, jobservice.Open) }

// plans opens the service of plans and proposals.
func (e *env) plans() (*planservice.Service, error) { return openService(e, planservice.Open) }

// mergequeue opens the merge queue's service.
func (e *env) mergequeue() (*mqservice.Service, error) { return openService(e, mqservice.Open) }

// orchestrator opens the orchestrator's service.
func (e *env) orchestrator() (*orchservice.Service, error) { return openService(e, orchservice.Open) }

// progress reports a rebuild on the terminal once it has taken a second.
func (e *env) progress() func(applied int, done bool) {
	start := time.Now()
	shown := false
	return func(applied int, done bool) {
		if !shown && time.Since(start) < time.Second {
			return
		}
		fmt.Fprintf(e.stderr, "\rspool: rebuilding projections: %d events", applied)
		shown = true
		if done {
			fmt.Fprintln(e.stderr)
			shown, start = false, time.Now()
		}
	}
}

// Warn reports what a command repaired or skipped without failing. Under
// --json each warning is one JSON line on stderr, before any error object:
// {"warning":{"code":"torn_tail_repaired","message":"…"}}, its code the one
// it was given where it arose.
func (e *env) Warn(w fault.Warning) {
	if !e.JSON {
		fmt.Fprintln(e.stderr, "spool: warning:", w.Message)
		return
	}
	b, _ := jsonCompact(map[string]any{"warning": map[string]any{"code": w.Code.Name, "message": w.Message}})
	fmt.Fprintln(e.stderr, string(b))
}

// warn is Warn of a warning with no code of its own (code "warning"): what
// the packages that report warnings as text are handed.
func (e *env) warn(msg string) { e.Warn(fault.Warned(msg)) }

// storeOptions are how the command opens a store: main's options, and the
// log's warnings told with their codes.
func (e *env) storeOptions() []store.Option {
	return append(slices.Clip(e.storeOpts), store.Warnings(e.Warn))
}

// now is the command's one clock reading.
func (e *env) now() (time.Time, error) {
	t, err := clock.Now()
	if err != nil {
		return t, fault.Usagef(CodeInvalidSpoolNow, "%v", err)
	}
	return t, nil
}

// actor is --actor, $SPOOL_ACTOR, then git user.email.
func (e *env) actor(ctx context.Context, r *git.Repo) (string, error) {
	if a := strings.TrimSpace(e.Actor); a != "" {
		return a, nil
	}
	if a := git.UserEmail(ctx, r); a != "" {
		return a, nil
	}
	if e.lastActor != nil {
		return e.lastActor(), nil
	}
	return "", fault.Usagef(fault.CodeNoActor, "no actor: pass --actor, set SPOOL_ACTOR, or set git user.email")
}

// interactive reports whether stderr is a terminal (for progress output).
func (e *env) interactive() bool {
	f, ok := cliout.Unwrap(e.stderr).(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
