package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"github.com/spoolhq/spool/internal/store"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
	"github.com/spoolhq/spool/projections"
)

// Say reports one thing a driver did, for people (a line) or scripts (--json).
type Say func(driver, msg string)

// quick is a driver whose pass is short and idempotent: its recovery is a
// pass, and it holds nothing to give back on stop.
type quick struct {
	name string
	pass func(ctx context.Context, env store.Env) (Result, error)
}

func (q quick) Name() string { return q.name }
func (q quick) Recover(ctx context.Context, env store.Env) error {
	_, err := q.pass(ctx, env)
	return err
}
func (q quick) Pass(ctx context.Context, env store.Env) (Result, error) { return q.pass(ctx, env) }
func (q quick) Stop(context.Context, store.Env) error                   { return nil }

// Tasks records the task claims whose lease ran out, when it runs out,
// and runs the notification hooks a command of this clone left to run.
func Tasks(say Say) Driver {
	return quick{"tasks", func(ctx context.Context, env store.Env) (Result, error) {
		q := wqservice.Open(env)
		released, next, err := q.ExpireClaims(ctx)
		if len(released) > 0 {
			say("tasks", fmt.Sprintf("released %d expired task claim(s): %s", len(released), strings.Join(released, ", ")))
		}
		if err == nil {
			err = q.RunHooks(ctx)
		}
		return Result{Next: next}, err
	}}
}

// MergeRecovery recovers merge entries whose runner is gone (its lease ran
// out, or its process on this machine ended), as every merge command does;
// the train itself is Train.
func MergeRecovery(say Say) Driver {
	return quick{"merge", func(ctx context.Context, env store.Env) (Result, error) {
		q, err := mergeQueue(ctx, env.Store)
		if err != nil || !mqservice.NeedsRecovery(q, env.Now) {
			return Result{Next: nextExpiry(q, env.Now)}, err
		}
		events, err := mqservice.Open(env).Recover(ctx)
		for _, ev := range events {
			var d mergequeue.EntryData
			if ev.Type == mergequeue.EvRecovered && json.Unmarshal(ev.Data, &d) == nil {
				say("merge", fmt.Sprintf("merge entry %d: its runner is gone; %s → %s", d.EntryID, d.From, d.To))
			}
		}
		if err != nil {
			return Result{}, err
		}
		q, err = mergeQueue(ctx, env.Store)
		return Result{Next: nextExpiry(q, env.Now)}, err
	}}
}

func mergeQueue(ctx context.Context, st *store.Store) (*mergequeue.State, error) {
	v, err := st.Read(ctx, mergequeue.Name)
	if err != nil {
		return nil, err
	}
	q, _ := projections.As[*mergequeue.State](v, mergequeue.Name)
	return q, nil
}

func nextExpiry(q *mergequeue.State, now time.Time) time.Time {
	if q == nil {
		return time.Time{}
	}
	return q.NextExpiry(now)
}

// JobTick records what the clock decides for the scheduler: scheduled jobs
// released, jobs of a gone worker requeued, recurring occurrences submitted.
func JobTick(say Say) Driver {
	return quick{"jobs", func(ctx context.Context, env store.Env) (Result, error) {
		events, next, err := jobservice.Open(env).Tick(ctx)
		for _, ev := range events {
			if msg := tickNote(ev); msg != "" {
				say("jobs", msg)
			}
		}
		return Result{Next: next}, err
	}}
}

func tickNote(ev eventlog.Event) string {
	switch ev.Type {
	case jobs.TypeReleased:
		return fmt.Sprintf("job %s released: its start time came", ev.Subject)
	case jobs.TypeRequeued:
		return fmt.Sprintf("job %s requeued: its worker is gone", ev.Subject)
	case jobs.TypeCancelled:
		return fmt.Sprintf("job %s cancelled: its worker is gone", ev.Subject)
	case jobs.TypeSubmitted:
		return fmt.Sprintf("job %s submitted by its schedule", ev.Subject)
	}
	return ""
}

// PRD syncs the PRD queue with its files and promotes what became runnable,
// finishing promotions a crash left between intent and outcome; each pass
// then checks again the readiness of queued PRDs that a check passed (a
// closed epic is no longer selectable). It does nothing while there is no
// feature run.
func PRD(say Say) Driver { return prdDriver{say} }

type prdDriver struct{ say Say }

func (prdDriver) Name() string                          { return "prd" }
func (prdDriver) Stop(context.Context, store.Env) error { return nil }

// Recover finishes promotions; the readiness waits for the first pass,
// which follows at once: the tracker is asked once.
func (d prdDriver) Recover(ctx context.Context, env store.Env) error {
	return d.promote(ctx, prdservice.Open(env, env.Store.Repo.WorkTree))
}

func (d prdDriver) Pass(ctx context.Context, env store.Env) (Result, error) {
	q := prdservice.Open(env, env.Store.Repo.WorkTree)
	if err := d.promote(ctx, q); err != nil {
		return Result{}, err
	}
	checked, err := q.Recheck(ctx)
	for _, it := range checked {
		d.say("prd", fmt.Sprintf("PRD %s readiness re-checked: selectable=%v doctor_pass=%v", it.PRDSlug, it.Readiness.Selectable, it.Readiness.DoctorPass))
	}
	return Result{}, err
}

func (d prdDriver) promote(ctx context.Context, q *prdservice.Service) error {
	done, err := q.PromoteDue(ctx)
	for _, p := range done {
		switch {
		case p.Refused:
			d.say("prd", fmt.Sprintf("PRD %s (feature %s) is not promoted: %s", p.PRD, p.Feature, p.Error))
		case p.Failed:
			d.say("prd", fmt.Sprintf("PRD %s could not be enqueued: %s", p.PRD, p.Error))
		default:
			d.say("prd", fmt.Sprintf("PRD %s queued as %s", p.PRD, p.Epic))
		}
	}
	return err
}

// Recovery is what a crash could have left and the clock decides: what a
// git hook runs itself when no watcher runs.
func Recovery(say Say) []Driver {
	return []Driver{Tasks(say), MergeRecovery(say), JobTick(say), PRD(say)}
}
