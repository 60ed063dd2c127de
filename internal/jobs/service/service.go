// Package service is the job scheduler's service: every job command goes
// through it. It decides with the pure functions of jobs under the log's
// lock; the worker (worker.go) runs segments as child processes between a
// segment_started and a segment_done event.
package service

import (
	"context"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// Service is the scheduler for one command.
type Service struct {
	store.Env
	Policy jobs.Policy
	// Clock is the time of each write; nil is the command's one reading
	// (Env.Now). A worker runs for hours and reads the clock each time.
	Clock func() time.Time
}

// Open reads the configuration.
func Open(env store.Env) *Service {
	return &Service{Env: env, Policy: jobs.PolicyFrom(env.Store.Config)}
}

func (s *Service) now() time.Time {
	if s.Clock != nil {
		return s.Clock()
	}
	return s.Env.Now
}

// Read returns the scheduler up to date.
func (s *Service) Read(ctx context.Context) (*jobs.State, error) {
	v, err := s.Store.Read(ctx, jobs.Name)
	if err != nil {
		return nil, err
	}
	return s.snapshot(v), nil
}

// Job reads one job, decoded alone when the snapshot is up to date (see
// jobs.Projection.Job): spool job show needs no other.
func (s *Service) Job(ctx context.Context, id string) (j *jobs.Job, err error) {
	v, err := s.Store.Read(ctx, jobs.Name)
	if err != nil {
		return nil, err
	}
	return s.jobIn(v, id)
}

// jobIn is job id of view v, read under the store's lock.
func (s *Service) jobIn(v *projections.View, id string) (j *jobs.Job, err error) {
	s.Store.Hold(func() {
		p, _ := projections.As[*jobs.Projection](v, jobs.Name)
		j, err = p.Job(id)
	})
	return j, err
}

// stateOf is the fold's own state, what a decision reads under the lock.
func stateOf(v *projections.View) *jobs.State {
	p, _ := projections.As[*jobs.Projection](v, jobs.Name)
	return p.State()
}

// snapshot is the state for a reader to keep: later writes of this
// process (a worker's next step, another goroutine's) do not change it. It
// is taken under the store's lock.
func (s *Service) snapshot(v *projections.View) (st *jobs.State) {
	s.Store.Hold(func() {
		p, _ := projections.As[*jobs.Projection](v, jobs.Name)
		st = p.Snapshot()
	})
	return st
}

// decision is a scheduler decision at one clock reading: the drafts to
// append and the command's result. Like store.Decider it must be repeatable.
type decision[R any] func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, R, error)

// written is what a write appended, the state after it and its result.
type written[R any] struct {
	State  *jobs.State
	Events []eventlog.Event
	Result R
	view   *projections.View
}

// write decides under the log's lock, at one clock reading, and appends;
// it returns the state after the events.
func (s *Service) write(ctx context.Context, decide func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error)) (*jobs.State, []eventlog.Event, error) {
	w, err := decideAs(ctx, s, "", drafts(decide))
	return w.State, w.Events, err
}

// worker is write for a worker, whose events carry its name as the actor:
// its dispatch and everything it records about the job while it holds it
// (segments, heartbeats, the end) are a claim's, which sync.claims =
// remote takes through the git remote, so other machines see the lease
// held and the job finished.
func (s *Service) worker(ctx context.Context, worker string, decide func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error)) (*jobs.State, []eventlog.Event, error) {
	w, err := decideAs(ctx, s, worker, drafts(decide))
	return w.State, w.Events, err
}

// decideAs runs decide as worker (store.Claiming), or as the command's
// actor when worker is "" (store.Local).
func decideAs[R any](ctx context.Context, s *Service, worker string, decide decision[R]) (written[R], error) {
	return decideOn(ctx, s, worker, stateOf, true, decide)
}

