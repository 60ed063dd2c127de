package service

import (
	"context"
	"io"
	"os"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"
)

// Service is the merge queue for one command.
type Service struct {
	store.Env
	Policy mergequeue.Policy
}

// Open reads the queue's configuration; nothing is read from the log yet.
func Open(env store.Env) *Service {
	return &Service{Env: env, Policy: mergequeue.PolicyFrom(env.Store.Config)}
}

func queueOf(v *projections.View) *mergequeue.State {
	q, _ := projections.As[*mergequeue.State](v, mergequeue.Name)
	return q
}

// Queue reads the merge queue, recovering expired entries and those of a
// dead runner first (every merge command does: no daemon is needed for a
// dead runner's entry).
func (s *Service) Queue(ctx context.Context) (*mergequeue.State, error) {
	v, err := s.Store.Read(ctx, mergequeue.Name)
	if err != nil {
		return nil, err
	}
	q := queueOf(v)
	if !NeedsRecovery(q, s.Now) {
		return q, nil
	}
	if _, err := s.Recover(ctx); err != nil {
		return nil, err
	}
	v, err = s.Store.Read(ctx, mergequeue.Name)
	if err != nil {
		return nil, err
	}
	return queueOf(v), nil
}

// Order is the pending entries in the order the train claims them now,
// aging counted (mergequeue.State.OrderAt with merge.aging and the
// command's clock).
func (s *Service) Order(q *mergequeue.State) mergequeue.Order {
	return q.OrderAt(s.Now, s.Policy.Aging)
}

// Entry reads the queue and finds the entry a command names (see
// mergequeue.State.Lookup).
func (s *Service) Entry(ctx context.Context, handle string) (*mergequeue.State, *mergequeue.Entry, error) {
	q, err := s.Queue(ctx)
	if err != nil {
		return nil, nil, err
	}
	en, err := q.Lookup(handle)
	return q, en, err
}

// Recover recovers every entry whose lease has expired.
func (s *Service) Recover(ctx context.Context) ([]eventlog.Event, error) {
	actor, err := s.Actor(ctx)
	if err != nil {
		return nil, err
	}
	return recoverExpired(ctx, s.Store, actor, s.Now, s.Warn)
}

// Change runs a decider for a command that changes the queue (cancel,
// retry, freeze), after recovering expired entries, and returns the new state.
func (s *Service) Change(ctx context.Context, decide func(q *mergequeue.State, actor string) ([]eventlog.Draft, error)) ([]eventlog.Event, *mergequeue.State, error) {
	if _, err := s.Queue(ctx); err != nil {
		return nil, nil, err
	}
	events, v, err := s.Env.Write(ctx, []string{mergequeue.Name}, func(v *projections.View, actor string) ([]eventlog.Draft, error) {
		return decide(queueOf(v), actor)
	})
	if err != nil {
		return nil, nil, err
	}
	return events, queueOf(v), nil
}

// ChangeEntry is Change for one entry, found under the log's lock where the
// decision is made (a merge may have renumbered entries since the command
// started); it returns the entry after the change.
func (s *Service) ChangeEntry(ctx context.Context, handle string, decide func(q *mergequeue.State, id int64, actor string) ([]eventlog.Draft, error)) (*mergequeue.State, *mergequeue.Entry, error) {
	if _, err := s.Queue(ctx); err != nil { // recovers expired entries first, as Change
		return nil, nil, err
	}
	w, err := store.WriteAs(ctx, s.Env, store.Local, []string{mergequeue.Name}, func(v *projections.View, actor string) ([]eventlog.Draft, string, error) {
		q := queueOf(v)
		en, err := q.Lookup(handle)
		if err != nil {
			return nil, "", err
		}
		d, err := decide(q, en.ID, actor)
		return d, en.Ref, err
	})
	if err != nil {
		return nil, nil, err
	}
	q := queueOf(w.View)
	return q, q.EntryByRef(w.Result), nil
}

// Cancel cancels an entry.
func (s *Service) Cancel(ctx context.Context, handle, reason string) (*mergequeue.State, *mergequeue.Entry, error) {
	return s.ChangeEntry(ctx, handle, func(q *mergequeue.State, id int64, actor string) ([]eventlog.Draft, error) {
		return mergequeue.DecideCancel(q, id, actor, reason, s.Policy)
	})
}

// Retry puts a failed_retryable entry back in the queue.
func (s *Service) Retry(ctx context.Context, handle string) (*mergequeue.State, *mergequeue.Entry, error) {
	return s.ChangeEntry(ctx, handle, func(q *mergequeue.State, id int64, actor string) ([]eventlog.Draft, error) {
		return mergequeue.DecideRetry(q, id, actor, s.Policy)
	})
}

// Freeze stops the train claiming (on) or lets it claim again; changed is
// false when the queue already was so.
func (s *Service) Freeze(ctx context.Context, on bool, reason string) (q *mergequeue.State, changed bool, err error) {
	events, q, err := s.Change(ctx, func(q *mergequeue.State, actor string) ([]eventlog.Draft, error) {
		if err := mergequeue.MayFreeze(s.Policy, actor); err != nil {
			return nil, err
		}
		if on {
			return mergequeue.DecideFreeze(q, reason), nil
		}
		return mergequeue.DecideUnfreeze(q), nil
	})
	return q, len(events) > 0, err
}

// Trail is an entry's audit trail, read from the log.
func (s *Service) Trail(ctx context.Context, e *mergequeue.Entry) ([]mergequeue.AuditStep, error) {
	return trail(ctx, s.Store, e)
}

// Show is merge show: the entry, its audit trail and where each attempt's
// test output is (mergequeue.AttemptLogs), saying which files this clone has.
// A pending entry is shown at its position in Order, with its effective
// priority and why.
func (s *Service) Show(ctx context.Context, q *mergequeue.State, e *mergequeue.Entry) (mergequeue.Shown, error) {
	o := s.Order(q)
	st, pending := o.Of(e)
	e = o.Standing(e)
	steps, err := trail(ctx, s.Store, e)
	if err != nil {
		return mergequeue.Shown{}, err
	}
	logs := mergequeue.AttemptLogs(store.RunsDir(s.Store.Repo), e, steps)
	for i := range logs {
		fi, err := os.Lstat(logs[i].Path)
		logs[i].Exists = err == nil && fi.Mode().IsRegular()
	}
	shown := mergequeue.Shown{Entry: e, History: steps, Logs: logs}
	if pending {
		shown.EffectivePriority, shown.Aging = &st.Effective, st.Aging(e.Priority)
	}
	return shown, nil
}

// Train makes the merge train's runner for target (merge.target when empty).
func (s *Service) Train(ctx context.Context, target string, out io.Writer) (*Runner, error) {
	if _, _, err := mergequeue.TestPlan(s.Store.Config); err != nil {
		return nil, err
	}
	actor, err := s.Actor(ctx)
	if err != nil {
		return nil, err
	}
	if target == "" {
		target = s.Policy.Target
	}
	return &Runner{Store: s.Store, Actor: actor, Target: target, ID: NewRunnerID(actor), Out: out, Warn: s.Warn}, nil
}
