package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/plans"
	planservice "github.com/spoolhq/spool/internal/plans/service"
)

// PlanCmd is the trust boundary: agents propose, spool executes.
type PlanCmd struct {
	Apply     PlanApplyCmd     `cmd:"" help:"Make a plan from a plan-phase proposal: an epic, a gate, the tasks and their dependencies."`
	Feedback  PlanFeedbackCmd  `cmd:"" help:"Make a verify-phase proposal's tasks under its plan."`
	Build     PlanBuildCmd     `cmd:"" help:"Build a plan: close its gate (its tasks become ready), run the planner for PRD updates, commit them."`
	Rebuild   PlanRebuildCmd   `cmd:"" help:"Run a built plan's build again."`
	List      PlanListCmd      `cmd:"" help:"List plans."`
	Show      PlanShowCmd      `cmd:"" help:"Show a plan and its tasks."`
	Proposals PlanProposalsCmd `cmd:"" help:"List proposals waiting for a person's approval (orchestrator.hil.* set to requires_approval)."`
	Approve   PlanApproveCmd   `cmd:"" help:"Apply a waiting proposal."`
	Reject    PlanRejectCmd    `cmd:"" help:"Drop a waiting proposal."`
}

// readProposal reads FILE or stdin ("-"), at most a byte more than a
// proposal may have (the parser refuses the rest as too large).
func readProposal(file string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fault.New(fault.CodeUsage, err, fmt.Sprintf("cannot read %s: %v", file, err), "file", file)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, plans.MaxBytes+1))
	if err != nil {
		return nil, fault.New(fault.CodeUsage, err, fmt.Sprintf("cannot read %s: %v", file, err), "file", file)
	}
	return b, nil
}

// applyProposal reads a proposal and hands it to the plans service.
func applyProposal[T any](e *env, file string, apply func(*planservice.Service, []byte) (T, error)) (T, error) {
	var zero T
	data, err := readProposal(file)
	if err != nil {
		return zero, err
	}
	s, err := e.plans()
	if err != nil {
		return zero, err
	}
	return apply(s, data)
}

// printOutcome says what a proposal did.
func printOutcome(e *env, o plans.Outcome, what string) error {
	if e.JSON {
		return writeJSON(e.stdout, o)
	}
	switch {
	case o.Held != "" && o.Existing:
		fmt.Fprintf(e.stdout, "proposal %s is waiting for approval already (%s)\n", o.Held, strings.Join(o.Categories, ", "))
		return nil
	case o.Held != "":
		fmt.Fprintf(e.stdout, "held proposal %s for approval (%s): spool plan approve %s\n", o.Held, strings.Join(o.Categories, ", "), o.Held)
		return nil
	case o.Existing:
		fmt.Fprintf(e.stdout, "%s applied already: nothing created\n", what)
		return nil
	}
	for _, c := range o.Notify {
		fmt.Fprintf(e.stdout, "notice: %s (orchestrator.hil.%s is notify)\n", strings.ReplaceAll(c, "_", " "), c)
	}
	return nil
}

type PlanApplyCmd struct {
	File  string `arg:"" help:"The proposal: {\"tasks\":[{\"index\",\"title\",\"description\",\"depends_on\"}]}; - reads stdin."`
	Title string `help:"The plan's title (default: Plan <hash>)."`
}

func (c *PlanApplyCmd) Run(e *env) error {
	o, err := applyProposal(e, c.File, func(s *planservice.Service, data []byte) (plans.Outcome, error) { return s.Apply(e.ctx, data, c.Title) })
	if err != nil {
		return err
	}
	if err := printOutcome(e, o, "plan "+o.PlanID); err != nil || e.JSON || o.Held != "" {
		return err
	}
	if o.Existing {
		return nil
	}
	fmt.Fprintf(e.stdout, "created plan %s: epic %s, gate %s, %d tasks\n", o.PlanID, o.Epic, o.Gate, len(o.Tasks))
	for _, t := range o.Tasks {
		fmt.Fprintf(e.stdout, "  %d → %s\n", t.Index, t.ID)
	}
	return nil
}

type PlanFeedbackCmd struct {
	File string `arg:"" help:"The proposal: {\"category\",\"mapped_plan_id\",\"proposed_tasks\":[…],\"feedback_id\"}; - reads stdin."`
}

func (c *PlanFeedbackCmd) Run(e *env) error {
	o, err := applyProposal(e, c.File, func(s *planservice.Service, data []byte) (plans.Outcome, error) { return s.Feedback(e.ctx, data) })
	if err != nil {
		return err
	}
	if err := printOutcome(e, o, "this feedback"); err != nil || e.JSON || o.Held != "" || o.Existing {
		return err
	}
	fmt.Fprintf(e.stdout, "added %d tasks to plan %s: %s\n", len(o.TaskIDs), o.PlanID, strings.Join(o.TaskIDs, " "))
	return nil
}

type PlanBuildCmd struct {
	ID string `arg:"" name:"plan-id" help:"The plan."`
}

func (c *PlanBuildCmd) Run(e *env) error { return buildPlan(e, c.ID, false) }

type PlanRebuildCmd struct {
	ID string `arg:"" name:"plan-id" help:"The plan."`
}

