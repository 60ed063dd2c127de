package plans_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/workqueue"
)

// refusedAt checks err is invalid_proposal at path.
func refusedAt(t *testing.T, err error, path string) {
	t.Helper()
	f, ok := fault.As(err)
	if !ok || f.Code != plans.CodeInvalidProposal.Name {
		t.Fatalf("got %v, want invalid_proposal at %s", err, path)
	}
	if got := f.Fields["path"]; got != path {
		t.Fatalf("path %v, want %s (%v)", got, path, err)
	}
}

func TestParsePlanRefusals(t *testing.T) {
	for _, c := range []struct{ in, path string }{
		{`{"tasks":[`, "$"},
		{`{"tasks":[{"index":1,"title":"A"}]} x`, "$"},
		{`null`, "$"},
		{`{}`, "tasks"},
		{`{"tasks":[]}`, "tasks"},
		{`{"tasks":[{"index":1,"title":"A"}],"x":1}`, "x"},
		{`{"tasks":[{"index":1,"title":"A","x":1}]}`, "tasks[0].x"},
		{`{"tasks":[{"title":"A"}]}`, "tasks[0].index"},
		{`{"tasks":[{"index":1.5,"title":"A"}]}`, "tasks[0].index"},
		{`{"tasks":[{"index":-1,"title":"A"}]}`, "tasks[0].index"},
		{`{"tasks":[{"index":1e3,"title":"A"}]}`, "tasks[0].index"},
		{`{"tasks":[{"index":1,"title":""}]}`, "tasks[0].title"},
		{`{"tasks":[{"index":1,"title":true}]}`, "tasks[0].title"},
		{`{"tasks":[{"index":1,"title":"A"},{"index":1,"title":"B"}]}`, "tasks[1].index"},
		{`{"tasks":[{"index":1,"title":"A","depends_on":[2]}]}`, "tasks[0].depends_on[0]"},
		{`{"tasks":[{"index":1,"title":"A","depends_on":["1"]}]}`, "tasks[0].depends_on[0]"},
		{`{"tasks":[{"index":1,"title":"A"},{"index":2,"title":"B","depends_on":[1,1]}]}`, "tasks[1].depends_on[1]"},
		{`{"tasks":[{"index":1,"title":"A","depends_on":[2]},{"index":2,"title":"B","depends_on":[1]}]}`, "tasks[1].depends_on[0]"},
		{`{"tasks":[{"index":1,"title":"A"},{"index":2,"title":"B"},{"index":3,"title":"C"}]}`, "tasks"}, // over the limit of 2
	} {
		_, err := plans.ParsePlan([]byte(c.in), 2)
		refusedAt(t, err, c.path)
	}
	big := `{"tasks":[{"index":1,"title":"` + strings.Repeat("a", plans.MaxBytes) + `"}]}`
	_, err := plans.ParsePlan([]byte(big), 2)
	refusedAt(t, err, "$")
}

func TestParseFeedbackAndPRDRefusals(t *testing.T) {
	for _, c := range []struct{ in, path string }{
		{`{"mapped_plan_id":"p","proposed_tasks":[]}`, "category"},
		{`{"category":"bug","proposed_tasks":[]}`, "mapped_plan_id"},
		{`{"category":"bug","mapped_plan_id":"p"}`, "proposed_tasks"},
		{`{"category":"bug","mapped_plan_id":"p","proposed_tasks":[{"title":"A","priority":5}]}`, "proposed_tasks[0].priority"},
		{`{"category":"bug","mapped_plan_id":"p","proposed_tasks":[{"title":"A","priority":-1}]}`, "proposed_tasks[0].priority"},
		{`{"category":"bug","mapped_plan_id":"p","proposed_tasks":[{"title":"A","dependencies":[1]}]}`, "proposed_tasks[0].dependencies[0]"},
		{`{"category":"bug","mapped_plan_id":"p","proposed_tasks":[{"title":"A","dependencies":["x","x"]}]}`, "proposed_tasks[0].dependencies[1]"},
		{`{"category":"bug","mapped_plan_id":"p","proposed_tasks":[],"feedback_id":3}`, "feedback_id"},
	} {
		_, err := plans.ParseFeedback([]byte(c.in), 10)
		refusedAt(t, err, c.path)
	}
	for _, c := range []struct{ in, path string }{
		{`{"section_updates":[]}`, "section_updates"},
		{`{"section_updates":[{"section":"a","content":"x"}]}`, "section_updates[0].change_log_entry"},
		{`{"section_updates":[{"section":"a","content":1,"change_log_entry":"e"}]}`, "section_updates[0].content"},
		{`{"section_updates":[{"section":"a","content":"","change_log_entry":"e"},{"section":"a","content":"","change_log_entry":"f"}]}`, "section_updates[1].section"},
	} {
		_, err := plans.ParsePRD([]byte(c.in))
		refusedAt(t, err, c.path)
	}
}