// decideOn is decideAs deciding on state(v), and returning the state after
// the events only when keep says so (a snapshot decodes every job).
func decideOn[R any](ctx context.Context, s *Service, worker string, state func(*projections.View) *jobs.State, keep bool, decide decision[R]) (written[R], error) {
	actor, mode := worker, store.Claiming
	if worker == "" {
		var err error
		if actor, err = s.Actor(ctx); err != nil {
			return written[R]{}, err
		}
		mode = store.Local
	}
	now := s.now()
	w, err := store.Write(ctx, s.Store, mode, now, actor, []string{jobs.Name}, func(v *projections.View) ([]eventlog.Draft, R, error) {
		return decide(state(v), actor, now)
	})
	if err != nil {
		return written[R]{}, err
	}
	out := written[R]{Events: w.Events, Result: w.Result, view: w.View}
	if keep {
		out.State = s.snapshot(w.View)
	}
	return out, nil
}

// drafts adapts a decision with no result.
func drafts(decide func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error)) decision[struct{}] {
	return func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, struct{}, error) {
		d, err := decide(st, actor, now)
		return d, struct{}{}, err
	}
}

// Submit submits a job, or creates a schedule with --every.
func (s *Service) Submit(ctx context.Context, n jobs.Submit) (jobs.Submitted, error) {
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return jobs.Submitted{}, err
	}
	// SubmitJob reads a lazily read state as it is (at 10,000 jobs, decoding
	// them was most of a submit), and the state after is not needed.
	w, err := decideOn(ctx, s, "", lazyState, false, func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, jobs.Submitted, error) {
		return jobs.SubmitJob(st, s.Policy, n, actor, writer, now)
	})
	return w.Result, err
}

// change runs one decision about a job and returns the job after it.
func (s *Service) change(ctx context.Context, id string, decide func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error)) (*jobs.Job, error) {
	st, _, err := s.write(ctx, decide)
	if err != nil {
		return nil, err
	}
	return st.Job(id)
}

// changeOne is change for a decision that reads job id alone (taken out
// of the snapshot read lazily: jobs.State.mayAct).
func (s *Service) changeOne(ctx context.Context, id string, decide func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error)) (*jobs.Job, error) {
	w, err := decideOn(ctx, s, "", lazyState, false, drafts(decide))
	if err != nil {
		return nil, err
	}
	return s.jobIn(w.view, id)
}

// Edit changes a job before it runs.
func (s *Service) Edit(ctx context.Context, id string, e jobs.Edit) (*jobs.Job, error) {
	return s.change(ctx, id, func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error) {
		return jobs.EditJob(st, s.Policy, id, e, actor, now)
	})
}

// Move reorders the queue.
func (s *Service) Move(ctx context.Context, id string, m jobs.Move) (*jobs.Job, error) {
	return s.change(ctx, id, func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error) {
		return jobs.MoveJob(st, s.Policy, id, m, actor, now)
	})
}

// Cancel cancels a job, or asks its worker to.
func (s *Service) Cancel(ctx context.Context, id string) (*jobs.Job, error) {
	return s.changeOne(ctx, id, func(st *jobs.State, actor string, now time.Time) ([]eventlog.Draft, error) {
		return jobs.CancelJob(st, s.Policy, id, actor, now)
	})
}

// Pause pauses a job, or asks its worker to after the segment.
func (s *Service) Pause(ctx context.Context, id string) (*jobs.Job, error) {
	return s.changeOne(ctx, id, func(st *jobs.State, actor string, _ time.Time) ([]eventlog.Draft, error) {
		return jobs.PauseJob(st, s.Policy, id, actor)
	})
}

// Resume puts a paused job back in its place.
func (s *Service) Resume(ctx context.Context, id string) (*jobs.Job, error) {
	return s.changeOne(ctx, id, func(st *jobs.State, actor string, _ time.Time) ([]eventlog.Draft, error) {
		return jobs.ResumeJob(st, s.Policy, id, actor)
	})
}

