package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/ids"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Promotion: every runnable PRD gets its epic and moves to queued, in
// manifest order, by at most the feature's worker_cap enqueue workers, with
// one automatic retry. A later approval_version is queued onto the PRD's
// epic while the tracker has it open, and onto a new one once it is closed
// (prdqueue.Candidate.EpicFor): a new version always has work to take.
//
// With spool's own tracker an epic is a task.created in the same append as
// the prd.enqueued that records it: there is nothing to recover. Its id is
// its key's (ids.ForKey), so two clones that promoted one PRD apart (claims
// kept local, or offline) made one epic: the log keeps its first creation. With bd/br
// the epic is made by `<bin> create` between prd.enqueue_started (appended
// first, for every PRD taken) and the outcome; the epic carries the
// idempotency key as its external_ref, so a promote after a crash finds
// the epic an earlier run made instead of making a second.

// Promoted is what one promote did to one PRD: queued it onto Epic, or it
// failed (queue_failed) or refused it (Refused), Error saying why and Err
// being that as an error with its code and fields.
type Promoted struct {
	Feature, PRD, Key, Epic string
	Failed, Refused         bool
	Error                   string
	Err                     error
}

// refused are a promote's refusals as its outcomes.
func refused(rs []prdqueue.Refusal) []Promoted {
	out := make([]Promoted, 0, len(rs))
	for _, r := range rs {
		out = append(out, Promoted{Feature: r.Item.Feature, PRD: r.Item.PRD, Refused: true, Error: r.Message, Err: r.Err()})
	}
	return out
}

// ExternalRef is the external_ref an epic made for key carries.
func ExternalRef(key string) string { return "spool:" + key }

// Promote syncs, then enqueues the runnable PRDs of one feature (or all).
// Promotions of one clone take turns (.git/spool/prd-promote.lock). An
// entry promote refuses is among the outcomes, after the others: it stops
// no other entry.
func (s *Service) Promote(ctx context.Context, feature string) ([]Promoted, error) {
	if _, err := s.Sync(ctx, feature); err != nil {
		return nil, err
	}
	return s.promote(ctx, feature)
}

// promote is Promote after its sync.
func (s *Service) promote(ctx context.Context, feature string) ([]Promoted, error) {
	unlock, ok, err := s.Store.Mutex(ctx, "prd-promote", s.wq.Core.LockTimeout)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("another spool prd promote holds %s: %w", s.Store.MutexPath("prd-promote"), eventlog.ErrLockTimeout)
	}
	defer unlock()
	if s.source == nil {
		return s.promoteNative(ctx, feature)
	}
	return s.promoteSource(ctx, feature)
}

// PromoteDue is Promote of every feature when there is something to do: a
// PRD runnable, or a promotion with an intent and no outcome (a crash). It
// does nothing when there is no feature run, and takes no lock when
// nothing changed.
func (s *Service) PromoteDue(ctx context.Context) ([]Promoted, error) {
	st, err := s.Read(ctx)
	if err != nil || len(st.Features) == 0 {
		return nil, err
	}
	if _, err := s.Sync(ctx, ""); err != nil {
		return nil, err
	}
	if st, err = s.Read(ctx); err != nil {
		return nil, err
	}
	if cands, _, err := prdqueue.Runnable(st, ""); err != nil || len(cands) == 0 && len(prdqueue.InFlight(st, "")) == 0 {
		return nil, err // a refusal alone is no promotion to run: the manifests say it
	}
	return s.promote(ctx, "") // synced above: a watch tick reads the files once
}