func TestHashIgnoresSpacingAndKeyOrder(t *testing.T) {
	a, err := plans.ParsePlan([]byte(`{"tasks":[{"index":1,"title":"A","depends_on":[]}]}`), 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plans.ParsePlan([]byte(`{ "tasks" : [ {"title":"A", "index":1} ] }`), 10)
	if err != nil {
		t.Fatal(err)
	}
	if plans.Hash(a) != plans.Hash(b) {
		t.Fatal("the same proposal hashes differently")
	}
}

var now = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fold applies drafts to both states, as the log would.
func fold(t *testing.T, st *plans.State, wq *workqueue.State, drafts []eventlog.Draft) {
	t.Helper()
	for _, d := range drafts {
		data, err := json.Marshal(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		e := &eventlog.Event{Type: d.Type, Subject: d.Subject, Actor: "ada", At: now, Data: data}
		st.Apply(e)
		if err := wq.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestApplyPlanOnceThenBuild(t *testing.T) {
	st, wq := plans.NewState(), workqueue.NewState()
	c := plans.Context{Prefix: "sp", Writer: "w1", Now: now, HIL: plans.HIL{}}
	p, err := plans.ParsePlan([]byte(`{"tasks":[{"index":1,"title":"A","depends_on":[2]},{"index":2,"title":"B"}]}`), 10)
	if err != nil {
		t.Fatal(err)
	}
	drafts, out, err := plans.ApplyPlan(st, wq, p, "T", c)
	if err != nil {
		t.Fatal(err)
	}
	fold(t, st, wq, drafts)
	if n := wq.TaskCount(); len(out.Tasks) != 2 || n != 4 {
		t.Fatalf("outcome %+v, %d tasks", out, n)
	}
	ready := func() int { return len(wq.Ready(workqueue.Policy{}, workqueue.ReadyFilter{}, now, 0)) }
	if n := ready(); n != 2 { // the epic and the gate
		t.Fatalf("%d ready before the build, want 2", n)
	}
	again, out2, err := plans.ApplyPlan(st, wq, p, "T", c)
	if err != nil || len(again) != 0 || !out2.Existing || out2.PlanID != out.PlanID {
		t.Fatalf("second apply: %v %+v %v", again, out2, err)
	}
	ship, err := plans.Ship(st, wq, out.PlanID, false, now)
	if err != nil {
		t.Fatal(err)
	}
	fold(t, st, wq, append(ship, plans.Built(out.PlanID, plans.BuiltData{Skipped: "no planner"})))
	if n := ready(); n != 2 { // the epic and B; A waits for B
		t.Fatalf("%d ready after the build, want 2", n)
	}
	if _, err := plans.Ship(st, wq, out.PlanID, false, now); err == nil {
		t.Fatal("built twice")
	}
	if _, err := plans.Ship(st, wq, out.PlanID, true, now); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
}

func TestHILHoldsThenApproves(t *testing.T) {
	st, wq := plans.NewState(), workqueue.NewState()
	c := plans.Context{Prefix: "sp", Writer: "w1", Now: now, HIL: plans.HIL{plans.ScopeChanges: plans.RequiresApproval}}
	p, _ := plans.ParsePlan([]byte(`{"tasks":[{"index":1,"title":"A"}]}`), 10)
	drafts, out, err := plans.ApplyPlan(st, wq, p, "T", c)
	if err != nil || len(drafts) != 1 || drafts[0].Type != plans.TypeProposalHeld || out.Held == "" {
		t.Fatalf("hold: %v %+v %v", drafts, out, err)
	}
	fold(t, st, wq, drafts)
	approve, _, err := plans.Approve(st, out.Held)
	if err != nil {
		t.Fatal(err)
	}
	c.Approving = out.Held
	drafts, out2, err := plans.ApplyPlan(st, wq, p, "T", c)
	if err != nil || out2.PlanID == "" {
		t.Fatalf("approve: %+v %v", out2, err)
	}
	fold(t, st, wq, append(drafts, approve))
	if st.Proposals[out.Held].Status != plans.Approved || len(st.Plans) != 1 {
		t.Fatalf("after approval: %+v", st.Proposals[out.Held])
	}
}

func TestHILMode(t *testing.T) {
	h := plans.HIL{plans.ScopeChanges: plans.Notify, plans.ArchitectureDecisions: plans.RequiresApproval}
	for _, c := range []struct {
		cats []string
		want string
	}{
		{nil, plans.Automated},
		{[]string{plans.DependencyModifications}, plans.Automated},
		{[]string{plans.ScopeChanges}, plans.Notify},
		{[]string{plans.ScopeChanges, plans.ArchitectureDecisions}, plans.RequiresApproval},
	} {
		if got, _ := h.Mode(c.cats); got != c.want {
			t.Errorf("Mode(%v) = %s, want %s", c.cats, got, c.want)
		}
	}
	fb := plans.FeedbackProposal{Category: "Architecture", Tasks: []plans.FeedbackTask{{Title: "x", Dependencies: []string{"sp-1"}}}}
	if got := plans.FeedbackCategories(fb); strings.Join(got, ",") != "scope_changes,architecture_decisions,dependency_modifications" {
		t.Errorf("FeedbackCategories = %v", got)
	}
}

func TestPRDFileApply(t *testing.T) {
	f, err := plans.ParsePRDFile([]byte(`{"title":"kept","sections":{"a":{"content":"old","version":3,"change_log":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(plans.PRDProposal{Updates: []plans.SectionUpdate{{Section: "a", Content: "new", Entry: "e"}, {Section: "b", Content: "b", Entry: "f"}}}, "h", now)
	var got struct {
		Title    string                    `json:"title"`
		Last     string                    `json:"last_update"`
		Sections map[string]*plans.Section `json:"sections"`
	}
	if err := json.Unmarshal(f.Marshal(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Title != "kept" || got.Last != "h" || got.Sections["a"].Version != 4 || got.Sections["b"].Version != 1 ||
		got.Sections["a"].ChangeLog[0].Version != 4 || got.Sections["a"].Content != "new" {
		t.Fatalf("%+v", got)
	}
	if _, err := plans.ParsePRDFile([]byte(`{"sections":[]}`)); err == nil {
		t.Fatal("a sections array was read")
	}
}

// FuzzParseProposal: the parsers never panic, and what they accept hashes
// stably and parses again from its canonical form to the same proposal.
func FuzzParseProposal(f *testing.F) {
	for _, s := range []string{
		`{"tasks":[{"index":1,"title":"A","depends_on":[2]},{"index":2,"title":"B"}]}`,
		`{"category":"bug","mapped_plan_id":"p","proposed_tasks":[{"title":"A","priority":1,"dependencies":["x"]}]}`,
		`{"section_updates":[{"section":"a","content":"x","change_log_entry":"e"}]}`,
		`{"tasks":[{"index":1,"title":"A","depends_on":[1]}]}`, `[]`, `{`, `{"tasks":[{"index":1e400}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := plans.ParsePlan(data, 50); err == nil {
			again, err := plans.ParsePlan(plans.Canonical(p), 50)
			if err != nil || plans.Hash(again) != plans.Hash(p) {
				t.Fatalf("canonical plan does not parse back: %v", err)
			}
		} else if _, ok := fault.As(err); !ok {
			t.Fatalf("untyped error %v", err)
		}
		if p, err := plans.ParseFeedback(data, 50); err == nil {
			again, err := plans.ParseFeedback(plans.Canonical(p), 50)
			if err != nil || plans.Hash(again) != plans.Hash(p) {
				t.Fatalf("canonical feedback does not parse back: %v", err)
			}
		}
		if p, err := plans.ParsePRD(data); err == nil {
			again, err := plans.ParsePRD(plans.Canonical(p))
			if err != nil || plans.Hash(again) != plans.Hash(p) {
				t.Fatalf("canonical PRD updates do not parse back: %v", err)
			}
		}
	})
}
