package watch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/clock"
	"github.com/spoolhq/spool/internal/fault"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	"github.com/spoolhq/spool/internal/store"
)

// background is a driver that runs one long job in its own goroutine, for
// the watcher's life (with once: until the job says it is idle), started
// by the first pass. A run that fails is started again by a later pass.
type background struct {
	name string
	once bool
	run  func(ctx context.Context, env store.Env) error

	mu       sync.Mutex
	done     chan struct{} // nil: not running
	err      error
	finished bool // with once: ran to its end
}

func (b *background) Name() string                             { return b.name }
func (b *background) Recover(context.Context, store.Env) error { return nil } // the job recovers as it starts

func (b *background) Pass(ctx context.Context, env store.Env) (Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		if b.finished {
			return Result{}, nil
		}
		done := make(chan struct{})
		b.done, b.err = done, nil
		fault.Go(func() {
			defer close(done)
			err := b.run(ctx, env)
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
		})
		return Result{Busy: b.once}, nil
	}
	select {
	case <-b.done:
	default:
		return Result{Busy: b.once}, nil // running
	}
	b.done, b.finished = nil, b.once
	if b.err != nil && ctx.Err() == nil {
		return Result{}, b.err
	}
	return Result{}, nil
}

// Stop waits for the job, which ends with the watcher's ctx and gives back
// what it holds (a job worker its jobs, the train its entry).
func (b *background) Stop(ctx context.Context, _ store.Env) error {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	return awaitStop(b.name, done)
}

// stopWait bounds Stop: a test command or segment gets SIGTERM, a grace
// and SIGKILL well within it.
const stopWait = time.Minute

// awaitStop waits, up to stopWait, for the goroutine of the driver name
// to close done (nil: it never started).
func awaitStop(name string, done <-chan struct{}) error {
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopWait):
		return fmt.Errorf("%s did not stop within %s", name, stopWait)
	}
}

// ownStore opens the repository again for a background job: it keeps its
// own projections and save policy, apart from the loop's passes.
func ownStore(env store.Env) (store.Env, error) {
	st, err := store.OpenRepo(env.Store.Repo, env.Warn, env.Store.Options()...)
	if err != nil {
		return env, err
	}
	env.Store = st
	return env, nil
}

func now() time.Time { t, _ := clock.Now(); return t }

// Train runs the merge train as spool merge run does (once: spool merge
// run --once).
func Train(once bool, say Say) Driver {
	return &background{name: "merge train", once: once, run: func(ctx context.Context, env store.Env) error {
		env, err := ownStore(env)
		if err != nil {
			return err
		}
		env.Store.DeferSave = true // the train saves projections once per entry
		r, err := mqservice.Open(env).Train(ctx, "", lineWriter(func(line string) { say("merge train", line) }))
		if err != nil {
			return err
		}
		r.Now = now
		_, err = r.Run(ctx, once)
		return err
	}}
}

// Worker runs a job worker named name with slots, as spool job worker does
// (once: --once).
func Worker(name string, slots int, once bool, say Say) Driver {
	return &background{name: "job worker", once: once, run: func(ctx context.Context, env store.Env) error {
		env, err := ownStore(env)
		if err != nil {
			return err
		}
		q := jobservice.Open(env)
		q.Clock = now
		w := &jobservice.Worker{S: q, Name: name, Slots: slots, Once: once,
			Logf: func(format string, args ...any) { say("job worker", fmt.Sprintf(format, args...)) }}
		_, err = w.Run(ctx)
		return err
	}}
}

// WorkerName is the job worker's name: one a host, apart from a spool job
// worker's default (the host's name).
func WorkerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "watch"
	}
	return "watch-" + host
}

// lineWriter turns the train's output into one Say a line.
type lineWriter func(string)

func (w lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w(line)
		}
	}
	return len(p), nil
}
