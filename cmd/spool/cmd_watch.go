package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
)

// WatchCmd is the always-on loop (internal/watch).
type WatchCmd struct {
	Once bool          `help:"Recover, make one pass, wait for what it started (merge train, job worker), then exit: for cron and CI."`
	Poll time.Duration `placeholder:"D" help:"How often to look for changes where the file system cannot report them (default: watch.poll)."`
}

func (c *WatchCmd) Run(e *env) error {
	longRunning()
	st, err := e.open()
	if err != nil {
		return err
	}
	unlock, err := watch.Lock(e.ctx, st)
	if err != nil {
		return err
	}
	defer unlock()
	// Every pass acts as one actor: ask git once, and refuse to start
	// without one rather than fail every pass.
	actor, err := e.actor(e.ctx, st.Repo)
	if err != nil {
		return err
	}
	out := e.watchOutput()
	drivers := watch.Recovery(out.say)
	if st.Config.Bool("watch.merge_train") {
		drivers = append(drivers, watch.Train(c.Once, out.say))
	}
	if n := st.Config.Int("watch.job_slots"); n > 0 {
		drivers = append(drivers, watch.Worker(watch.WorkerName(), n, c.Once, out.say))
	}
	// More drivers (the orchestrator, issue 13) are appended here; each
	// pass calls them in this order, after the ones above.

	poll := c.Poll
	if poll <= 0 {
		poll = st.Config.Duration("watch.poll")
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	loop := &watch.Loop{
		Drivers: drivers,
		Env:     e.watchEnv(st, actor),
		Wakes:   watch.Wakes(ctx, st.Repo, poll, e.warn),
		Once:    c.Once,
		Errorf:  out.errorf,
	}
	if c.Once {
		loop.Busy = 250 * time.Millisecond // a finished train or worker is noticed soon
	}
	return loop.Run(ctx)
}

// watchEnv returns a fresh env per pass: the clock read again, and the
// configuration read again when its file changed (watch.* keys are read
// only at start).
func (e *env) watchEnv(st *store.Store, actor string) func() (store.Env, error) {
	var mod time.Time
	if fi, err := os.Stat(store.ConfigPath(st.Repo)); err == nil {
		mod = fi.ModTime()
	}
	return func() (store.Env, error) {
		now, err := e.now()
		if err != nil {
			return store.Env{}, err
		}
		if fi, err := os.Stat(store.ConfigPath(st.Repo)); err == nil && !fi.ModTime().Equal(mod) {
			if cfg, err := config.Load(store.ConfigPath(st.Repo)); err == nil {
				st.Config, mod = cfg, fi.ModTime()
			} else {
				e.warn(fmt.Sprintf("configuration not reloaded: %v", err))
				mod = fi.ModTime()
			}
		}
		return store.Env{Store: st, Now: now, Warn: e.warn,
			Actor: func(context.Context) (string, error) { return actor, nil }}, nil
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