// Retry puts a failed job back in the queue, at its first unfinished segment.
func (s *Service) Retry(ctx context.Context, id string) (*jobs.Job, error) {
	return s.change(ctx, id, func(st *jobs.State, actor string, _ time.Time) ([]eventlog.Draft, error) {
		return jobs.RetryJob(st, s.Policy, id, actor)
	})
}

// SetQuota sets a quota.
func (s *Service) SetQuota(ctx context.Context, q jobs.Quota) error {
	_, _, err := s.write(ctx, func(st *jobs.State, actor string, _ time.Time) ([]eventlog.Draft, error) {
		d, err := jobs.SetQuota(st, s.Policy, q, actor)
		return []eventlog.Draft{d}, err
	})
	return err
}

// RemoveQuota removes a quota.
func (s *Service) RemoveQuota(ctx context.Context, scope, name string) error {
	_, _, err := s.write(ctx, func(st *jobs.State, actor string, _ time.Time) ([]eventlog.Draft, error) {
		d, err := jobs.RemoveQuota(st, s.Policy, scope, name, actor)
		return []eventlog.Draft{d}, err
	})
	return err
}

// RemoveSchedule removes a recurring schedule.
func (s *Service) RemoveSchedule(ctx context.Context, id string) error {
	_, _, err := s.write(ctx, func(st *jobs.State, actor string, _ time.Time) ([]eventlog.Draft, error) {
		d, err := jobs.RemoveSchedule(st, s.Policy, id, actor)
		return []eventlog.Draft{d}, err
	})
	return err
}

// Claim dispatches one job to worker, which has slots in all: for a
// process that does not run the job itself (spool job claim), whose own
// end says nothing about the job's.
func (s *Service) Claim(ctx context.Context, worker string, slots int) (*jobs.Claim, error) {
	return s.claim(ctx, worker, slots, nil)
}

// ClaimHere is Claim by a worker that runs the job in this process (spool
// job worker, spool watch): the claim records this process, so that should
// it die, a claim or tick on this machine gives the job back without
// waiting for the lease.
func (s *Service) ClaimHere(ctx context.Context, worker string, slots int) (*jobs.Claim, error) {
	var holder *jobs.ProcRecord
	if self := proc.Self(); self.Start != 0 {
		h := jobs.ProcRecord(self)
		holder = &h
	}
	return s.claim(ctx, worker, slots, holder)
}

func (s *Service) claim(ctx context.Context, worker string, slots int, holder *jobs.ProcRecord) (*jobs.Claim, error) {
	// A claim decides on the jobs decoded but the idle ones (Claimable): at
	// 10,000 queued jobs decoding them was most of a claim.
	claimable := func(v *projections.View) *jobs.State {
		p, _ := projections.As[*jobs.Projection](v, jobs.Name)
		return p.Claimable()
	}
	w, err := decideOn(ctx, s, worker, claimable, false, func(st *jobs.State, _ string, now time.Time) ([]eventlog.Draft, *jobs.Claim, error) {
		return jobs.ClaimJobHeld(st, s.Policy, worker, holder, gone(st), slots, now)
	})
	c := w.Result
	if err != nil || c == nil {
		return nil, err
	}
	// The job as the claim left it: c.Job is the record the decision
	// read, before the claim.
	if c.Job, err = s.jobIn(w.view, c.Job.ID); err != nil {
		return nil, err
	}
	return c, nil
}

// SegmentDone records a segment's end and what follows; next is the
// segment the worker runs now, or -1.
func (s *Service) SegmentDone(ctx context.Context, id, worker string, end jobs.SegmentEnd) (next int, job *jobs.Job, err error) {
	w, err := decideOn(ctx, s, worker, lazyState, false, func(st *jobs.State, _ string, _ time.Time) ([]eventlog.Draft, int, error) {
		return jobs.SegmentDone(st, id, worker, end)
	})
	if err != nil {
		return -1, nil, err
	}
	job, err = s.jobIn(w.view, id)
	return w.Result, job, err
}

