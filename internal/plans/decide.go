package plans

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/ids"
	"github.com/spoolhq/spool/internal/workqueue"
)

// The decide functions are pure: the states, a validated proposal, the
// context and the clock in; events or a typed error out. A proposal checks
// against the state (plans, feedback, task ids) before any event is made.

// Labels of the tasks a plan makes besides its own: workqueue.exclude_labels
// can keep next from handing them to an agent.
const (
	EpicLabel = "plan"
	GateLabel = "plan-gate"
)

// GateReason is the reason given when a build closes a plan's gate.
const GateReason = "Plan built"

// Context is what every decision needs besides the states.
type Context struct {
	Prefix, Writer string // of new task ids
	Now            time.Time
	HIL            HIL
	Approving      string // the held proposal being approved: HIL is not asked again
}

// Outcome is what a proposal did.
type Outcome struct {
	PlanID     string    `json:"plan_id,omitempty"`
	Existing   bool      `json:"existing"` // applied (or held) before: nothing new
	Held       string    `json:"held_proposal_id,omitempty"`
	Categories []string  `json:"categories,omitempty"`
	Notify     []string  `json:"notify,omitempty"`
	Epic       string    `json:"epic_id,omitempty"`
	Gate       string    `json:"gate_id,omitempty"`
	Tasks      []TaskRef `json:"tasks,omitempty"`
	TaskIDs    []string  `json:"task_ids,omitempty"`
}

// Hold asks HIL about a proposal in cats: done is true when it waits for
// approval (the draft holds it, or it waits already). With Notify the
// outcome names the categories to tell of.
func (c Context) Hold(st *State, kind string, cats []string, hash, title, planID string, body any) ([]eventlog.Draft, Outcome, bool, error) {
	out := Outcome{Categories: cats}
	if c.Approving != "" {
		return nil, out, false, nil
	}
	mode, notify := c.HIL.Mode(cats)
	if mode != RequiresApproval {
		out.Notify = notify
		return nil, out, false, nil
	}
	for _, p := range st.ProposalList("") {
		if p.Kind != kind || p.Hash != hash {
			continue
		}
		if p.Status == Rejected {
			return nil, out, true, invalidTransition("proposal", p.ID, "has this content and was rejected; change the proposal to propose again")
		}
		if p.Status == Held {
			out.Held, out.Existing = p.ID, true
			return nil, out, true, nil
		}
	}
	id := ShortID("prop", hash, func(id string) bool { return st.Proposals[id] != nil })
	out.Held = id
	d := eventlog.Draft{Type: TypeProposalHeld, Subject: ProposalSubject(id),
		Data: HeldData{Kind: kind, Categories: cats, Hash: hash, Title: title, PlanID: planID, Body: Canonical(body)}}
	return []eventlog.Draft{d}, out, true, nil
}

// ShortID is prefix-<the first 8 or more hex digits of hash>, longer while
// taken by another item.
func ShortID(prefix, hash string, taken func(string) bool) string {
	n := 8
	for ; n < len(hash) && taken(prefix+"-"+hash[:n]); n++ {
	}
	return prefix + "-" + hash[:n]
}

// batch makes tasks for one append.
type batch struct {
	c      Context
	index  *workqueue.BatchIndex
	drafts []eventlog.Draft
}

func (b *batch) add(n workqueue.NewTask) (string, error) {
	d, id, err := workqueue.AddTask(b.index, n, b.c.Prefix, b.c.Writer, b.c.Now)
	if err != nil {
		return "", err
	}
	b.index.Made(id)
	b.drafts = append(b.drafts, d)
	return id, nil
}

