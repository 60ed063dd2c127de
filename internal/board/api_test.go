package board_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// seed is the tasks and jobs most tests start from.
type seed struct {
	docs, urgent, flaky, working, waiting, closed string // tasks
	job1, job2                                    string // alice's jobs, queued
}

func (f *fixture) seed() seed {
	f.t.Helper()
	var s seed
	s.docs = f.add(workqueue.NewTask{Title: "Write the docs", Priority: 2, Labels: []string{"docs"}})
	s.urgent = f.add(workqueue.NewTask{Title: "Fix the outage", Priority: 0, Labels: []string{"bug"}})
	s.flaky = f.add(workqueue.NewTask{Title: "Flaky deploy", Priority: 1, Labels: []string{"ops"}})
	f.block(s.flaky, "waiting on the vendor")
	s.working = f.add(workqueue.NewTask{Title: "In hand", Priority: 1, Labels: []string{"claimme"}})
	if id := f.claim("claimme", "w1"); id != s.working {
		f.t.Fatalf("claimed %s, want %s", id, s.working)
	}
	s.waiting = f.add(workqueue.NewTask{Title: "After the docs", Priority: 3})
	f.dep(s.waiting, s.docs)
	s.closed = f.add(workqueue.NewTask{Title: "Old news", Priority: 2})
	f.closeTask(s.closed)
	s.job1 = f.submitJob(alice, "train")
	s.job2 = f.submitJob(alice, "eval")
	return s
}