func (s *Service) promoteNative(ctx context.Context, feature string) ([]Promoted, error) {
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return nil, err
	}
	prefix := s.wq.Prefix
	// The tracker's tasks: whether a PRD's epic is still open (EpicFor).
	w, err := writeAs(ctx, s, store.Claiming, []string{workqueue.IDsName, workqueue.Name}, func(st *prdqueue.State, v *projections.View, _ string) ([]eventlog.Draft, []Promoted, error) {
		cands, rs, err := prdqueue.Runnable(st, feature)
		if err != nil {
			return nil, nil, err
		}
		var out []Promoted
		taken, _ := projections.As[*workqueue.IDsProjection](v, workqueue.IDsName)
		tasks, _ := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
		index := workqueue.NewBatchIndex(taken)
		var drafts []eventlog.Draft
		for _, c := range cands {
			epic := c.Epic
			if epic != "" {
				t := tasks.State().Task(epic)
				epic = c.EpicFor(taskStatus(t), t != nil)
			}
			if id := ids.ForKey(prefix, c.Key); epic == "" && index.HasTask(id) {
				epic = id // made by another clone, whose promotion this one has now
			} else if epic == "" {
				task := epicTask(st, c)
				task.ID = id
				d, id, err := workqueue.AddTask(index, task, prefix, writer, s.Now)
				if err != nil {
					return nil, nil, err
				}
				d.Idem = workqueue.KeyedCreation(id) // another clone's is the same creation
				index.Made(id)
				drafts, epic = append(drafts, d), id
			}
			drafts = append(drafts, c.Enqueued(epic, 1))
			out = append(out, Promoted{Feature: c.Item.Feature, PRD: c.Item.PRD, Key: c.Key, Epic: epic})
		}
		return drafts, append(out, refused(rs)...), nil
	})
	return w.Result, err
}

func taskStatus(t *workqueue.Task) string {
	if t == nil {
		return ""
	}
	return t.Status
}

func epicTask(st *prdqueue.State, c prdqueue.Candidate) workqueue.NewTask {
	p := st.PRDs[c.Item.PRD]
	return workqueue.NewTask{Title: "PRD " + c.Item.PRD, Description: "Epic of the PRD " + p.Path + " (" + c.Key + ").",
		Type: "epic", Labels: []string{"prd"}}
}

// job is one PRD to enqueue with bd/br.
type job struct {
	c       prdqueue.Candidate
	recover bool // an intent without an outcome: look the epic up first
	desc    string
}

func (s *Service) promoteSource(ctx context.Context, feature string) ([]Promoted, error) {
	st, err := s.Read(ctx)
	if err != nil {
		return nil, err
	}
	var jobs []job
	for _, c := range prdqueue.InFlight(st, feature) {
		jobs = append(jobs, job{c: c, recover: true, desc: "PRD " + st.PRDs[c.Item.PRD].Path})
	}
	type runnable struct {
		cands    []prdqueue.Candidate
		refusals []prdqueue.Refusal
	}
	w, err := writeAs(ctx, s, store.Claiming, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, runnable, error) {
		cands, refusals, err := prdqueue.Runnable(st, feature)
		if err != nil {
			return nil, runnable{}, err
		}
		drafts := make([]eventlog.Draft, 0, len(cands))
		for _, c := range cands {
			drafts = append(drafts, c.Started())
		}
		return drafts, runnable{cands, refusals}, nil
	})
	if err != nil {
		return nil, err
	}
	cands, refusals := w.Result.cands, w.Result.refusals
	for _, c := range cands {
		jobs = append(jobs, job{c: c, desc: "PRD " + st.PRDs[c.Item.PRD].Path})
	}
	// Feature by feature, each with its own worker cap, in manifest order.
	var out []Promoted
	for len(jobs) > 0 {
		f := jobs[0].c.Item.Feature
		n := 1
		for n < len(jobs) && jobs[n].c.Item.Feature == f {
			n++
		}
		workers := st.Features[f].WorkerCap
		if st.Features[f].Mode == prdqueue.ModeSequential {
			workers = 1 // one PRD's epic after another
		}
		done, err := s.runJobs(ctx, jobs[:n], workers)
		out = append(out, done...)
		if err != nil {
			return out, err
		}
		jobs = jobs[n:]
	}
	return append(out, refused(refusals)...), nil
}