// ApplyPlan makes a plan: its epic, its gate, then the proposal's tasks in
// order under the epic, each waiting for the gate, then their dependencies.
// A proposal applied before makes nothing.
func ApplyPlan(st *State, wq *workqueue.State, p PlanProposal, title string, c Context) ([]eventlog.Draft, Outcome, error) {
	hash := Hash(p)
	if id, ok := st.Applied[hash]; ok && st.Plans[id] != nil {
		pl := st.Plans[id]
		return nil, Outcome{PlanID: id, Existing: true, Epic: pl.Epic, Gate: pl.Gate, Tasks: pl.Tasks}, nil
	}
	if title == "" {
		title = "Plan " + hash[:8]
	}
	drafts, out, held, err := c.Hold(st, KindPlan, PlanCategories(p), hash, title, "", p)
	if held || err != nil {
		return drafts, out, err
	}
	id := ShortID("plan", hash, func(id string) bool { return st.Plans[id] != nil })
	b := &batch{c: c, index: workqueue.NewBatchIndex(wq)}
	epic, err := b.add(workqueue.NewTask{Title: title, Type: "epic", Labels: []string{EpicLabel}, Priority: DefaultPriority,
		Description: "Epic of plan " + id + "."})
	if err != nil {
		return nil, out, err
	}
	gate, err := b.add(workqueue.NewTask{Title: "Build plan " + title, Parent: epic, Labels: []string{GateLabel}, Priority: DefaultPriority,
		Description: "Every task of plan " + id + " waits for this one: spool plan build " + id + " closes it."})
	if err != nil {
		return nil, out, err
	}
	byIndex := map[int]string{}
	refs := make([]TaskRef, 0, len(p.Tasks))
	for _, t := range p.Tasks {
		tid, err := b.add(workqueue.NewTask{Title: t.Title, Description: t.Description, Priority: DefaultPriority,
			Parent: epic, Deps: []string{gate}})
		if err != nil {
			return nil, out, err
		}
		byIndex[t.Index] = tid
		refs = append(refs, TaskRef{Index: t.Index, ID: tid})
	}
	// The tasks exist only in this append: their dependencies are decided on
	// a state of them alone (ParsePlan refused cycles already).
	made, err := workqueue.Overlay(workqueue.NewState(), b.drafts, c.Writer, c.Now)
	if err != nil {
		return nil, out, err
	}
	for _, t := range p.Tasks {
		for _, dep := range t.DependsOn {
			d, err := workqueue.AddDep(made, byIndex[t.Index], byIndex[dep])
			if err != nil {
				return nil, out, err
			}
			b.drafts = append(b.drafts, d)
		}
	}
	drafts = append(b.drafts, eventlog.Draft{Type: TypeCreated, Subject: PlanSubject(id),
		Data: CreatedData{Title: title, Hash: hash, Epic: epic, Gate: gate, Tasks: refs, Proposal: c.Approving, Notify: out.Notify}})
	out.PlanID, out.Epic, out.Gate, out.Tasks = id, epic, gate, refs
	return drafts, out, nil
}

// ApplyFeedback makes a verify-phase proposal's tasks under its plan's epic,
// each waiting for the gate and for the existing tasks it names, and
// categorizes the feedback it answers.
func ApplyFeedback(st *State, wq *workqueue.State, p FeedbackProposal, c Context) ([]eventlog.Draft, Outcome, error) {
	hash := Hash(p)
	if id, ok := st.Applied[hash]; ok {
		return nil, Outcome{PlanID: id, Existing: true}, nil
	}
	pl := st.Plans[p.PlanID]
	if pl == nil {
		return nil, Outcome{}, Invalid("mapped_plan_id", fmt.Sprintf("no plan %s", p.PlanID))
	}
	if p.FeedbackID != "" {
		f := st.Feedback[p.FeedbackID]
		switch {
		case f == nil:
			return nil, Outcome{}, Invalid("feedback_id", fmt.Sprintf("no feedback %s", p.FeedbackID))
		case f.Category != "":
			return nil, Outcome{}, Invalid("feedback_id", fmt.Sprintf("%s is categorized already (%s, plan %s)", f.ID, f.Category, f.PlanID))
		}
	}
	for i, t := range p.Tasks {
		for j, d := range t.Dependencies {
			if !wq.HasTask(d) {
				return nil, Outcome{}, Invalid(fmt.Sprintf("proposed_tasks[%d].dependencies[%d]", i, j), fmt.Sprintf("no task %s", d))
			}
		}
	}
	drafts, out, held, err := c.Hold(st, KindFeedback, FeedbackCategories(p), hash, p.Category, p.PlanID, p)
	if held || err != nil {
		return drafts, out, err
	}
	b := &batch{c: c, index: workqueue.NewBatchIndex(wq)}
	ids := []string{}
	for _, t := range p.Tasks {
		id, err := b.add(workqueue.NewTask{Title: t.Title, Description: t.Description, Priority: t.Priority,
			Parent: pl.Epic, Deps: append([]string{pl.Gate}, t.Dependencies...)})
		if err != nil {
			return nil, out, err
		}
		ids = append(ids, id)
	}
	drafts = append(b.drafts, eventlog.Draft{Type: TypeTasksAdded, Subject: PlanSubject(pl.ID),
		Data: TasksAddedData{Hash: hash, Category: p.Category, FeedbackID: p.FeedbackID, Tasks: ids, Proposal: c.Approving, Notify: out.Notify}})
	if p.FeedbackID != "" {
		drafts = append(drafts, eventlog.Draft{Type: TypeFeedbackCategorized, Subject: FeedbackSubject(p.FeedbackID),
			Data: CategorizedData{ID: p.FeedbackID, Category: p.Category, PlanID: pl.ID}})
	}
	out.PlanID, out.TaskIDs = pl.ID, ids
	return drafts, out, nil
}

