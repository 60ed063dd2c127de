package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/agentguide"
	"github.com/spoolhq/spool/internal/mcpserver"
	planservice "github.com/spoolhq/spool/internal/plans/service"
	"github.com/spoolhq/spool/internal/workqueue"
)

// Every tool over the Go SDK's own client, in-memory: tools/list shows
// them all with object schemas, and a call of each does what its command
// does, answering with structured content.
func TestEveryTool(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(f.srv.Session("", nil), nil)
	ctx := context.Background()

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tool := range res.Tools {
		listed = append(listed, tool.Name)
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("%s: input schema %s is not an object's", tool.Name, schema)
		}
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint == slices.Contains(writes, tool.Name) {
			t.Errorf("%s: annotations %+v do not say whether it changes anything", tool.Name, tool.Annotations)
		}
	}
	want := mcpserver.ToolNames()
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("tools/list: %v, want %v", listed, want)
	}
	called := map[string]bool{}
	do := func(name string, args any) result {
		t.Helper()
		called[name] = true
		return ok(t, cs, name, args)
	}

	// The work queue.
	a := do("create", map[string]any{"title": "Write the parser", "priority": 1, "labels": []string{"automated"}})
	id := a.Body["id"].(string)
	if a.Body["title"] != "Write the parser" || a.Body["priority"] != 1.0 || !strings.HasPrefix(a.Text, "created "+id) {
		t.Errorf("create: %s\n%s", a.Raw, a.Text)
	}
	b := do("create", map[string]any{"title": "Document the parser"})
	bid := b.Body["id"].(string)
	do("dep_add", map[string]any{"id": bid, "blocker": id})
	r := do("ready", map[string]any{})
	ready := list(t, r)
	if len(ready) != 1 || ready[0].(map[string]any)["id"] != id {
		t.Errorf("ready: %s, want %s alone (%s waits for it)", r.Raw, id, bid)
	}
	s := do("show", map[string]any{"ids": []string{bid}})
	deps := list(t, s)[0].(map[string]any)["dependencies"].([]any)
	if len(deps) != 1 || deps[0].(map[string]any)["id"] != id {
		t.Errorf("show: %s", s.Raw)
	}
	n := do("next", map[string]any{})
	if n.Body["id"] != id || n.Body["attempt"] != 1.0 || n.Body["worker"] != ada {
		t.Errorf("next: %s", n.Raw)
	}
	if h := do("heartbeat", map[string]any{"id": id}); h.Body["id"] != id || h.Body["lease_until"] == nil {
		t.Errorf("heartbeat: %s", h.Raw)
	}
	if c := do("comment", map[string]any{"id": id, "text": "halfway"}); c.Body["text"] != "halfway" || c.Body["author"] != ada {
		t.Errorf("comment: %s", c.Raw)
	}
	if x := do("fail", map[string]any{"id": id, "error": "tests failing"}); x.Body["status"] != "failed" || x.Body["last_error"] != "tests failing" {
		t.Errorf("fail: %s", x.Raw)
	}
	do("next", map[string]any{"worker": "w1"})
	if x := do("done", map[string]any{"id": id}); x.Body["status"] != "completed" {
		t.Errorf("done: %s", x.Raw)
	}
	if x := do("next", map[string]any{"labels": []string{"nothing-has-this"}}); x.Body["result"] != nil || !strings.HasPrefix(x.Text, "nothing ready") {
		t.Errorf("next with nothing eligible: %s %q", x.Raw, x.Text)
	}
	if x := do("block", map[string]any{"id": bid, "reason": "waiting on review"}); x.Body["status"] != "blocked" {
		t.Errorf("block: %s", x.Raw)
	}
	do("unblock", map[string]any{"id": bid, "reset_attempts": true})
	if x := do("update", map[string]any{"id": bid, "priority": 0, "add_labels": []string{"docs"}}); x.Body["priority"] != 0.0 {
		t.Errorf("update: %s", x.Raw)
	}
	if x := do("stats", nil); x.Body["completed"] != 1.0 || x.Body["total_seen"] != 2.0 {
		t.Errorf("stats: %s", x.Raw)
	}

	// The merge queue: a linked worktree's branch.
	wt := f.repo.Worktree("feature", "f.txt", "f\n")
	m := do("merge_submit", map[string]any{"workspace": wt, "no_push": true, "bead": bid})
	entry := fmt.Sprint(m.Body["entry_id"])
	if m.Body["status"] != "pending" {
		t.Errorf("merge_submit: %s", m.Raw)
	}
	if x := do("merge_list", map[string]any{}); len(x.Body["entries"].([]any)) != 1 {
		t.Errorf("merge_list: %s", x.Raw)
	}
	if x := do("merge_status", map[string]any{"entry": entry}); x.Body["status"] != "pending" || len(x.Body["history"].([]any)) == 0 {
		t.Errorf("merge_status: %s", x.Raw)
	}
	if x := do("merge_cancel", map[string]any{"entry": entry, "reason": "not yet"}); x.Body["status"] != "cancelled" {
		t.Errorf("merge_cancel: %s", x.Raw)
	}

	// Jobs.
	j := do("job_submit", map[string]any{"argv": []string{"true"}, "name": "noop"})
	job := j.Body["id"].(string)
	if x := do("job_list", map[string]any{}); len(list(t, x)) != 1 {
		t.Errorf("job_list: %s", x.Raw)
	}
	if x := do("job_explain", map[string]any{"job": job}); x.Body["id"] != job {
		t.Errorf("job_explain: %s", x.Raw)
	}
	if x := do("job_cancel", map[string]any{"job": job}); x.Body["status"] != "cancelled" {
		t.Errorf("job_cancel: %s", x.Raw)
	}

	// PRDs: a report of none; a PRD that is not there is not_found.
	if x := do("prd_report", map[string]any{}); x.Body["counts"] == nil {
		t.Errorf("prd_report: %s", x.Raw)
	}
	called["prd_show"] = true
	if c := code(t, cs, "prd_show", map[string]any{"prd": "checkout"}); c != "not_found" {
		t.Errorf("prd_show of no PRD: %s", c)
	}

	// The orchestrator and a proposal under a plan.
	if x := do("orchestrator_status", nil); x.Body["queueDepth"] != 1.0 {
		t.Errorf("orchestrator_status: %s", x.Raw)
	}
	plan, err := planservice.Open(f.env(ada)).Apply(ctx, []byte(`{"tasks":[{"index":0,"title":"Plan task"}]}`), "Checkout")
	if err != nil {
		t.Fatal(err)
	}
	p := do("propose", map[string]any{"category": "bug", "mapped_plan_id": plan.PlanID,
		"proposed_tasks": []any{map[string]any{"title": "Fix the edge case", "dependencies": []string{bid}}}})
	if tasks, _ := p.Body["task_ids"].([]any); len(tasks) != 1 {
		t.Errorf("propose: %s", p.Raw)
	}
	if again := do("propose", map[string]any{"category": "bug", "mapped_plan_id": plan.PlanID,
		"proposed_tasks": []any{map[string]any{"title": "Fix the edge case", "dependencies": []string{bid}}}}); again.Body["existing"] != true {
		t.Errorf("the same proposal again: %s", again.Raw)
	}

	// Context.
	if x := do("status", nil); x.Body["events"].(float64) < 10 {
		t.Errorf("status: %s", x.Raw)
	}
	l := do("log", map[string]any{"types": []string{"task.claimed"}})
	claims := list(t, l)
	if len(claims) != 2 || claims[0].(map[string]any)["subject"] != id {
		t.Errorf("log -t task.claimed: %s", l.Raw)
	}
	if x := do("log", map[string]any{"n": 1}); len(list(t, x)) != 1 {
		t.Errorf("log n 1: %s", x.Raw)
	}

	for _, name := range mcpserver.ToolNames() {
		if !called[name] {
			t.Errorf("%s was not called", name)
		}
	}
}

