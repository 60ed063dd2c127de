package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
)

// Driver runs the orchestrator in spool watch: passes run one at a time
// (the watch's loop), so the watchdog and an event never start two agents.
type Driver struct {
	Say watch.Say
	// Poll is how often a running agent is looked at (default 500ms).
	Poll time.Duration
	// PauseAt and PauseFile let crash tests stop spool at a point (see
	// Service.Pause): it writes PauseFile and blocks until killed. Set from
	// SPOOL_TEST_ORCH_PAUSE(_FILE) by the CLI.
	PauseAt, PauseFile string

	lastBeat time.Time // the last heartbeat of the active claim, by this process
}

func (d *Driver) open(env store.Env) *Service {
	s := Open(env)
	s.Pause = d.pause
	return s
}

// pause blocks for ever at the point a crash test asked for.
func (d *Driver) pause(point string) {
	if d.PauseAt == "" || point != d.PauseAt {
		return
	}
	if d.PauseFile != "" {
		os.WriteFile(d.PauseFile, []byte(point+"\n"), 0o644)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func (d *Driver) Name() string { return "orchestrator" }

func (d *Driver) logf(format string, args ...any) {
	if d.Say != nil {
		d.Say(d.Name(), fmt.Sprintf(format, args...))
	}
}

// Recover brings a task a crash left active to a steady state: its agent
// still running is monitored again, one that ended is settled, one that
// died unrecorded is reverted and its task reopened. It starts nothing.
func (d *Driver) Recover(ctx context.Context, env store.Env) error {
	_, _, err := d.pass(ctx, env, false)
	return err
}

// Pass monitors the active agent and, with none, starts one for the most
// urgent ready task. It returns when it next wants a pass and whether an
// agent runs.
func (d *Driver) Pass(ctx context.Context, env store.Env) (watch.Result, error) {
	next, busy, err := d.pass(ctx, env, true)
	return watch.Result{Next: next, Busy: busy}, err
}

func (d *Driver) pass(ctx context.Context, env store.Env, mayStart bool) (next time.Time, busy bool, err error) {
	s := d.open(env)
	st, err := s.Read(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	if st, err = d.monitor(ctx, s, st); err != nil {
		return time.Time{}, st != nil && st.ActiveTask != nil, err
	}
	// Done is not merged: a branch the train refused reopens its task,
	// before the next claim, which may be that task again.
	if rej, err := s.rejected(ctx, st); len(rej) > 0 || err != nil {
		for _, r := range rej {
			if r.Outcome == orchestrator.OutcomeFailed {
				d.logf("%s attempt %d: the merge train refused %s: reopened, counted as failed: %s", r.TaskID, r.Attempt, orchestrator.Branch(r.TaskID), r.Reason)
			} else {
				d.logf("%s attempt %d: the merge train refused %s, but the task is no longer done: left as it is", r.TaskID, r.Attempt, orchestrator.Branch(r.TaskID))
			}
		}
		if err != nil {
			return time.Time{}, false, err
		}
		if st, err = s.Read(ctx); err != nil {
			return time.Time{}, false, err
		}
	}
	p := s.Policy
	if st.Paused != nil && p.Enabled() && !slices.Equal(st.Paused.Agent, p.Agent) {
		// The command it tripped with was changed: that is the fix.
		if st, err = s.append(ctx, eventlog.Draft{Type: orchestrator.TypeResumed, Subject: orchestrator.Worker,
			Data: orchestrator.ResumedData{Reason: "orchestrator.agent_command changed"}}); err != nil {
			return time.Time{}, false, err
		}
		d.logf("resumed: orchestrator.agent_command changed")
	}
	if p.Enabled() && mayStart {
		started := false
		if st.ActiveTask == nil && st.Paused == nil {
			a, err := s.start(ctx)
			if a != nil {
				started = true
				d.lastBeat = env.Now
				d.logf("started the agent for %s (attempt %d, supervisor pid %d)", a.TaskID, a.Attempt, a.AgentPID)
			}
			if err != nil {
				return env.Now.Add(d.poll()), a != nil, err
			}
		}
		// The watchdog's append returns the state after the start too.
		switch {
		case orchestrator.WatchdogDue(st, p, env.Now):
			st, err = s.append(ctx, orchestrator.WatchdogRan())
		case started:
			st, err = s.Read(ctx)
		}
		if err != nil {
			return time.Time{}, false, err
		}
	}
	if p.Enabled() && st.LastWatchdogRun != nil {
		next = st.LastWatchdogRun.Add(p.Watchdog)
	}
	// With no agent running, look again when a task's backoff ends, which
	// no event says, and with a bd/br source, whose new work changes
	// nothing spool watches, after workqueue.poll_interval (each pass with
	// room for an agent asks the source, through next): not only at the
	// watchdog.
	if p.Enabled() && st.ActiveTask == nil {
		wake, err := s.WQ.Wakeup(ctx)
		if err != nil {
			return time.Time{}, false, err
		}
		if poll := s.WQ.PollInterval(); poll > 0 {
			wake = earliest(wake, env.Now.Add(poll))
		}
		next = earliest(next, wake)
	}
	if st.ActiveTask != nil {
		busy = true
		if at := env.Now.Add(d.poll()); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next, busy, nil
}

// earliest is the earlier of two times, zero being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

func (d *Driver) poll() time.Duration {
	if d.Poll > 0 {
		return d.Poll
	}
	return 500 * time.Millisecond
}

// monitor takes the active task's steps until it waits on the agent.
func (d *Driver) monitor(ctx context.Context, s *Service, st *orchestrator.State) (*orchestrator.State, error) {
	now := s.Now
	for range 8 { // each step moves the phase on; a few at most
		a := st.ActiveTask
		if a == nil {
			return st, nil
		}
		step := orchestrator.Monitor(a, observe(ctx, a, s.runDir(a), s.Worktree(a.TaskID)), s.Policy, now)
		var err error
		switch step.Kind {
		case orchestrator.StepNone:
			return st, d.heartbeat(ctx, s, a)
		case orchestrator.StepSignal:
			s.stop(a, now)
			return st, nil
		case orchestrator.StepRecord, orchestrator.StepStop:
			if st, err = s.append(ctx, step.Draft); err != nil {
				return nil, err
			}
			s.pause(step.Draft.Type)
			if step.Kind == orchestrator.StepStop {
				d.logf("stopping the agent for %s: no output for %s", a.TaskID, s.Policy.Stall)
				s.stop(st.ActiveTask, now)
				return st, nil
			}
		case orchestrator.StepSettle:
			outcome, pause, err := s.settle(ctx, st, a)
			if err != nil {
				return st, err
			}
			d.logf("%s attempt %d: %s", a.TaskID, a.Attempt, outcome)
			if pause != nil {
				d.logf("paused: %s", pause.Reason)
			}
			if st, err = s.Read(ctx); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

// heartbeat renews the claim's lease a third of the way through it, so
// that an agent that runs longer than workqueue.lease keeps its task.
func (d *Driver) heartbeat(ctx context.Context, s *Service, a *orchestrator.Active) error {
	if a.Phase != orchestrator.PhaseRunning || s.Now.Sub(d.lastBeat) < s.WQ.Policy.Lease/3 {
		return nil
	}
	if _, err := s.WQ.Heartbeat(ctx, a.TaskID); err != nil {
		return err
	}
	d.lastBeat = s.Now
	return nil
}

// Stop ends a running agent because watch stops: the attempt is reverted
// and the task given back uncounted. It runs after ctx has ended (a
// signal), so it uses its own deadline.
func (d *Driver) Stop(ctx context.Context, env store.Env) error {
	ctx = context.WithoutCancel(ctx)
	s := d.open(env)
	st, err := s.Read(ctx)
	if err != nil || st.ActiveTask == nil {
		return err
	}
	a := st.ActiveTask
	if a.Phase == orchestrator.PhaseRunning || a.Phase == orchestrator.PhaseStarting {
		if st, err = s.append(ctx, orchestrator.Stop(a, orchestrator.ReasonStopped)); err != nil {
			return err
		}
		d.logf("stopping the agent for %s: watch stops", a.TaskID)
	}
	began := time.Now()
	deadline := began.Add(s.Policy.Grace + 3*time.Second)
	for {
		e := env
		e.Now = env.Now.Add(time.Since(began))
		if st, err = d.monitor(ctx, d.open(e), st); err != nil || st.ActiveTask == nil {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("the agent for " + st.ActiveTask.TaskID + " did not end")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