// runJobs runs jobs with at most workers at a time, taking them in order,
// and appends each job's outcome in the jobs' order, whatever order they
// finish in: the log reads the same however the workers were timed.
func (s *Service) runJobs(ctx context.Context, jobs []job, workers int) ([]Promoted, error) {
	results := make([]chan outcome, len(jobs))
	for i := range results {
		results[i] = make(chan outcome, 1)
	}
	sem := make(chan struct{}, max(workers, 1))
	fault.Go(func() {
		for i, j := range jobs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			fault.Go(func() {
				defer func() { <-sem }()
				results[i] <- s.enqueue(ctx, j)
			})
		}
	})
	var out []Promoted
	for i, j := range jobs {
		var o outcome
		select {
		case o = <-results[i]:
		case <-ctx.Done():
			return out, ctx.Err() // what is not recorded stays in flight: the next promote recovers it
		}
		if _, _, err := s.write(ctx, nil, func(*prdqueue.State, *projections.View, string) ([]eventlog.Draft, error) {
			return o.drafts, nil
		}); err != nil {
			return out, err
		}
		out = append(out, promoted(j.c, o))
	}
	return out, nil
}

// outcome is an enqueue's events and, when it ended queue_failed, the last
// attempt's error.
type outcome struct {
	drafts []eventlog.Draft
	err    error
}

// enqueue makes the job's epic: the one an interrupted run made, the PRD's
// own while bd has it open, or a new one, with one retry. It returns the
// outcome.
func (s *Service) enqueue(ctx context.Context, j job) outcome {
	c := j.c
	ref := ExternalRef(c.Key)
	find := func() (string, bool) {
		id, found, err := s.source.FindByExternalRef(ctx, ref)
		return id, err == nil && found
	}
	if j.recover {
		if id, ok := find(); ok {
			return outcome{drafts: []eventlog.Draft{c.Enqueued(id, 1)}}
		}
	}
	var drafts []eventlog.Draft
	var err error
	for attempt := 1; attempt <= 2; attempt++ {
		var id string
		if id, err = s.epicFor(ctx, j, ref); err == nil {
			return outcome{drafts: append(drafts, c.Enqueued(id, attempt))}
		}
		if ctx.Err() != nil {
			return outcome{drafts: drafts} // interrupted: leave it in flight
		}
		drafts = append(drafts, c.Failed(attempt, fault.Classify(err).Message, attempt == 2))
		if attempt == 1 {
			// The failure may have come after the epic was made (a timeout):
			// look before trying again.
			if id, ok := find(); ok {
				return outcome{drafts: append(drafts, c.Enqueued(id, 1))}
			}
		}
	}
	return outcome{drafts: drafts, err: err}
}

// epicFor is the PRD's epic while bd has it open (prdqueue's EpicFor), else
// a new one, carrying the key as its external_ref.
func (s *Service) epicFor(ctx context.Context, j job, ref string) (string, error) {
	c := j.c
	if c.Epic != "" {
		status, found, err := s.source.Status(ctx, c.Epic)
		if err != nil {
			return "", err
		}
		if epic := c.EpicFor(status, found); epic != "" {
			return epic, nil
		}
	}
	return s.source.CreateEpic(ctx, "PRD "+c.Item.PRD, "Epic of the "+j.desc+" ("+c.Key+").", ref)
}

func promoted(c prdqueue.Candidate, o outcome) Promoted {
	p := Promoted{Feature: c.Item.Feature, PRD: c.Item.PRD, Key: c.Key}
	if len(o.drafts) == 0 {
		return p
	}
	switch d := o.drafts[len(o.drafts)-1].Data.(prdqueue.EnqueueData); {
	case d.EpicID != "":
		p.Epic = d.EpicID
	default:
		p.Failed, p.Error, p.Err = true, d.Error, o.err
		if p.Err == nil {
			p.Err = errors.New(d.Error)
		}
	}
	return p
}
