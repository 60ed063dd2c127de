package plans

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// Plan is a plan: its epic, its gate (every task waits for it until the
// plan is built) and its tasks.
type Plan struct {
	ID        string     `json:"id"`
	Title     string     `json:"title"`
	Hash      string     `json:"hash"`
	Epic      string     `json:"epic_id"`
	Gate      string     `json:"gate_id"`
	Tasks     []TaskRef  `json:"tasks"`
	Added     []string   `json:"added,omitempty"` // tasks verify-phase feedback added
	CreatedAt time.Time  `json:"created_at"`
	ShippedAt *time.Time `json:"shipped_at,omitempty"`
	Builds    int        `json:"builds,omitempty"`
	Building  bool       `json:"building,omitempty"` // shipped, the PRD step's outcome not recorded
	LastBuild *BuiltData `json:"last_build,omitempty"`
}

// Proposal statuses.
const (
	Held     = "held"
	Approved = "approved"
	Rejected = "rejected"
)

// Proposal is a proposal held for approval, and what became of it.
type Proposal struct {
	ID        string     `json:"id"`
	Status    string     `json:"status"`
	HeldAt    time.Time  `json:"held_at"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	HeldData
}

// Feedback is one piece of feedback and, once a proposal mapped it, its
// category and plan.
type Feedback struct {
	ID       string    `json:"id"`
	Text     string    `json:"text"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Category string    `json:"category,omitempty"`
	PlanID   string    `json:"plan_id,omitempty"`
}

// PRDUpdate is one applied set of section updates.
type PRDUpdate struct {
	PRDUpdatedData
	At time.Time `json:"at"`
}

// State is every plan, proposal and feedback.
type State struct {
	Plans      map[string]*Plan      `json:"plans"`
	Applied    map[string]string     `json:"applied"` // plan and feedback proposal hash → plan id
	Proposals  map[string]*Proposal  `json:"proposals"`
	Feedback   map[string]*Feedback  `json:"feedback"`
	PRDUpdates map[string]*PRDUpdate `json:"prd_updates"` // by proposal hash
}

// NewState returns an empty state.
func NewState() *State {
	return &State{Plans: map[string]*Plan{}, Applied: map[string]string{}, Proposals: map[string]*Proposal{},
		Feedback: map[string]*Feedback{}, PRDUpdates: map[string]*PRDUpdate{}}
}

// Name is the projection's name.
const Name = "plans"

// Spec registers the projection; it has no public files.
var Spec = projections.Spec{Name: Name, Version: 1, New: func() projections.Projection { return &Projection{s: NewState()} }}

// Projection folds plans' events.
type Projection struct{ s *State }

// State returns the folded state.
func (p *Projection) State() *State { return p.s }

func (p *Projection) Apply(e *eventlog.Event) error {
	p.s.Apply(e)
	return nil
}

// MarshalState is the state as JSON (maps' keys sorted: stable).
func (p *Projection) MarshalState() ([]byte, error) { return json.Marshal(p.s) }

func (p *Projection) UnmarshalState(b []byte) error {
	s := NewState()
	if err := json.Unmarshal(b, s); err != nil {
		return err
	}
	p.s = s
	return nil
}

func (p *Projection) Files() ([]projections.File, error) { return nil, nil }

// Apply folds one event; events it cannot use are skipped.
func (s *State) Apply(e *eventlog.Event) {
	kind, id, _ := strings.Cut(e.Subject, "/")
	switch {
	case kind == "plan" && id != "":
		s.applyPlan(e, id)
	case kind == "proposal" && id != "":
		s.applyProposal(e, id)
	case kind == "feedback" && id != "":
		s.applyFeedback(e, id)
	case kind == "prd-file" && e.Type == TypePRDUpdated:
		var d PRDUpdatedData
		if json.Unmarshal(e.Data, &d) == nil && d.Hash != "" {
			s.PRDUpdates[d.Hash] = &PRDUpdate{PRDUpdatedData: d, At: e.At}
		}
	}
}

