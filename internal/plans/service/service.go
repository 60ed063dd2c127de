// Package service runs plans' commands: it validates a proposal whole,
// decides with the pure functions of plans under the log's lock (the plan's
// tasks in the same append as the plan), and does the side effects after
// an intent event and before an outcome event: prd.json written and
// committed (prd.go), the planner run by plan build (build.go).
package service

import (
	"context"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Service is plans for one command.
type Service struct {
	store.Env
	source         string // "" for spool's own tracker, else bd or br
	hil            plans.HIL
	maxTasks       int
	prdFile        string // slash-separated, relative to the work tree
	planner        []string
	plannerTimeout time.Duration
	wq             workqueue.Settings
}

// Open reads the configuration; nothing is read from the log yet.
func Open(env store.Env) *Service {
	set, wq := plans.SettingsFrom(env.Store.Config), workqueue.SettingsFrom(env.Store.Config)
	s := &Service{Env: env, hil: set.HIL, maxTasks: set.MaxTasks,
		prdFile: set.PRDFile, planner: set.PlannerCommand,
		plannerTimeout: set.PlannerTimeout, wq: wq}
	if kind := wq.Source; kind != workqueue.SourceNative {
		s.source = kind
	}
	return s
}

// MaxTasks is orchestrator.max_proposal_tasks.
func (s *Service) MaxTasks() int { return s.maxTasks }

// withTasks are the projections a decision about tasks opens.
var withTasks = []string{plans.Name, workqueue.Name}

func states(v *projections.View) (*plans.State, *workqueue.State) {
	p, _ := projections.As[*plans.Projection](v, plans.Name)
	wq := &workqueue.State{}
	if t, ok := projections.As[*workqueue.TasksProjection](v, workqueue.Name); ok {
		wq = t.State()
	}
	return p.State(), wq
}

// Read returns plans and the tasks up to date.
func (s *Service) Read(ctx context.Context) (*plans.State, *workqueue.State, error) {
	v, err := s.Store.Read(ctx, withTasks...)
	if err != nil {
		return nil, nil, err
	}
	st, wq := states(v)
	return st, wq, nil
}

// write decides under the log's lock and appends; it returns the state
// after the events.
func (s *Service) write(ctx context.Context, names []string, decide func(st *plans.State, wq *workqueue.State) ([]eventlog.Draft, error)) (*plans.State, error) {
	st, _, err := decideWith(ctx, s, names, func(st *plans.State, wq *workqueue.State) ([]eventlog.Draft, struct{}, error) {
		d, err := decide(st, wq)
		return d, struct{}{}, err
	})
	return st, err
}

// decideWith is write for a decision with a result. Like store.Decider,
// decide must be repeatable.
func decideWith[R any](ctx context.Context, s *Service, names []string, decide func(st *plans.State, wq *workqueue.State) ([]eventlog.Draft, R, error)) (*plans.State, R, error) {
	w, err := store.WriteAs(ctx, s.Env, store.Local, names, func(v *projections.View, _ string) ([]eventlog.Draft, R, error) {
		return decide(states(v))
	})
	if err != nil {
		var zero R
		return nil, zero, err
	}
	st, _ := states(w.View)
	return st, w.Result, nil
}

// context is what the decisions need: new task ids' prefix and writer,
// the clock, HIL.
func (s *Service) context(approving string) (plans.Context, error) {
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return plans.Context{}, err
	}
	return plans.Context{Prefix: s.wq.Prefix, Writer: writer, Now: s.Now, HIL: s.hil, Approving: approving}, nil
}

// native refuses what would make tasks while bd/br is the work source.
func (s *Service) native() error {
	if s.source != "" {
		return plans.SourceUnsupported(s.source)
	}
	return nil
}
