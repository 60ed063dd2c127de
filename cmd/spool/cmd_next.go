package main

import (
	"fmt"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/watch"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// NextCmd claims the most urgent eligible task; with --wait it is a
// worker's poll loop for a script: it waits until one is eligible.
type NextCmd struct {
	Label        []string      `short:"l" sep:"none" placeholder:"LABEL" help:"Only tasks with this label, besides workqueue.label (repeatable)."`
	ExcludeLabel []string      `sep:"none" placeholder:"LABEL" help:"Never tasks with this label (repeatable)."`
	Worker       string        `short:"w" help:"Who works on it (default: the actor)."`
	Wait         bool          `help:"With nothing eligible, wait until a task is and claim it: the log changing (a new task, a blocker closed), a backoff or lease ending, a bd/br source every workqueue.poll_interval."`
	Timeout      time.Duration `placeholder:"D" help:"Wait at most D (implies --wait), then exit 0 with nothing claimed (null under --json)."`
	OfflineFlag
}

func (c *NextCmd) Run(e *env) error {
	if err := workqueue.ValidateLabels(c.Label, c.ExcludeLabel); err != nil {
		return err
	}
	if c.Timeout < 0 {
		return fault.Usagef(CodeInvalidFlag, "--timeout must not be negative, got %s", c.Timeout)
	}
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	var claim *wqservice.Claimed
	var idle wqservice.Idle
	if c.Wait || c.Timeout > 0 {
		claim, idle, err = c.wait(e, q)
	} else {
		claim, idle, err = q.Next(e.ctx, c.Label, c.ExcludeLabel, c.Worker)
	}
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, claim) // null when nothing is eligible
	}
	switch {
	case claim != nil:
		fmt.Fprintf(e.stdout, "claimed %s (P%d, attempt %d, lease until %s): %s\n", text(claim.ID), claim.Priority, claim.Attempt,
			claim.LeaseUntil.Format(time.RFC3339), text(claim.Title))
	case !idle.At.IsZero():
		fmt.Fprintf(e.stdout, "nothing ready; %s may be claimable at %s\n", text(idle.Task), idle.At.Format(time.RFC3339))
	default:
		fmt.Fprintln(e.stdout, "nothing ready")
	}
	return nil
}

// wait tries next until it claims a task, the timeout passes (nothing
// claimed, no error) or the command is interrupted. Between tries it
// sleeps until the log changes, until something may become claimable (a
// backoff ending, a lease running out: the queue says when), and, with a
// bd/br source, whose ready work the log does not know of, for at most
// workqueue.poll_interval.
func (c *NextCmd) wait(e *env, q *wqservice.Service) (*wqservice.Claimed, wqservice.Idle, error) {
	var deadline time.Time // on the wall clock: SPOOL_NOW does not stop it
	if c.Timeout > 0 {
		deadline = time.Now().Add(c.Timeout)
	}
	// Watching starts before the first look, so no change after it is missed.
	changed := watch.LogWakes(e.ctx, q.Store.Repo, watch.SettingsFrom(q.Store.Config).Poll, e.warn)
	told := false
	for {
		claim, idle, err := q.Next(e.ctx, c.Label, c.ExcludeLabel, c.Worker)
		switch {
		case err != nil && e.ctx.Err() != nil:
			return nil, idle, e.ctx.Err() // interrupted, perhaps in bd: nothing claimed
		case err != nil || claim != nil:
			return claim, idle, err
		}
		var left time.Duration
		if !deadline.IsZero() {
			if left = time.Until(deadline); left <= 0 {
				return nil, idle, nil
			}
		}
		d, ok := retryIn(q.Now, idle.At, q.PollInterval(), left)
		if !told && !e.JSON {
			fmt.Fprintln(e.stderr, "spool next: nothing ready; waiting for a task (Ctrl-C stops)")
			told = true
		}
		if !sleep(e, changed, d, ok) {
			return nil, idle, e.ctx.Err()
		}
		if q.Now, err = e.now(); err != nil {
			return nil, idle, err
		}
	}
}

// minRetry keeps a wake-up that is due at once (a frozen SPOOL_NOW, a
// backoff ending as it is read) from turning into a busy loop.
const minRetry = 50 * time.Millisecond

// retryIn is how long next --wait sleeps at now, at most, before it looks
// again: until idleAt (when something may become claimable; zero: nothing
// waits), poll (a bd/br source's interval; 0: none) or left (the timeout's
// rest; 0: none), whichever comes first. ok is false when none applies:
// only a change of the log wakes it.
func retryIn(now, idleAt time.Time, poll, left time.Duration) (d time.Duration, ok bool) {
	pick := func(x time.Duration) {
		if !ok || x < d {
			d, ok = x, true
		}
	}
	if !idleAt.IsZero() {
		pick(max(idleAt.Sub(now), minRetry))
	}
	if poll > 0 {
		pick(poll)
	}
	if left > 0 {
		pick(left)
	}
	return d, ok
}

// sleep waits d (for ever without ok) or until the log changes, gathering
// the burst of changes one append makes; false when the command is
// interrupted.
func sleep(e *env, changed <-chan struct{}, d time.Duration, ok bool) bool {
	var timer <-chan time.Time
	if ok {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-e.ctx.Done():
		return false
	case <-timer:
		return true
	case <-changed:
	}
	settle := time.NewTimer(30 * time.Millisecond)
	defer settle.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return false
		case <-settle.C:
			return true
		case <-changed:
		}
	}
}