// Every GET endpoint answers 200 with the JSON of its CLI command, which is
// what the services return.
func TestAPIReadsAnswerAsTheCLI(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	ctx := context.Background()
	env := f.readEnv()
	q := wqservice.Open(env)

	get := func(path string) string {
		t.Helper()
		r := f.get(path)
		wantStatus(t, r, http.StatusOK)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q", path, ct)
		}
		if strings.Count(r.body, "\n") != 1 || !strings.HasSuffix(r.body, "\n") { // every answer compact, one line
			t.Fatalf("%s: not one line of compact JSON:\n%s", path, r.body)
		}
		return r.body
	}

	t.Run("tasks", func(t *testing.T) {
		tasks, st, err := q.List(ctx, workqueue.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		counts := st.DependentCounts()
		var want []workqueue.ListItemJSON
		for _, task := range tasks {
			want = append(want, st.ListItem(task, q.Policy, env.Now, counts))
		}
		sameJSON(t, "/api/tasks", get("/api/tasks"), want)
	})
	t.Run("tasks filtered", func(t *testing.T) {
		ids := func(path string) []string {
			t.Helper()
			var items []workqueue.ListItemJSON
			decode(t, f.get(path), &items)
			var out []string
			for _, it := range items {
				out = append(out, it.ID)
			}
			slices.Sort(out)
			return out
		}
		for path, want := range map[string][]string{
			"/api/tasks?label=docs":                   {s.docs},
			"/api/tasks?priority=0":                   {s.urgent},
			"/api/tasks?status=closed":                {s.closed},
			"/api/tasks?status=in_progress":           {s.working},
			"/api/tasks?label=docs&priority=0":        nil,
			"/api/tasks?label=nothing-has-this-label": nil,
		} {
			if got := ids(path); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", path, got, want)
			}
		}
		wantError(t, f.get("/api/tasks?status=bogus"), http.StatusBadRequest, "invalid_request")
		wantError(t, f.get("/api/tasks?priority=9"), http.StatusBadRequest, "invalid_priority")
		wantError(t, f.get("/api/tasks?priority=x"), http.StatusBadRequest, "invalid_priority")
		wantError(t, f.get("/api/tasks?label=a,b"), http.StatusBadRequest, "invalid_label")
	})
	t.Run("task", func(t *testing.T) {
		want, _, err := q.Show(ctx, []string{s.waiting})
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "/api/tasks/{id}", get("/api/tasks/"+s.waiting), want)
		wantError(t, f.get("/api/tasks/sp-nope"), http.StatusNotFound, "not_found")
	})
	t.Run("ready", func(t *testing.T) {
		tasks, st, err := q.Ready(ctx, workqueue.ReadyFilter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []workqueue.TaskJSON{}
		for _, task := range tasks {
			want = append(want, st.View(task, q.Policy, env.Now))
		}
		body := get("/api/ready")
		sameJSON(t, "/api/ready", body, want)
		var got []workqueue.TaskJSON
		decode(t, response{body: body}, &got)
		if len(got) != 2 || got[0].ID != s.urgent || got[1].ID != s.docs {
			t.Fatalf("ready %v, want [%s %s]", got, s.urgent, s.docs)
		}
		var one []workqueue.TaskJSON
		decode(t, f.get("/api/ready?n=1"), &one)
		if len(one) != 1 || one[0].ID != s.urgent {
			t.Fatalf("ready?n=1: %v", one)
		}
		decode(t, f.get("/api/ready?label=docs"), &one)
		if len(one) != 1 || one[0].ID != s.docs {
			t.Fatalf("ready?label=docs: %v", one)
		}
		sameJSON(t, "ready?label=none", get("/api/ready?label=none"), []any{})
		wantError(t, f.get("/api/ready?n=-1"), http.StatusBadRequest, "invalid_request")
		wantError(t, f.get("/api/ready?label_any=a%20b"), http.StatusBadRequest, "invalid_label")
	})
	t.Run("history", func(t *testing.T) {
		want, err := q.Histories(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 2 {
			t.Fatalf("history %v: the fixture blocked one task and claimed another", want)
		}
		sameJSON(t, "/api/history", get("/api/history"), want)
	})
	t.Run("stats", func(t *testing.T) {
		want, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want.Blocked != 1 || want.Working != 1 {
			t.Fatalf("stats %+v", want)
		}
		sameJSON(t, "/api/stats", get("/api/stats"), want)
	})
	t.Run("jobs", func(t *testing.T) {
		jq := jobservice.Open(env)
		st, err := jq.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		body := get("/api/jobs")
		sameJSON(t, "/api/jobs", body, st.List(jq.Policy, env.Now, false))
		var rows []jobs.Row
		decode(t, response{body: body}, &rows)
		if len(rows) != 2 || rows[0].ID != s.job1 || rows[1].ID != s.job2 {
			t.Fatalf("jobs %+v", rows)
		}
		sameJSON(t, "/api/jobs?all=1", get("/api/jobs?all=1"), st.List(jq.Policy, env.Now, true))
		wantError(t, f.get("/api/jobs?all=maybe"), http.StatusBadRequest, "invalid_request")

		job, err := st.Job(s.job1)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "/api/jobs/{id}", get("/api/jobs/"+s.job1), job)
		wantError(t, f.get("/api/jobs/job-nope"), http.StatusNotFound, "not_found")

		sameJSON(t, "/api/jobs/stats", get("/api/jobs/stats"), st.Stats(jq.Policy, env.Now.Add(-7*24*time.Hour), env.Now))
		sameJSON(t, "/api/jobs/stats?since=1h", get("/api/jobs/stats?since=1h"), st.Stats(jq.Policy, env.Now.Add(-time.Hour), env.Now))
		since := t0.Add(-time.Minute)
		sameJSON(t, "/api/jobs/stats?since=RFC3339", get("/api/jobs/stats?since="+since.Format(time.RFC3339)), st.Stats(jq.Policy, since, env.Now))
		if r := f.get("/api/jobs/stats?since=yesterday-ish"); r.code != http.StatusBadRequest {
			t.Fatalf("since=yesterday-ish: %d %s", r.code, r.body)
		}
	})
	t.Run("merge empty", func(t *testing.T) {
		var m map[string]any
		decode(t, f.get("/api/merge"), &m)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"entries", "frozen", "frozen_reason", "pending_count"}) {
			t.Fatalf("merge list keys %v", keys)
		}
		if m["frozen"] != false || m["pending_count"] != 0.0 || len(m["entries"].([]any)) != 0 {
			t.Fatalf("empty merge queue %v", m)
		}
		wantError(t, f.get("/api/merge/42"), http.StatusNotFound, "entry_not_found")
		wantError(t, f.get("/api/merge/abcdef12"), http.StatusNotFound, "entry_not_found")
		wantError(t, f.get("/api/merge/not-a-ref"), http.StatusBadRequest, "invalid_entry_ref")
	})
	t.Run("prd", func(t *testing.T) {
		st, err := prdservice.Open(env, env.Store.Repo.WorkTree).Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "/api/prd", get("/api/prd"), []any{})
		sameJSON(t, "/api/prd/report", get("/api/prd/report"), st.Report(""))
		// A feature that has no run is not_found, as prd report says.
		wantError(t, f.get("/api/prd/report?feature=nope"), http.StatusNotFound, "not_found")
		wantError(t, f.get("/api/prd?feature=nope"), http.StatusNotFound, "not_found")
	})
	t.Run("orchestrator status", func(t *testing.T) {
		want, _, err := orchservice.Open(env).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		body := get("/api/orchestrator/status")
		sameJSON(t, "/api/orchestrator/status", body, want)
		var m map[string]any
		decode(t, response{body: body}, &m)
		if v, ok := m["currentTask"]; !ok || v != nil {
			t.Fatalf("currentTask: %v", m)
		}
		if m["queueDepth"] != 2.0 {
			t.Fatalf("queueDepth: %v, want 2 ready tasks", m)
		}
	})
}

