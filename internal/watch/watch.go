// Package watch is spool watch's loop: it recovers what a crash left, then
// runs every driver's pass whenever something may have changed (the log,
// the refs, a hook's ping), whenever a driver asked to be called (a lease
// running out, a job's start time), and stops them on a signal. Every state
// change is an event a service appends, so kill -9 loses nothing.
package watch

import (
	"context"
	"errors"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
)

// Result is what a driver's pass says about later passes.
type Result struct {
	Next time.Time // when it wants a pass even if nothing happens (zero: only on wakes)
	Busy bool      // something it started still runs (watch --once waits for it)
}

// A Driver is one thing spool watch keeps going. Passes run one at a time, in order.
type Driver interface {
	Name() string
	Recover(ctx context.Context, env store.Env) error        // once, at start, before the first pass
	Pass(ctx context.Context, env store.Env) (Result, error) // must not block for long
	Stop(ctx context.Context, env store.Env) error           // on SIGINT/SIGTERM (kill -9 skips it)
}

// Loop runs drivers.
type Loop struct {
	Drivers []Driver
	// Env is a fresh env for one pass: the clock read now.
	Env func() (store.Env, error)
	// Wakes says something may have changed (nil: only timers wake it).
	Wakes <-chan struct{}
	// Once returns after the first pass once no driver is Busy.
	Once bool
	// Busy is how often passes run while a driver is Busy and asked for
	// no time of its own (with Once: until it is done).
	Busy time.Duration
	// Debounce gathers a burst of wakes into one pass.
	Debounce time.Duration
	// Retry is when a driver whose pass failed is called again.
	Retry time.Duration
	// Errorf reports a driver's error; the loop goes on.
	Errorf func(driver string, err error)
}

func (l *Loop) defaults() {
	if l.Busy <= 0 {
		l.Busy = time.Second
	}
	if l.Debounce <= 0 {
		l.Debounce = 30 * time.Millisecond
	}
	if l.Retry <= 0 {
		l.Retry = 30 * time.Second
	}
	if l.Errorf == nil {
		l.Errorf = func(string, error) {}
	}
}

// Run recovers, then passes until ctx ends (or, with Once, until idle).
// Only a recovery error that makes the repository unusable is returned;
// on ctx's end every driver's Stop runs and Run returns nil.
func (l *Loop) Run(ctx context.Context) error {
	l.defaults()
	env, err := l.Env()
	if err != nil {
		return err
	}
	for _, d := range l.Drivers {
		if err := d.Recover(ctx, env); err != nil {
			if ctx.Err() != nil {
				break
			}
			if Unusable(err) {
				return err
			}
			l.Errorf(d.Name(), err)
		}
	}
	last := map[string]string{} // each driver's last error, reported once
	for ctx.Err() == nil {
		next, busy, err := l.pass(ctx, last)
		if err != nil {
			return err
		}
		if l.Once && !busy {
			return nil
		}
		if busy && (next.IsZero() || time.Until(next) > l.Busy) {
			next = time.Now().Add(l.Busy)
		}
		l.wait(ctx, next)
	}
	l.stop(ctx)
	return nil
}

// pass runs every driver once and returns the earliest time one wants the
// next pass and whether any is busy.
func (l *Loop) pass(ctx context.Context, last map[string]string) (next time.Time, busy bool, err error) {
	env, err := l.Env()
	if err != nil {
		return next, false, err
	}
	for _, d := range l.Drivers {
		if ctx.Err() != nil {
			return next, busy, nil
		}
		r, err := d.Pass(ctx, env)
		if err != nil && ctx.Err() == nil {
			if msg := err.Error(); last[d.Name()] != msg {
				last[d.Name()] = msg
				l.Errorf(d.Name(), err)
			}
			r.Next = earliest(r.Next, time.Now().Add(l.Retry))
		} else if err == nil {
			delete(last, d.Name())
		}
		next, busy = earliest(next, r.Next), busy || r.Busy
	}
	return next, busy, nil
}

// wait returns at next, on a wake (after the burst settles), or when ctx ends.
func (l *Loop) wait(ctx context.Context, next time.Time) {
	var timer <-chan time.Time
	if !next.IsZero() {
		// A little late rather than early: the pass must see the time come.
		t := time.NewTimer(time.Until(next) + 5*time.Millisecond)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return
	case <-timer:
		return
	case <-l.Wakes:
	}
	settle := time.NewTimer(l.Debounce)
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-settle.C:
			return
		case <-l.Wakes:
		}
	}
}

// stop runs every driver's Stop, even with ctx ended: they give back what
// they hold.
func (l *Loop) stop(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	env, err := l.Env()
	if err != nil {
		l.Errorf("watch", err)
		return
	}
	for _, d := range l.Drivers {
		if err := d.Stop(ctx, env); err != nil {
			l.Errorf(d.Name(), err)
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// Unusable reports whether a recovery error means the repository cannot be
// worked on (a damaged log, storage refusing writes, no actor): watch
// exits with it rather than loop over it. A busy log or a failing side
// effect is not such an error.
func Unusable(err error) bool {
	if errors.Is(err, eventlog.ErrLockTimeout) || errors.Is(err, context.Canceled) {
		return false
	}
	switch f := fault.Classify(err); {
	case errors.Is(err, eventlog.ErrCorrupt), errors.Is(err, eventlog.ErrNewerVersion):
		return true
	default:
		return f.Code == fault.CodeStorage.Name || f.Code == fault.CodeNoActor.Name || f.Code == store.CodeNotInitialized.Name
	}
}
