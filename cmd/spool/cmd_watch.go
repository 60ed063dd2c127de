package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/mergequeue"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
)

// WatchCmd is the always-on loop (internal/watch).
type WatchCmd struct {
	Once bool          `help:"Recover, make one pass, wait for what it started (merge train, job worker), then exit: for cron and CI."`
	Poll time.Duration `placeholder:"D" help:"How often to look for changes where the file system cannot report them (default: watch.poll)."`
	OfflineFlag
}

func (c *WatchCmd) Run(e *env) error {
	longRunning()
	if os.Getenv("GOGC") == "" {
		// Idle nearly always, and kept running for days: a smaller heap
		// matters more than the collector's CPU between passes.
		debug.SetGCPercent(50)
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	unlock, err := watch.Lock(e.ctx, st)
	if err != nil {
		return err
	}
	defer unlock()
	// Refuse to start without an actor rather than fail every pass.
	envs := e.envs(st)
	if env, err := envs(); err != nil {
		return err
	} else if _, err := env.Actor(e.ctx); err != nil {
		return err
	}
	out := e.watchOutput()
	drivers := watch.Recovery(out.say)
	set := watch.SettingsFrom(st.Config)
	if set.MergeTrain {
		// Refused at start, as merge run is, rather than reported every pass.
		if _, _, err := mergequeue.TestPlan(st.Config); err != nil {
			return err
		}
		drivers = append(drivers, watch.Train(c.Once, out.say))
	}
	if n := set.JobSlots; n > 0 {
		drivers = append(drivers, watch.Worker(watch.WorkerName(), n, c.Once, out.say))
	}
	// The orchestrator last: its claims see the expiries recorded above.
	drivers = append(drivers, &orchservice.Driver{Say: out.say,
		PauseAt: os.Getenv("SPOOL_TEST_ORCH_PAUSE"), PauseFile: os.Getenv("SPOOL_TEST_ORCH_PAUSE_FILE")})
	// Sync last: a pass's own appends are shared at once.
	drivers = append(drivers, watch.Sync(out.say, out.errorf, c.Once))

	poll := c.Poll
	if poll <= 0 {
		poll = set.Poll
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	loop := &watch.Loop{
		Drivers: drivers,
		Env:     reloading(e, st, envs),
		Wakes:   watch.Wakes(ctx, st.Repo, poll, e.warn),
		Once:    c.Once,
		Errorf:  out.errorf,
	}
	if c.Once {
		loop.Busy = 250 * time.Millisecond // a finished train or worker is noticed soon
	}
	return loop.Run(ctx)
}

// reloading is envs reading the configuration again when its file
// changed (a change wakes the loop: Wakes), so a setting takes effect at
// the next pass; the watch.* keys themselves are read only at start. A
// file with a key spool does not know is not taken.
func reloading(e *env, st *store.Store, envs func() (store.Env, error)) func() (store.Env, error) {
	path := store.ConfigPath(st.Repo)
	modTime := func() time.Time {
		fi, err := os.Stat(path)
		if err != nil {
			return time.Time{}
		}
		return fi.ModTime()
	}
	mod := modTime()
	return func() (store.Env, error) {
		if m := modTime(); !m.Equal(mod) {
			mod = m
			cfg, err := config.Load(path)
			if err == nil {
				err = cfg.Check()
			}
			if err != nil {
				e.warn(fmt.Sprintf("configuration not reloaded, the one before stays: %v", err))
			} else {
				st.Config = cfg
			}
		}
		return envs()
	}
}

// watchOutput prints what watch does: a line on stderr each, or with
// --json a JSON object a line on stdout. The train and the worker report
// from their own goroutines.
type watchOutput struct {
	mu sync.Mutex
	e  *env
}

func (e *env) watchOutput() *watchOutput { return &watchOutput{e: e} }

func (o *watchOutput) say(driver, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.e.JSON {
		fmt.Fprintf(o.e.stderr, "spool watch: %s\n", text(msg))
		return
	}
	now, _ := o.e.now()
	b, _ := jsonCompact(map[string]any{"at": now.UTC().Format(time.RFC3339Nano), "driver": driver, "message": msg})
	fmt.Fprintln(o.e.stdout, string(b))
}

// errorf reports a driver's failed pass; watch goes on.
func (o *watchOutput) errorf(driver string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := fault.Classify(err)
	if !o.e.JSON {
		fmt.Fprintf(o.e.stderr, "spool watch: %s: %s\n", driver, text(f.Message))
		return
	}
	b, _ := jsonCompact(map[string]any{"warning": map[string]any{"code": f.Code, "message": f.Message, "driver": driver}})
	fmt.Fprintln(o.e.stderr, string(b))
}