// The merge endpoints over a real entry: a worktree on a branch, queued.
func TestAPIMergeQueue(t *testing.T) {
	f := newFixture(t)
	a := f.submitMerge("feat-a", alice)
	b := f.submitMerge("feat-b", alice)
	ctx := context.Background()

	q, err := mqservice.Open(f.readEnv()).Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := f.get("/api/merge")
	wantStatus(t, r, http.StatusOK)
	o := mqservice.Open(f.readEnv()).Order(q)
	// merge list --json's content, compact as every endpoint's answer is:
	// one line.
	var compact bytes.Buffer
	json.Compact(&compact, q.ListJSONIn(q.ListedIn(false, o), o))
	if r.body != compact.String()+"\n" {
		t.Fatalf("/api/merge:\n%s\nwant\n%s", r.body, compact.String())
	}
	var list struct {
		Frozen       bool             `json:"frozen"`
		FrozenReason string           `json:"frozen_reason"`
		PendingCount int              `json:"pending_count"`
		Entries      []map[string]any `json:"entries"`
	}
	decode(t, r, &list)
	if list.PendingCount != 2 || len(list.Entries) != 2 || list.Entries[0]["entry_id"] != float64(a.EntryID) {
		t.Fatalf("/api/merge: %+v", list)
	}

	mq := mqservice.Open(f.readEnv())
	q1, en, err := mq.Entry(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	want, err := mq.Show(ctx, q1, en) // merge show 1 --json
	if err != nil {
		t.Fatal(err)
	}
	if want.EffectivePriority == nil || *want.EffectivePriority != 2 || want.Logs == nil {
		t.Fatalf("shown: %+v", want)
	}
	sameJSON(t, "/api/merge/1", f.get("/api/merge/1").body, want)
	sameJSON(t, "/api/merge/{ref prefix}", f.get("/api/merge/"+a.EntryRef[:8]).body, want)

	// Retrying a pending entry is refused; bob may not touch alice's entry.
	n := len(f.events())
	wantError(t, f.post("/api/merge/1/retry", ""), http.StatusConflict, "invalid_state_transition")
	wantError(t, f.do(request{method: "POST", path: "/api/merge/1/cancel", token: bobToken}), http.StatusForbidden, "unauthorized_entry_modification")
	wantError(t, f.post("/api/merge/99/cancel", ""), http.StatusNotFound, "entry_not_found")
	wantError(t, f.post("/api/merge/not-a-ref/cancel", ""), http.StatusBadRequest, "invalid_entry_ref")
	if got := len(f.events()); got != n {
		t.Fatalf("refused merge writes appended %d events", got-n)
	}

	// Cancel: the entry's place as merge cancel --json prints it, one event.
	var evs []*eventlog.Event
	evs = f.appended(func() {
		r = f.post("/api/merge/1/cancel", `{"reason":"not needed"}`)
	})
	wantStatus(t, r, http.StatusOK)
	var placed mergequeue.Placed
	decode(t, r, &placed)
	if placed.EntryID != a.EntryID || placed.Status != mergequeue.Cancelled || placed.Position != nil || placed.PendingCount != 1 {
		t.Fatalf("cancel answered %+v", placed)
	}
	if len(evs) != 1 || evs[0].Type != mergequeue.EvCancelled || evs[0].Actor != alice || !strings.Contains(string(evs[0].Data), `"reason":"not needed"`) {
		t.Fatalf("cancel appended %v", evs)
	}
	// b moved up to the front.
	decode(t, f.get("/api/merge/"+b.EntryRef), &placed)
	if placed.Position == nil || *placed.Position != 1 {
		t.Fatalf("entry b after the cancel: %+v", placed)
	}
	// A cancelled entry is terminal: no retry.
	wantError(t, f.post("/api/merge/1/retry", ""), http.StatusConflict, "entry_is_terminal")
	// --all lists the cancelled entry too.
	decode(t, f.get("/api/merge?all=1"), &list)
	if len(list.Entries) != 2 || list.PendingCount != 1 {
		t.Fatalf("/api/merge?all=1: %+v", list)
	}
	decode(t, f.get("/api/merge"), &list)
	if len(list.Entries) != 1 {
		t.Fatalf("/api/merge after the cancel: %+v", list)
	}

	// The train claims b and its tests fail: failed_retryable, which the
	// board's Retry puts back in the queue.
	train := mqservice.Open(f.env("train@example.com"))
	if _, _, err := train.Change(ctx, func(q *mergequeue.State, _ string) ([]eventlog.Draft, error) {
		claim, en := mergequeue.DecideClaim(q, "runner-1", mergequeue.Target{Branch: "main"}, train.Policy, train.Now)
		if en == nil || en.ID != b.EntryID {
			t.Fatalf("the train claimed %v, want entry %d", en, b.EntryID)
		}
		return claim, nil
	}); err != nil {
		t.Fatal(err)
	}
	train = mqservice.Open(f.env("train@example.com"))
	if _, _, err := train.Change(ctx, func(q *mergequeue.State, _ string) ([]eventlog.Draft, error) {
		return mergequeue.DecideStep(q, mergequeue.Step{EntryID: b.EntryID, Runner: "runner-1", From: mergequeue.Claimed,
			To: mergequeue.FailedRetryable, HeadSHA: b.HeadSHA, Reason: "tests failed"}, train.Policy, train.Now)
	}); err != nil {
		t.Fatal(err)
	}
	page := f.do(request{path: "/merge", token: token})
	if !strings.Contains(page.body, `data-api="/api/merge/2/retry"`) || !strings.Contains(page.body, "failed_retryable") {
		t.Fatalf("/merge offers no retry of the failed entry:\n%s", page.body)
	}
	wantError(t, f.do(request{method: "POST", path: "/api/merge/2/retry", token: bobToken}), http.StatusForbidden, "unauthorized_entry_modification")
	evs = f.appended(func() { r = f.post("/api/merge/"+b.EntryRef[:10]+"/retry", "") })
	wantStatus(t, r, http.StatusOK)
	decode(t, r, &placed)
	if placed.EntryID != b.EntryID || placed.Status != mergequeue.Pending || placed.Position == nil || *placed.Position != 1 || placed.PendingCount != 1 {
		t.Fatalf("retry answered %+v", placed)
	}
	if len(evs) != 1 || evs[0].Type != mergequeue.EvRetried || evs[0].Actor != alice || evs[0].Subject != mergequeue.Subject(b.EntryID) {
		t.Fatalf("retry appended %v", evs)
	}
	// Its page shows the whole trail.
	page = f.get("/merge/2")
	for _, want := range []string{mergequeue.EvSubmitted, mergequeue.EvClaimed, mergequeue.EvTransitioned, mergequeue.EvRetried, "tests failed", "train@example.com"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("/merge/2 has no %q", want)
		}
	}
}