// Ship starts a build, in a fixed order: the gate closed, so the plan's tasks
// are ready, and shipped_at recorded; the PRD step follows, and Built records
// its outcome. rebuild runs the build of a built plan again.
func Ship(st *State, wq *workqueue.State, id string, rebuild bool, now time.Time) ([]eventlog.Draft, error) {
	p := st.Plans[id]
	switch {
	case p == nil:
		return nil, fault.NotFound("plan", id)
	case p.Building:
		return nil, invalidTransition("plan", id, "has a build whose PRD step has not ended; spool plan build finishes it first")
	case !rebuild && p.ShippedAt != nil:
		return nil, invalidTransition("plan", id, fmt.Sprintf("was built at %s; spool plan rebuild %s runs the build again", p.ShippedAt.Format(time.RFC3339), id))
	case rebuild && p.ShippedAt == nil:
		return nil, invalidTransition("plan", id, "is not built yet; run spool plan build "+id)
	}
	var drafts []eventlog.Draft
	if g := wq.Task(p.Gate); g != nil && g.Status != workqueue.StatusClosed {
		d, err := workqueue.CloseTasks(wq, []string{p.Gate}, GateReason)
		if err != nil {
			return nil, err
		}
		drafts = d
	}
	return append(drafts, eventlog.Draft{Type: TypeShipped, Subject: PlanSubject(id), Data: ShippedData{ShippedAt: now, Rebuild: rebuild}}), nil
}

// Built records how a build's PRD step ended.
func Built(id string, d BuiltData) eventlog.Draft {
	return eventlog.Draft{Type: TypeBuilt, Subject: PlanSubject(id), Data: d}
}

// PRDUpdated records section updates written and committed.
func PRDUpdated(d PRDUpdatedData) eventlog.Draft {
	return eventlog.Draft{Type: TypePRDUpdated, Subject: PRDSubject(d.File), Data: d}
}

// held is a proposal still waiting for a decision.
func held(st *State, id string) (*Proposal, error) {
	p := st.Proposals[id]
	if p == nil {
		return nil, fault.NotFound("proposal", id)
	}
	if p.Status != Held {
		return nil, invalidTransition("proposal", id, "was "+p.Status+" already")
	}
	return p, nil
}

// Approve records the approval of a held proposal; it goes in the append
// that applies the proposal (decided with Context.Approving set).
func Approve(st *State, id string) (eventlog.Draft, *Proposal, error) {
	p, err := held(st, id)
	if err != nil {
		return eventlog.Draft{}, nil, err
	}
	return eventlog.Draft{Type: TypeProposalApproved, Subject: ProposalSubject(id), Data: DecisionData{}}, p, nil
}

// Reject drops a held proposal.
func Reject(st *State, id, reason string) (eventlog.Draft, error) {
	if _, err := held(st, id); err != nil {
		return eventlog.Draft{}, err
	}
	return eventlog.Draft{Type: TypeProposalRejected, Subject: ProposalSubject(id), Data: DecisionData{Reason: reason}}, nil
}

// AddFeedback queues feedback for the planner to categorize.
func AddFeedback(st *State, text, writer string, now time.Time) (eventlog.Draft, string, error) {
	if strings.TrimSpace(text) == "" {
		return eventlog.Draft{}, "", fault.Usagef(CodeEmptyFeedback, "feedback needs text")
	}
	id := ids.New("fb", writer, text, now, len(st.Feedback), func(id string) bool { return st.Feedback[id] != nil })
	return eventlog.Draft{Type: TypeFeedbackAdded, Subject: FeedbackSubject(id), Data: FeedbackData{ID: id, Text: text}}, id, nil
}