// Heartbeat renews the worker's lease on a job and returns the job, whose
// flags say whether it was asked to cancel, pause or yield.
func (s *Service) Heartbeat(ctx context.Context, id, worker string) (*jobs.Job, error) {
	return s.step(ctx, id, worker, func(st *jobs.State, now time.Time) (eventlog.Draft, error) {
		d, _, err := jobs.Heartbeat(st, s.Policy, id, worker, now)
		return d, err
	})
}

// Finish records an external engine's outcome.
func (s *Service) Finish(ctx context.Context, id, worker string, status jobs.Status, msg string) (*jobs.Job, error) {
	return s.step(ctx, id, worker, func(st *jobs.State, _ time.Time) (eventlog.Draft, error) {
		return jobs.Finish(st, id, worker, status, msg)
	})
}

// step is one event a worker records about job id, which is all the
// decision reads (a state read lazily: decoding every job was most of a
// heartbeat at 10,000 jobs); it returns the job after it.
func (s *Service) step(ctx context.Context, id, worker string, decide func(st *jobs.State, now time.Time) (eventlog.Draft, error)) (*jobs.Job, error) {
	w, err := decideOn(ctx, s, worker, lazyState, false, func(st *jobs.State, _ string, now time.Time) ([]eventlog.Draft, struct{}, error) {
		d, err := decide(st, now)
		return []eventlog.Draft{d}, struct{}{}, err
	})
	if err != nil {
		return nil, err
	}
	return s.jobIn(w.view, id)
}

// lazyState is the state with its jobs maybe still encoded (Projection.Lazy).
func lazyState(v *projections.View) *jobs.State {
	p, _ := projections.As[*jobs.Projection](v, jobs.Name)
	return p.Lazy()
}

// Release gives back the jobs worker holds.
func (s *Service) Release(ctx context.Context, worker string) (int, error) {
	_, events, err := s.worker(ctx, worker, func(st *jobs.State, _ string, _ time.Time) ([]eventlog.Draft, error) {
		return jobs.Release(st, worker), nil
	})
	return len(events), err
}

// StoppedForCancel records that the worker stopped a cancelled job.
func (s *Service) StoppedForCancel(ctx context.Context, id, worker string) error {
	_, err := s.step(ctx, id, worker, func(st *jobs.State, _ time.Time) (eventlog.Draft, error) {
		return jobs.StoppedForCancel(st, id, worker)
	})
	return err
}

// Tick records what the clock alone decides (jobs.Tick: scheduled jobs
// released, expired leases and dead workers' jobs requeued, recurring
// occurrences submitted) and returns the events and when the clock next
// decides something. When nothing is due it reads only: no lock, no actor.
func (s *Service) Tick(ctx context.Context) ([]eventlog.Event, time.Time, error) {
	st, err := s.Read(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := s.now()
	if len(jobs.Tick(st, s.Policy, now, gone(st))) == 0 {
		return nil, jobs.NextTick(st, s.Policy, now), nil
	}
	st, events, err := s.write(ctx, func(st *jobs.State, _ string, now time.Time) ([]eventlog.Draft, error) {
		return jobs.Tick(st, s.Policy, now, gone(st)), nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return events, jobs.NextTick(st, s.Policy, s.now()), nil
}

// gone are the recorded worker processes of held jobs that are certainly
// dead on this machine (proc.Gone): what jobs.Tick needs to know of the
// machine. A worker of another machine or boot, a live one (this process
// included) and a claim that recorded no process are never among them.
func gone(st *jobs.State) jobs.Gone {
	var out jobs.Gone
	for _, j := range st.Jobs {
		if j.Status.Held() && j.Holder != nil && !out[*j.Holder] &&
			proc.Gone(proc.Record(*j.Holder)) { // the same fields: the log's record of proc's
			if out == nil {
				out = jobs.Gone{}
			}
			out[*j.Holder] = true
		}
	}
	return out
}