// The task writes: each appends the event of its CLI command and answers
// with the task's history; each refusal answers with the CLI's error code
// and appends nothing.
func TestAPITaskWrites(t *testing.T) {
	f := newFixture(t)
	s := f.seed()

	refused := func(r request, status int, code string) {
		t.Helper()
		var got response
		if evs := f.appended(func() { got = f.do(r) }); len(evs) != 0 {
			t.Fatalf("%s %s: refused (%d) but appended %v", r.method, r.path, got.code, evs)
		}
		wantError(t, got, status, code)
	}
	post := func(path, body string) request {
		return request{method: http.MethodPost, path: path, body: body, token: token}
	}

	refused(post("/api/tasks/sp-nope/unblock", ""), http.StatusNotFound, "not_found")
	refused(post("/api/tasks/sp-nope/retry", ""), http.StatusNotFound, "not_found")
	refused(post("/api/tasks/"+s.docs+"/unblock", ""), http.StatusConflict, "invalid_state_transition")
	refused(post("/api/tasks/"+s.docs+"/retry", ""), http.StatusConflict, "invalid_state_transition")
	refused(post("/api/tasks/"+s.flaky+"/unblock?reset_attempts=perhaps", ""), http.StatusBadRequest, "invalid_request")
	refused(post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts":"perhaps"}`), http.StatusBadRequest, "invalid_request")
	// A form body is read as a form.
	r := post("/api/tasks/"+s.flaky+"/unblock", "reset_attempts=perhaps")
	r.ctype = "application/x-www-form-urlencoded"
	refused(r, http.StatusBadRequest, "invalid_request")
	refused(post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts": tru`), http.StatusBadRequest, "invalid_request")
	r = post("/api/tasks/"+s.flaky+"/unblock", `["reset_attempts"]`)
	r.ctype = "application/json"
	refused(r, http.StatusBadRequest, "invalid_request")
	r = post("/api/tasks/"+s.flaky+"/unblock", `["reset_attempts"]`)
	r.ctype = "application/json; charset=utf-8"
	refused(r, http.StatusBadRequest, "invalid_request")
	refused(post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts":null}`), http.StatusBadRequest, "invalid_request")
	refused(post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts":{"x":1}}`), http.StatusBadRequest, "invalid_request")
	// A body over 1 MiB, JSON or a form, is refused as too large, saying
	// the limit (cut at the limit it would read as broken JSON).
	over := strings.Repeat("x", 1<<20)
	for _, r := range []request{
		post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts":"true","pad":"`+over+`"}`),
		{method: http.MethodPost, path: "/api/tasks/" + s.flaky + "/unblock", body: "reset_attempts=true&pad=" + over, ctype: "application/x-www-form-urlencoded", token: token},
	} {
		var got response
		if evs := f.appended(func() { got = f.do(r) }); len(evs) != 0 {
			t.Fatalf("a body over the limit appended %v", evs)
		}
		e := wantError(t, got, http.StatusRequestEntityTooLarge, "body_too_large")
		if msg := e["message"].(string); !strings.Contains(msg, "over the limit of 1048576 bytes (1 MiB)") || e["limit"] != float64(1<<20) {
			t.Fatalf("%s body over the limit: %v", r.ctype, e)
		}
	}
	// At the limit it is read.
	atLimit := `{"reset_attempts":"perhaps","pad":"`
	atLimit += strings.Repeat("x", 1<<20-len(atLimit)-2) + `"}`
	wantError(t, f.do(post("/api/tasks/"+s.flaky+"/unblock", atLimit)), http.StatusBadRequest, "invalid_request")

	// Unblock with reset_attempts as the pages send it: a form, "on".
	var got response
	evs := f.appended(func() {
		r := post("/api/tasks/"+s.flaky+"/unblock", "reset_attempts=on")
		r.ctype = "application/x-www-form-urlencoded"
		got = f.do(r)
	})
	wantStatus(t, got, http.StatusOK)
	var h workqueue.EntryJSON
	decode(t, got, &h)
	if h.ID != s.flaky || h.Status == workqueue.HistBlocked {
		t.Fatalf("unblock answered %+v", h)
	}
	if len(evs) != 1 || evs[0].Type != workqueue.TypeUnblocked || evs[0].Subject != s.flaky || evs[0].Actor != alice ||
		string(evs[0].Data) != `{"reset_attempts":true}` {
		t.Fatalf("unblock appended %v", evs)
	}
	refused(post("/api/tasks/"+s.flaky+"/unblock", ""), http.StatusConflict, "invalid_state_transition")

	// Block it again; unblock with a JSON body, reset_attempts false.
	f.block(s.flaky, "again")
	evs = f.appended(func() { got = f.post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts":false}`) })
	wantStatus(t, got, http.StatusOK)
	if len(evs) != 1 || evs[0].Type != workqueue.TypeUnblocked || string(evs[0].Data) != `{"reset_attempts":false}` {
		t.Fatalf("unblock appended %v", evs)
	}
	// …and with the query, JSON true.
	f.block(s.flaky, "and again")
	evs = f.appended(func() { got = f.post("/api/tasks/"+s.flaky+"/unblock", `{"reset_attempts":true}`) })
	wantStatus(t, got, http.StatusOK)
	if len(evs) != 1 || string(evs[0].Data) != `{"reset_attempts":true}` {
		t.Fatalf("unblock appended %v", evs)
	}

	// Retry a blocked task: task.retried, attempts reset.
	f.block(s.flaky, "once more")
	evs = f.appended(func() { got = f.post("/api/tasks/"+s.flaky+"/retry", "") })
	wantStatus(t, got, http.StatusOK)
	decode(t, got, &h)
	if h.Status != workqueue.HistPending || h.Attempts != 0 {
		t.Fatalf("retry answered %+v", h)
	}
	if len(evs) != 1 || evs[0].Type != workqueue.TypeRetried || evs[0].Subject != s.flaky {
		t.Fatalf("retry appended %v", evs)
	}
	// The board reads what it wrote: the task is ready again.
	var ready []workqueue.TaskJSON
	decode(t, f.get("/api/ready"), &ready)
	if len(ready) != 3 || ready[1].ID != s.flaky {
		t.Fatalf("ready after the retry: %v", ready)
	}
}

// The job writes: pause, resume, cancel for the owner; move for admins.
func TestAPIJobWrites(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	as := func(tok, path, body string) request {
		return request{method: http.MethodPost, path: path, body: body, token: tok}
	}
	refused := func(r request, status int, code string) {
		t.Helper()
		var got response
		if evs := f.appended(func() { got = f.do(r) }); len(evs) != 0 {
			t.Fatalf("%s: refused (%d) but appended %v", r.path, got.code, evs)
		}
		wantError(t, got, status, code)
	}
	ok := func(r request, typ, actor string) *jobs.Job {
		t.Helper()
		var got response
		evs := f.appended(func() { got = f.do(r) })
		wantStatus(t, got, http.StatusOK)
		if len(evs) != 1 || evs[0].Type != typ || evs[0].Actor != actor {
			t.Fatalf("%s appended %v, want one %s by %s", r.path, evs, typ, actor)
		}
		var j jobs.Job
		decode(t, got, &j)
		return &j
	}
	move := "/api/jobs/" + s.job2 + "/move"

	// Where is missing, or said twice: jobs' invalid_move, before any
	// question of who asks.
	refused(as(token, move, ""), http.StatusBadRequest, "invalid_move")
	refused(as(bobToken, move, ""), http.StatusBadRequest, "invalid_move")
	refused(as(bossToken, move, `{"top":true,"before":"`+s.job1+`"}`), http.StatusBadRequest, "invalid_move")
	refused(as(bossToken, move, `{"top":"sometimes"}`), http.StatusBadRequest, "invalid_request")
	refused(as(bossToken, move, `{"bottom":"sometimes"}`), http.StatusBadRequest, "invalid_request")
	// Alice owns the job but is no admin: only admins reorder.
	refused(as(token, move, `{"before":"`+s.job1+`"}`), http.StatusForbidden, "unauthorized")
	refused(as(bobToken, move, `{"top":true}`), http.StatusForbidden, "unauthorized")
	refused(as(bossToken, "/api/jobs/job-nope/move", `{"top":true}`), http.StatusNotFound, "not_found")
	refused(as(bossToken, move, `{"before":"`+s.job2+`"}`), http.StatusBadRequest, "invalid_move")

	// The admin's token acts as the admin.
	ok(as(bossToken, move, `{"before":"`+s.job1+`"}`), jobs.TypeMoved, boss)
	var rows []jobs.Row
	decode(t, f.get("/api/jobs"), &rows)
	if len(rows) != 2 || rows[0].ID != s.job2 || rows[1].ID != s.job1 {
		t.Fatalf("after the move: %+v", rows)
	}
	// As a form, the way the page's drag sends it.
	r := as(bossToken, move, "after="+s.job1)
	r.ctype = "application/x-www-form-urlencoded"
	ok(r, jobs.TypeMoved, boss)
	decode(t, f.get("/api/jobs"), &rows)
	if rows[0].ID != s.job1 {
		t.Fatalf("after the second move: %+v", rows)
	}

	// Bob may not pause, resume, retry or cancel alice's jobs.
	for _, what := range []string{"pause", "resume", "retry", "cancel"} {
		refused(as(bobToken, "/api/jobs/"+s.job1+"/"+what, ""), http.StatusForbidden, "unauthorized")
		refused(as(token, "/api/jobs/job-nope/"+what, ""), http.StatusNotFound, "not_found")
	}
	refused(as(token, "/api/jobs/"+s.job1+"/resume", ""), http.StatusConflict, "invalid_state_transition")
	refused(as(token, "/api/jobs/"+s.job1+"/retry", ""), http.StatusConflict, "invalid_state_transition") // only a failed job
	if j := ok(as(token, "/api/jobs/"+s.job1+"/pause", ""), jobs.TypePaused, alice); j.ID != s.job1 || j.Status != jobs.Paused {
		t.Fatalf("pause answered %+v", j)
	}
	refused(as(token, "/api/jobs/"+s.job1+"/pause", ""), http.StatusConflict, "invalid_state_transition")
	if j := ok(as(token, "/api/jobs/"+s.job1+"/resume", ""), jobs.TypeResumed, alice); j.Status != jobs.Queued {
		t.Fatalf("resume answered %+v", j)
	}
	// The admin may cancel anyone's job.
	if j := ok(as(bossToken, "/api/jobs/"+s.job1+"/cancel", ""), jobs.TypeCancelled, boss); j.Status != jobs.Cancelled {
		t.Fatalf("cancel answered %+v", j)
	}
	refused(as(token, "/api/jobs/"+s.job1+"/cancel", ""), http.StatusConflict, "invalid_state_transition")
}

// A repository with nothing in it: every list is [] (never null), every
// view renders.
func TestEmptyRepository(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/api/tasks", "/api/ready", "/api/history", "/api/jobs", "/api/jobs?all=1", "/api/prd"} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK)
		if strings.TrimSpace(r.body) != "[]" {
			t.Errorf("%s: %s, want []", path, r.body)
		}
	}
	sameJSON(t, "/api/stats", f.get("/api/stats").body, workqueue.Stats{})
	sameJSON(t, "/api/orchestrator/status", f.get("/api/orchestrator/status").body, map[string]any{"currentTask": nil, "queueDepth": 0})
	sameJSON(t, "/api/merge", f.get("/api/merge").body, map[string]any{"frozen": false, "frozen_reason": "", "pending_count": 0, "entries": []any{}})
	for _, path := range append(views, "/activity?type=task.") {
		wantPage(t, f.get(path), http.StatusOK)
	}
	if r := f.get("/jobs"); !strings.Contains(r.body, "No jobs") {
		t.Errorf("/jobs on an empty queue:\n%s", r.body)
	}
	if r := f.get("/merge"); !strings.Contains(r.body, "The merge queue is empty") {
		t.Errorf("/merge on an empty queue:\n%s", r.body)
	}
}