func (c *PlanRebuildCmd) Run(e *env) error { return buildPlan(e, c.ID, true) }

func buildPlan(e *env, id string, rebuild bool) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	b, err := s.Build(e.ctx, id, rebuild)
	if b.Result == (plans.BuiltData{}) && err != nil {
		return err // nothing was built
	}
	if e.JSON {
		if err != nil {
			return err
		}
		return writeJSON(e.stdout, b)
	}
	for _, r := range b.Recovered {
		fmt.Fprintf(e.stdout, "finished the interrupted build of %s\n", r)
	}
	fmt.Fprintf(e.stdout, "built plan %s: its gate is closed, its tasks are ready\n", id)
	switch r := b.Result; {
	case r.Skipped != "":
		fmt.Fprintf(e.stdout, "PRD step skipped: %s\n", r.Skipped)
	case r.Held != "":
		fmt.Fprintf(e.stdout, "PRD updates held for approval: spool plan approve %s\n", r.Held)
	case b.PRD != nil && b.PRD.Existing:
		fmt.Fprintf(e.stdout, "PRD updates applied already (commit %s)\n", b.PRD.Commit)
	case b.PRD != nil:
		fmt.Fprintf(e.stdout, "PRD sections %s updated in %s, commit %s\n", strings.Join(b.PRD.Sections, ", "), b.PRD.File, b.PRD.Commit)
	}
	return err
}

type PlanListCmd struct{}

func (c *PlanListCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	vs, err := s.List(e.ctx)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, vs)
	}
	if len(vs) == 0 {
		fmt.Fprintln(e.stdout, "no plans")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, v := range vs {
		fmt.Fprint(tw, row(v.ID, v.State, fmt.Sprintf("%d tasks", len(v.Tasks)+len(v.Added)), text(v.Title)))
	}
	return tw.Flush()
}

type PlanShowCmd struct {
	ID string `arg:"" name:"plan-id" help:"The plan."`
}

func (c *PlanShowCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	v, err := s.Show(e.ctx, c.ID)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, v)
	}
	fmt.Fprintf(e.stdout, "%s  %s  %s\nepic %s\n", v.ID, v.State, text(v.Title), v.Epic)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, t := range v.Items {
		index := "-"
		if t.Index != nil {
			index = fmt.Sprint(*t.Index)
		}
		fmt.Fprint(tw, row(index, t.ID, t.Role, t.Status, text(t.Title)))
	}
	return tw.Flush()
}

type PlanProposalsCmd struct {
	All bool `help:"Approved and rejected proposals too."`
}

func (c *PlanProposalsCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	ps, err := s.Proposals(e.ctx, c.All)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(e.stdout, "no proposals waiting")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, p := range ps {
		fmt.Fprint(tw, row(p.ID, p.Kind, p.Status, strings.Join(p.Categories, ","), text(p.Title)))
	}
	return tw.Flush()
}

type PlanApproveCmd struct {
	ID string `arg:"" name:"proposal-id" help:"The proposal."`
}

func (c *PlanApproveCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	a, err := s.Approve(e.ctx, c.ID)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, a)
	}
	switch {
	case a.PRD != nil:
		fmt.Fprintf(e.stdout, "approved %s: PRD sections %s in %s, commit %s\n", a.ID, strings.Join(a.PRD.Sections, ", "), a.PRD.File, a.PRD.Commit)
	case a.Outcome.Existing:
		fmt.Fprintf(e.stdout, "approved %s: applied already, nothing created\n", a.ID)
	case a.Kind == plans.KindPlan:
		fmt.Fprintf(e.stdout, "approved %s: created plan %s with %d tasks\n", a.ID, a.Outcome.PlanID, len(a.Outcome.Tasks))
	default:
		fmt.Fprintf(e.stdout, "approved %s: added %d tasks to plan %s\n", a.ID, len(a.Outcome.TaskIDs), a.Outcome.PlanID)
	}
	return nil
}

type PlanRejectCmd struct {
	ID     string `arg:"" name:"proposal-id" help:"The proposal."`
	Reason string `help:"Why, for the record."`
}

func (c *PlanRejectCmd) Run(e *env) error {
	s, err := e.plans()
	if err != nil {
		return err
	}
	if err := s.Reject(e.ctx, c.ID, c.Reason); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]string{"id": c.ID, "status": plans.Rejected})
	}
	fmt.Fprintf(e.stdout, "rejected %s\n", c.ID)
	return nil
}

// PRDApplyUpdatesCmd is spool prd apply-updates.
type PRDApplyUpdatesCmd struct {
	File string `arg:"" help:"The proposal: {\"section_updates\":[{\"section\",\"content\",\"change_log_entry\"}]}; - reads stdin."`
}

func (c *PRDApplyUpdatesCmd) Run(e *env) error {
	r, err := applyProposal(e, c.File, func(s *planservice.Service, data []byte) (planservice.PRDResult, error) {
		return s.ApplyUpdates(e.ctx, data)
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, r)
	}
	if err := printOutcome(e, r.Outcome, "these updates (commit "+r.Commit+")"); err != nil || r.Held != "" || r.Existing {
		return err
	}
	fmt.Fprintf(e.stdout, "updated sections %s in %s, commit %s\n", strings.Join(r.Sections, ", "), r.File, r.Commit)
	return nil
}