// writes are the tools that append.
var writes = []string{"next", "heartbeat", "done", "fail", "create", "update", "comment", "dep_add", "block", "unblock",
	"merge_submit", "merge_cancel", "job_submit", "job_cancel", "propose"}

// A refused call carries spool's code (the CLI's --json error object as
// structured content) and appends nothing; arguments that do not fit the
// schema are invalid_arguments before anything is read.
func TestErrorsCarryCodesAndAppendNothing(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(f.srv.Session("", nil), nil)
	id := ok(t, cs, "create", map[string]any{"title": "one"}).Body["id"].(string)
	other, err := wqOpen(f, bob).Add(context.Background(), workqueue.NewTask{Title: "bob's", Priority: 0, Type: "task"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wqOpen(f, bob).Next(context.Background(), nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	before := len(f.events())
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"done", map[string]any{"id": id}, "not_claimed"},
		{"heartbeat", map[string]any{"id": "sp-none"}, "not_found"},
		{"done", map[string]any{"id": other.ID}, "unauthorized"}, // bob holds it
		{"create", map[string]any{"title": " "}, "empty_title"},
		{"create", map[string]any{"title": "x", "priority": 9}, "invalid_priority"},
		{"create", map[string]any{"title": "x", "type": "saga"}, "invalid_type"},
		{"comment", map[string]any{"id": id, "text": ""}, "empty_comment"},
		{"dep_add", map[string]any{"id": id, "blocker": id}, "dependency_cycle"},
		{"create", map[string]any{"title": "x", "priority": "high"}, "invalid_arguments"},
		{"create", map[string]any{}, "invalid_arguments"},
		{"ready", map[string]any{"limit": -1}, "invalid_arguments"},
		{"ready", map[string]any{"colour": "red"}, "invalid_arguments"},
		{"merge_status", map[string]any{"entry": "7"}, "entry_not_found"},
		{"job_submit", map[string]any{"argv": []string{"true"}, "gpus": 0}, "invalid_gpus"},
		{"job_cancel", map[string]any{"job": "job-none"}, "not_found"},
		{"propose", map[string]any{"category": "bug", "mapped_plan_id": "plan-none", "proposed_tasks": []any{}}, "invalid_proposal"},
		{"log", map[string]any{"since": "yesterday"}, "invalid_arguments"},
	} {
		if got := code(t, cs, c.tool, c.args); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.tool, c.args, got, c.want)
		}
	}
	if after := len(f.events()); after != before {
		t.Errorf("refused calls appended %d events", after-before)
	}
}

