package service

import (
	"context"
	"fmt"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/workqueue"
)

// Apply makes the plan a plan-phase proposal describes (or holds it for
// approval), once: the same proposal again makes nothing.
func (s *Service) Apply(ctx context.Context, data []byte, title string) (plans.Outcome, error) {
	p, err := plans.ParsePlan(data, s.maxTasks)
	if err != nil {
		return plans.Outcome{}, err
	}
	return s.applyPlan(ctx, p, title, "")
}

func (s *Service) applyPlan(ctx context.Context, p plans.PlanProposal, title, approving string) (plans.Outcome, error) {
	if err := s.native(); err != nil {
		return plans.Outcome{}, err
	}
	return s.decideTasks(ctx, approving, func(st *plans.State, wq *workqueue.State, c plans.Context) ([]eventlog.Draft, plans.Outcome, error) {
		return plans.ApplyPlan(st, wq, p, title, c)
	})
}

// Feedback makes a verify-phase proposal's tasks under its plan (or holds
// it), once.
func (s *Service) Feedback(ctx context.Context, data []byte) (plans.Outcome, error) {
	p, err := plans.ParseFeedback(data, s.maxTasks)
	if err != nil {
		return plans.Outcome{}, err
	}
	return s.applyFeedback(ctx, p, "")
}

func (s *Service) applyFeedback(ctx context.Context, p plans.FeedbackProposal, approving string) (plans.Outcome, error) {
	if err := s.native(); err != nil {
		return plans.Outcome{}, err
	}
	return s.decideTasks(ctx, approving, func(st *plans.State, wq *workqueue.State, c plans.Context) ([]eventlog.Draft, plans.Outcome, error) {
		return plans.ApplyFeedback(st, wq, p, c)
	})
}

// decideTasks runs a decision that makes tasks; approving a held proposal
// adds its approval to the same append, even when the proposal's content
// was applied meanwhile.
func (s *Service) decideTasks(ctx context.Context, approving string, decide func(*plans.State, *workqueue.State, plans.Context) ([]eventlog.Draft, plans.Outcome, error)) (plans.Outcome, error) {
	c, err := s.context(approving)
	if err != nil {
		return plans.Outcome{}, err
	}
	_, out, err := decideWith(ctx, s, withTasks, func(st *plans.State, wq *workqueue.State) ([]eventlog.Draft, plans.Outcome, error) {
		var approval []eventlog.Draft
		if approving != "" {
			d, _, err := plans.Approve(st, approving)
			if err != nil {
				return nil, plans.Outcome{}, err
			}
			approval = append(approval, d)
		}
		drafts, o, err := decide(st, wq, c)
		return append(drafts, approval...), o, err
	})
	return out, err
}

// Approval is what approving a proposal did.
type Approval struct {
	ID      string         `json:"id"`
	Kind    string         `json:"kind"`
	Outcome *plans.Outcome `json:"outcome,omitempty"`
	PRD     *PRDResult     `json:"prd,omitempty"`
}

// Approve applies a held proposal as it was proposed; it is checked again
// against the state as it is now.
func (s *Service) Approve(ctx context.Context, id string) (Approval, error) {
	st, _, err := s.Read(ctx)
	if err != nil {
		return Approval{}, err
	}
	_, prop, err := plans.Approve(st, id)
	if err != nil {
		return Approval{}, err
	}
	a := Approval{ID: id, Kind: prop.Kind}
	var out plans.Outcome
	switch prop.Kind {
	case plans.KindPlan:
		var p plans.PlanProposal
		if p, err = plans.ParsePlan(prop.Body, s.maxTasks); err == nil {
			out, err = s.applyPlan(ctx, p, prop.Title, id)
		}
	case plans.KindFeedback:
		var p plans.FeedbackProposal
		if p, err = plans.ParseFeedback(prop.Body, s.maxTasks); err == nil {
			out, err = s.applyFeedback(ctx, p, id)
		}
	case plans.KindPRD:
		var p plans.PRDProposal
		if p, err = plans.ParsePRD(prop.Body); err == nil {
			var r PRDResult
			r, err = s.applyPRD(ctx, p, prop.PlanID, id, nil)
			a.PRD = &r
		}
		return a, err
	default:
		return a, fault.New(plans.CodeInvalidProposal, nil, fmt.Sprintf("proposal %s is of kind %q, which this spool cannot apply", id, prop.Kind), "path", "$")
	}
	a.Outcome = &out
	return a, err
}

// Reject drops a held proposal.
func (s *Service) Reject(ctx context.Context, id, reason string) error {
	_, err := s.write(ctx, []string{plans.Name}, func(st *plans.State, _ *workqueue.State) ([]eventlog.Draft, error) {
		d, err := plans.Reject(st, id, reason)
		return []eventlog.Draft{d}, err
	})
	return err
}

// AddFeedback queues feedback for the planner; it returns its id.
func (s *Service) AddFeedback(ctx context.Context, text string) (string, error) {
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return "", err
	}
	_, id, err := decideWith(ctx, s, []string{plans.Name}, func(st *plans.State, _ *workqueue.State) ([]eventlog.Draft, string, error) {
		d, id, err := plans.AddFeedback(st, text, writer, s.Now)
		return []eventlog.Draft{d}, id, err
	})
	return id, err
}