func (s *State) applyPlan(e *eventlog.Event, id string) {
	if e.Type == TypeCreated {
		var d CreatedData
		if json.Unmarshal(e.Data, &d) != nil || s.Plans[id] != nil {
			return
		}
		s.Plans[id] = &Plan{ID: id, Title: d.Title, Hash: d.Hash, Epic: d.Epic, Gate: d.Gate, Tasks: d.Tasks, CreatedAt: e.At}
		s.Applied[d.Hash] = id
		return
	}
	p := s.Plans[id]
	if p == nil {
		return
	}
	switch e.Type {
	case TypeTasksAdded:
		var d TasksAddedData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		p.Added = append(p.Added, d.Tasks...)
		s.Applied[d.Hash] = id
	case TypeShipped:
		var d ShippedData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		at := d.ShippedAt
		p.ShippedAt, p.Building = &at, true
		p.Builds++
	case TypeBuilt:
		var d BuiltData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		p.Building, p.LastBuild = false, &d
	}
}

func (s *State) applyProposal(e *eventlog.Event, id string) {
	switch e.Type {
	case TypeProposalHeld:
		var d HeldData
		if json.Unmarshal(e.Data, &d) != nil || s.Proposals[id] != nil {
			return
		}
		s.Proposals[id] = &Proposal{ID: id, Status: Held, HeldAt: e.At, HeldData: d}
	case TypeProposalApproved, TypeProposalRejected:
		var d DecisionData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		status := Approved
		if e.Type == TypeProposalRejected {
			status = Rejected
		}
		if s.decided(id, status, e) {
			s.Proposals[id].Reason = d.Reason
		}
	}
}

// decided marks a held proposal approved or rejected; it reports whether
// there was one.
func (s *State) decided(id, status string, e *eventlog.Event) bool {
	p := s.Proposals[id]
	if p == nil || p.Status != Held {
		return false
	}
	at := e.At
	p.Status, p.DecidedAt, p.DecidedBy = status, &at, e.Actor
	return true
}

func (s *State) applyFeedback(e *eventlog.Event, id string) {
	switch e.Type {
	case TypeFeedbackAdded:
		var d FeedbackData
		if json.Unmarshal(e.Data, &d) != nil || d.ID != id || s.Feedback[id] != nil {
			return
		}
		s.Feedback[id] = &Feedback{ID: id, Text: d.Text, By: e.Actor, At: e.At}
	case TypeFeedbackCategorized:
		var d CategorizedData
		f := s.Feedback[id]
		if json.Unmarshal(e.Data, &d) != nil || f == nil || f.Category != "" {
			return
		}
		f.Category, f.PlanID = d.Category, d.PlanID
	}
}

// PlanList returns the plans, oldest first.
func (s *State) PlanList() []*Plan {
	return oldestFirst(s.Plans, func(*Plan) bool { return true }, func(p *Plan) (time.Time, string) { return p.CreatedAt, p.ID })
}

// ProposalList returns the proposals with status (all when ""), oldest first.
func (s *State) ProposalList(status string) []*Proposal {
	return oldestFirst(s.Proposals, func(p *Proposal) bool { return status == "" || p.Status == status },
		func(p *Proposal) (time.Time, string) { return p.HeldAt, p.ID })
}

// FeedbackList returns the feedback, oldest first; pending only when asked.
func (s *State) FeedbackList(pendingOnly bool) []*Feedback {
	return oldestFirst(s.Feedback, func(f *Feedback) bool { return !pendingOnly || f.Category == "" },
		func(f *Feedback) (time.Time, string) { return f.At, f.ID })
}

// oldestFirst lists the values keep admits by time, then id.
func oldestFirst[T any](m map[string]T, keep func(T) bool, key func(T) (time.Time, string)) []T {
	out := []T{}
	for _, v := range m {
		if keep(v) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ti, ii := key(out[i])
		tj, ij := key(out[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return ii < ij
	})
	return out
}