// A server's allow-list is what it offers: a tool outside it is neither
// listed nor callable, and calling it appends nothing.
func TestAllowList(t *testing.T) {
	f := newFixture(t, "read", "comment")
	cs := f.connect(f.srv.Session("", nil), nil)
	want := append(slices.Clone(mcpserver.Sets["read"]), "comment")
	slices.Sort(want)
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Errorf("tools: %v, want %v", got, want)
	}
	if _, err := wqOpen(f, ada).Add(context.Background(), workqueue.NewTask{Title: "t", Priority: 2, Type: "task"}); err != nil {
		t.Fatal(err)
	}
	before := len(f.events())
	for _, name := range []string{"next", "done", "create"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": "x", "title": "x"}})
		if err == nil && !res.IsError {
			t.Errorf("%s outside the allow-list answered %+v", name, res)
		}
	}
	if after := len(f.events()); after != before {
		t.Errorf("calls outside the allow-list appended %d events", after-before)
	}
	// The agent's set is the trust boundary's: read, comment, heartbeat, propose.
	agent, err := mcpserver.Resolve([]string{"agent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, never := range []string{"next", "done", "fail", "create", "update", "dep_add", "block", "unblock", "merge_submit", "job_submit"} {
		if slices.Contains(agent, never) {
			t.Errorf("the agent set has %s", never)
		}
	}
	if _, err := mcpserver.Resolve([]string{"read", "launch"}); err == nil || !strings.Contains(err.Error(), `"launch"`) {
		t.Errorf("an unknown tool in --tools: %v", err)
	}
	// all is every tool, alone or after another set.
	for _, list := range [][]string{{"all"}, {"read", "all"}, nil} {
		if got, err := mcpserver.Resolve(list); err != nil || !slices.Equal(got, mcpserver.ToolNames()) || len(got) < 20 {
			t.Errorf("--tools %v: %v %v, want every tool", list, got, err)
		}
	}
}

