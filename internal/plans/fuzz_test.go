package plans_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// clone decides what spool plan, spool feedback and spool prd apply-updates
// would, against the plans and tasks it has folded.
type clone struct {
	st *plans.State
	wq *workqueue.State
}

func newClone(string) projectiontest.Clone {
	return &clone{st: plans.NewState(), wq: workqueue.NewState()}
}

func (c *clone) Apply(e *eventlog.Event) {
	c.st.Apply(e)
	c.wq.Apply(e)
}

func (c *clone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	ctx := plans.Context{Prefix: "sp", Writer: "w1", Now: now, HIL: plans.HIL{}}
	if r.IntN(3) == 0 {
		ctx.HIL[plans.ScopeChanges] = plans.RequiresApproval
	}
	someID := func(ids []string) string {
		if len(ids) == 0 {
			return "none"
		}
		return ids[r.IntN(len(ids))]
	}
	var planIDs, held []string
	for _, p := range c.st.PlanList() {
		planIDs = append(planIDs, p.ID)
	}
	for _, p := range c.st.ProposalList(plans.Held) {
		held = append(held, p.ID)
	}
	switch r.IntN(7) {
	case 0, 1:
		p, err := plans.ParsePlan([]byte(fmt.Sprintf(`{"tasks":[{"index":1,"title":"A %d"},{"index":2,"title":"B ✓","depends_on":[1]}]}`, r.IntN(4))), 10)
		if err != nil {
			return "", nil, err
		}
		drafts, _, err := plans.ApplyPlan(c.st, c.wq, p, "T", ctx)
		return "ada", drafts, err
	case 2:
		d, _, err := plans.AddFeedback(c.st, fmt.Sprint("slow ", r.IntN(9)), "w1", now)
		return "ada", []eventlog.Draft{d}, err
	case 3:
		drafts, err := plans.Ship(c.st, c.wq, someID(planIDs), r.IntN(2) == 0, now)
		return "ada", drafts, err
	case 4:
		return "ada", []eventlog.Draft{plans.Built(someID(planIDs), plans.BuiltData{Skipped: "no planner"})}, nil
	case 5:
		d, _, err := plans.Approve(c.st, someID(held))
		return "ada", []eventlog.Draft{d}, err
	}
	return "ada", []eventlog.Draft{plans.PRDUpdated(plans.PRDUpdatedData{Hash: fmt.Sprintf("%064x", r.IntN(5)), File: "prd.json",
		Sections: []string{"goals"}, Commit: fmt.Sprintf("%040x", r.IntN(5))})}, nil
}

// FuzzFold folds hostile events, interleaved with the commands' own, into
// the plans: no panic, no allocation beyond a bound per event, a snapshot
// that round-trips (projectiontest.Hostile).
func FuzzFold(f *testing.F) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	h := projectiontest.Hostile{
		Specs:    []projections.Spec{plans.Spec},
		NewClone: newClone,
		Types: []string{plans.TypeCreated, plans.TypeTasksAdded, plans.TypeShipped, plans.TypeBuilt, plans.TypePRDUpdated,
			plans.TypeProposalHeld, plans.TypeProposalApproved, plans.TypeProposalRejected, plans.TypeFeedbackAdded,
			plans.TypeFeedbackCategorized},
		Samples: map[string][]any{
			plans.TypeCreated:             {plans.CreatedData{Title: "T", Hash: "h", Epic: "sp-1", Gate: "sp-2", Tasks: []plans.TaskRef{{Index: 1, ID: "sp-3"}}}},
			plans.TypeTasksAdded:          {plans.TasksAddedData{Hash: "h2", Category: "bug", Tasks: []string{"sp-4"}}},
			plans.TypeShipped:             {plans.ShippedData{ShippedAt: t0}},
			plans.TypeProposalHeld:        {plans.HeldData{Kind: plans.KindPlan, Categories: []string{plans.ScopeChanges}, Hash: "h3", Body: json.RawMessage(`{"tasks":[]}`)}},
			plans.TypeFeedbackCategorized: {plans.CategorizedData{ID: "fb-1", Category: "bug", PlanID: "plan-1"}},
		},
		Subjects: []string{"plan/plan-1", "proposal/prop-1", "feedback/fb-1", "prd-file/prd.json"},
	}
	h.Seed(f)
	f.Fuzz(h.Fold)
}
