package service

import (
	"context"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/plans"
)

// PlanView is a plan with its tasks as the tracker has them now.
type PlanView struct {
	*plans.Plan
	State string     `json:"state"` // planned, building, built
	Items []PlanTask `json:"items"` // the epic's tasks: the gate, the plan's, those feedback added
}

// PlanTask is one task of a plan.
type PlanTask struct {
	Index  *int   `json:"index,omitempty"` // in the plan's proposal
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	Role   string `json:"role"` // gate, task, feedback
}

func view(p *plans.Plan, title func(id string) (string, string)) PlanView {
	v := PlanView{Plan: p, State: "planned"}
	switch {
	case p.Building:
		v.State = "building"
	case p.ShippedAt != nil:
		v.State = "built"
	}
	item := func(id, role string, index *int) {
		t, status := title(id)
		v.Items = append(v.Items, PlanTask{Index: index, ID: id, Title: t, Status: status, Role: role})
	}
	item(p.Gate, "gate", nil)
	for _, r := range p.Tasks {
		i := r.Index
		item(r.ID, "task", &i)
	}
	for _, id := range p.Added {
		item(id, "feedback", nil)
	}
	return v
}

// Show returns one plan.
func (s *Service) Show(ctx context.Context, id string) (PlanView, error) {
	vs, err := s.views(ctx, id)
	if err != nil {
		return PlanView{}, err
	}
	return vs[0], nil
}

// List returns every plan, oldest first.
func (s *Service) List(ctx context.Context) ([]PlanView, error) { return s.views(ctx, "") }

func (s *Service) views(ctx context.Context, id string) ([]PlanView, error) {
	st, wq, err := s.Read(ctx)
	if err != nil {
		return nil, err
	}
	title := func(id string) (string, string) {
		if t := wq.Task(id); t != nil {
			return t.Title, t.Status
		}
		return "", "missing"
	}
	if id != "" {
		p := st.Plans[id]
		if p == nil {
			return nil, fault.NotFound("plan", id)
		}
		return []PlanView{view(p, title)}, nil
	}
	out := []PlanView{}
	for _, p := range st.PlanList() {
		out = append(out, view(p, title))
	}
	return out, nil
}

// Proposals lists proposals: those waiting, or all.
func (s *Service) Proposals(ctx context.Context, all bool) ([]*plans.Proposal, error) {
	st, err := s.plansState(ctx)
	if err != nil {
		return nil, err
	}
	if all {
		return st.ProposalList(""), nil
	}
	return st.ProposalList(plans.Held), nil
}

// FeedbackList lists feedback: pending only, or all.
func (s *Service) FeedbackList(ctx context.Context, all bool) ([]*plans.Feedback, error) {
	st, err := s.plansState(ctx)
	if err != nil {
		return nil, err
	}
	return st.FeedbackList(!all), nil
}

func (s *Service) plansState(ctx context.Context) (*plans.State, error) {
	v, err := s.Store.Read(ctx, plans.Name)
	if err != nil {
		return nil, err
	}
	st, _ := states(v)
	return st, nil
}