// The resources read as their commands' --json; a task that does not
// exist is the protocol's resource-not-found. The prompt is agentguide's
// text, under 2 KB.
func TestResourcesAndPrompt(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(f.srv.Session("", nil), nil)
	ctx := context.Background()
	id := ok(t, cs, "create", map[string]any{"title": "one"}).Body["id"].(string)
	read := func(uri string) []byte {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		return []byte(res.Contents[0].Text)
	}
	var ready []map[string]any
	if err := json.Unmarshal(read("spool://ready"), &ready); err != nil || len(ready) != 1 || ready[0]["id"] != id {
		t.Errorf("spool://ready: %v %v", ready, err)
	}
	var task map[string]any
	if err := json.Unmarshal(read("spool://task/"+id), &task); err != nil || task["id"] != id || task["title"] != "one" {
		t.Errorf("spool://task/%s: %v %v", id, task, err)
	}
	var merge struct{ Entries []any }
	if err := json.Unmarshal(read("spool://merge"), &merge); err != nil || merge.Entries == nil {
		t.Errorf("spool://merge: %v", err)
	}
	var jobs []any
	if err := json.Unmarshal(read("spool://jobs"), &jobs); err != nil || jobs == nil {
		t.Errorf("spool://jobs: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "spool://task/sp-none"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a task that does not exist: %v", err)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "workflow"})
	if err != nil {
		t.Fatal(err)
	}
	text := p.Messages[0].Content.(*mcp.TextContent).Text
	if text != agentguide.Text(agentguide.Context{}) || len(text) > agentguide.Max {
		t.Errorf("the prompt (%d bytes) is not agentguide's text", len(text))
	}
}

// Subscribers hear of changes another process appends: the task they
// subscribed to (a comment, a claim), and the ready queue when what it
// shows changes (not when an event leaves it as it was).
func TestSubscriptions(t *testing.T) {
	f := newFixture(t)
	updated := make(chan string, 100)
	// The SDK's client subscribes without waiting (subscriptions/listen):
	// the server's acknowledgement says the subscription is taken.
	acked := make(chan struct{}, 10)
	cs := f.connect(f.srv.Session("", nil), &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	}, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	ctx := context.Background()
	q := wqOpen(f, bob)
	task, err := q.Add(ctx, workqueue.NewTask{Title: "watched", Priority: 2, Type: "task"})
	if err != nil {
		t.Fatal(err)
	}
	f.follow()
	for _, uri := range []string{"spool://ready", "spool://task/" + task.ID} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
		select {
		case <-acked:
		case <-time.After(10 * time.Second):
			t.Fatalf("subscribe %s: not acknowledged in 10 s", uri)
		}
	}
	// wait collects what arrives after a wake, until want came (10 s at most).
	wait := func(want ...string) map[string]bool {
		t.Helper()
		f.wake()
		got := map[string]bool{}
		deadline := time.After(10 * time.Second)
		for !allIn(want, got) {
			select {
			case uri := <-updated:
				got[uri] = true
			case <-deadline:
				t.Fatalf("heard %v, want %v", got, want)
			}
		}
		return got
	}
	// A comment changes the task, not what is ready.
	if _, err := q.Comment(ctx, task.ID, "looking"); err != nil {
		t.Fatal(err)
	}
	if got := wait("spool://task/" + task.ID); got["spool://ready"] {
		t.Errorf("a comment said the ready queue changed: %v", got)
	}
	// A claim changes both.
	if _, _, err := wqOpen(f, bob).Next(ctx, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	wait("spool://task/"+task.ID, "spool://ready")
}

func allIn(want []string, got map[string]bool) bool {
	for _, w := range want {
		if !got[w] {
			return false
		}
	}
	return true
}

// ValidName is the pattern it was written from.
func TestValidNameAsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	r := rand.New(rand.NewPCG(9, 10))
	const alphabet = "aZ09_-. é"
	for range 20000 {
		var b strings.Builder
		for range r.IntN(70) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		for _, s := range []string{b.String(), strings.Repeat("a", r.IntN(70))} {
			if mcpserver.ValidName(s) != re.MatchString(s) {
				t.Errorf("%q: %v, the pattern says %v", s, mcpserver.ValidName(s), re.MatchString(s))
			}
		}
	}
}
