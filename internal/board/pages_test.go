package board_test

import (
	"context"
	"encoding/json"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/projections"

	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// views are the menu's pages.
var views = []string{"/tasks", "/merge", "/jobs", "/prd", "/orchestrator", "/activity", "/analytics"}

func wantPage(t *testing.T, r response, status int) {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// section is the column data-col=key of the Tasks view.
func section(t *testing.T, body, key string) string {
	t.Helper()
	re := regexp.MustCompile(`(?s)<section class="col col-` + key + `" data-col="` + key + `">.*?</section>`)
	s := re.FindString(body)
	if s == "" {
		t.Fatalf("no column %s in:\n%s", key, body)
	}
	return s
}

var taskRE = regexp.MustCompile(`data-task="([^"]+)"`)

// tasksIn lists the cards of a column, in order.
func tasksIn(t *testing.T, body, key string) []string {
	t.Helper()
	var ids []string
	for _, m := range taskRE.FindAllStringSubmatch(section(t, body, key), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestPagesRender(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	f.submitMerge("feat", alice)
	f.follow()()

	for _, path := range append(views, "/tasks/"+s.flaky, "/jobs/"+s.job1, "/merge/1", "/analytics?days=30", "/merge?all=1", "/jobs?all=1",
		"/activity?type=task.&subject="+s.flaky) {
		r := f.get(path)
		wantPage(t, r, http.StatusOK)
		for _, want := range []string{"<!doctype html>", "<html", `<main id="main"`, "</html>", `<link rel="stylesheet" href="/assets/style.css">`} {
			if !strings.Contains(r.body, want) {
				t.Fatalf("%s: no %q in\n%s", path, want, r.body)
			}
		}
		for h, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Cache-Control": "no-store"} {
			if r.header.Get(h) != v {
				t.Fatalf("%s: %s %q", path, h, r.header.Get(h))
			}
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Fatalf("%s: CSP %q", path, csp)
		}

		// The page's script asks for the main part only, and what this
		// browser may do (view only without the token's cookie).
		p := f.do(request{path: path, header: map[string]string{"X-Spool-Partial": "1"}})
		wantPage(t, p, http.StatusOK)
		if !strings.HasPrefix(p.body, `<span id="access"><span class="badge" title="open the login URL spool serve printed">view only</span></span><main id="main"`) ||
			!strings.HasSuffix(strings.TrimSpace(p.body), "</main>") || strings.Contains(p.body, "<html") || strings.Contains(p.body, "<header") {
			t.Fatalf("%s partial:\n%s", path, p.body)
		}
	}

	// What the views show of the fixture.
	for path, want := range map[string][]string{
		"/tasks/" + s.flaky:                 {"Flaky deploy", "queue: blocked"},
		"/jobs":                             {s.job1, s.job2, "train", "eval"},
		"/jobs/" + s.job1:                   {"train", "echo train"},
		"/merge":                            {"feat", `href="/merge/1"`},
		"/merge/1":                          {"Merge entry 1", "feat", "merge.submitted"},
		"/activity":                         {"task.created", "job.submitted", "merge.submitted", `href="/tasks/` + s.flaky + `"`},
		"/activity?subject=" + s.flaky:      {"task.blocked"},
		"/orchestrator":                     {`<td id="queue-depth">2</td>`},
		"/analytics":                        {"ready <b>2</b>", "blocked <b>1</b>", "working <b>1</b>"},
		"/tasks?label=ops":                  {s.flaky},
		"/activity?type=job.":               {"job.submitted"},
		"/activity?actor=alice@example.com": {"task.created"},
	} {
		r := f.get(path)
		for _, w := range want {
			if !strings.Contains(r.body, w) {
				t.Errorf("%s: no %q", path, w)
			}
		}
	}
	if r := f.get("/activity?type=job."); strings.Contains(r.body, ">task.created<") {
		t.Errorf("/activity?type=job. lists task events")
	}
	if r := f.get("/activity?actor=bob@example.com"); strings.Contains(r.body, "task.created") {
		t.Errorf("/activity?actor=bob lists alice's events")
	}

	// / goes to the Tasks view.
	if r := f.get("/"); r.code != http.StatusFound || r.header.Get("Location") != "/tasks" {
		t.Fatalf("/: %d to %q", r.code, r.header.Get("Location"))
	}
	// The assets are served.
	for _, path := range []string{"/assets/app.js", "/assets/style.css"} {
		wantStatus(t, f.get(path), http.StatusOK)
	}
}

// A page's error is a page, with the API's status and the error's code.
func TestPageErrors(t *testing.T) {
	f := newFixture(t)
	f.seed()
	for path, want := range map[string]struct {
		status int
		code   string
	}{
		"/tasks/sp-nope":     {http.StatusNotFound, "not_found"},
		"/jobs/job-nope":     {http.StatusNotFound, "not_found"},
		"/merge/7":           {http.StatusNotFound, "entry_not_found"},
		"/merge/zz-top":      {http.StatusBadRequest, "invalid_entry_ref"},
		"/tasks?priority=9":  {http.StatusBadRequest, "invalid_priority"},
		"/tasks?priority=-1": {http.StatusBadRequest, "invalid_priority"},
		"/analytics?days=0":  {http.StatusBadRequest, "invalid_request"},
		"/analytics?days=x":  {http.StatusBadRequest, "invalid_request"},
	} {
		r := f.get(path)
		wantPage(t, r, want.status)
		if !strings.Contains(r.body, "code "+want.code) || !strings.Contains(r.body, `<p class="error-text">`) || !strings.Contains(r.body, "<html") {
			t.Errorf("%s: the error page does not say %s:\n%s", path, want.code, r.body)
		}
	}
	if r := f.get("/nowhere"); r.code != http.StatusNotFound {
		t.Fatalf("/nowhere: %d", r.code)
	}
	if r := f.do(request{method: http.MethodPost, path: "/tasks", token: token}); r.code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /tasks: %d", r.code)
	}
	if r := f.do(request{method: http.MethodGet, path: "/api/tasks/sp-x/unblock", token: token}); r.code != http.StatusMethodNotAllowed {
		t.Fatalf("GET of a write: %d", r.code)
	}
}

func TestTasksView(t *testing.T) {
	f := newFixture(t)
	k := f.kanbanSeed()
	withToken := request{path: "/tasks", header: map[string]string{"Cookie": readCookie(f, token)}}
	r := f.do(withToken)
	wantPage(t, r, http.StatusOK)

	for key, want := range map[string][]string{
		"waiting":     {k.waiting, k.deferred},
		"ready":       {k.readyB, k.readyA, k.readyC, k.once},
		"in_progress": {k.working},
		"backoff":     {k.backoff},
		"blocked":     {k.abandoned, k.blocked},
		"done":        {k.closed2, k.closed1},
	} {
		if got := tasksIn(t, r.body, key); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("column %s: %v, want %v", key, got, want)
		}
	}
	// The blocked task has an Unblock form, the abandoned one a Retry form,
	// inside the Blocked column; no other column offers either.
	blocked := section(t, r.body, "blocked")
	for _, want := range []string{
		`data-api="/api/tasks/` + k.blocked + `/unblock"`, `name="reset_attempts"`,
		`data-api="/api/tasks/` + k.abandoned + `/retry"`,
	} {
		if !strings.Contains(blocked, want) {
			t.Errorf("the Blocked column has no %s:\n%s", want, blocked)
		}
	}
	if strings.Contains(blocked, `/api/tasks/`+k.abandoned+`/unblock`) || strings.Contains(blocked, `/api/tasks/`+k.blocked+`/retry`) {
		t.Errorf("the Blocked column offers the wrong write:\n%s", blocked)
	}
	if strings.Count(r.body, "data-api=") != 3 || !strings.Contains(blocked, `<div class="bulk" data-api="/api/tasks/">`) {
		t.Errorf("the Tasks view offers %d writes, want 2 and the Blocked column's bulk bar", strings.Count(r.body, "data-api="))
	}
	for _, id := range []string{k.blocked, k.abandoned} {
		if !strings.Contains(blocked, `class="pick" name="pick-`+id+`" data-id="`+id+`"`) {
			t.Errorf("the Blocked card %s cannot be selected", id)
		}
	}
	if !strings.Contains(section(t, r.body, "in_progress"), "w1 · lease until") {
		t.Errorf("the working card does not name its worker:\n%s", section(t, r.body, "in_progress"))
	}
	if !strings.Contains(section(t, r.body, "backoff"), "eligible again") {
		t.Errorf("the backoff card does not say when:\n%s", section(t, r.body, "backoff"))
	}
	// Without the token: the same cards, no forms.
	r = f.get("/tasks")
	if got := tasksIn(t, r.body, "blocked"); len(got) != 2 || strings.Contains(r.body, "data-api=") {
		t.Errorf("without the token: blocked %v, forms %d", got, strings.Count(r.body, "data-api="))
	}

	// Filters narrow every column; the form keeps them.
	r = f.do(request{path: "/tasks?label=ab", header: withToken.header})
	if got := tasksIn(t, r.body, "blocked"); len(got) != 1 || got[0] != k.abandoned || len(taskRE.FindAllString(r.body, -1)) != 1 {
		t.Errorf("?label=ab: %v", taskRE.FindAllString(r.body, -1))
	}
	if !strings.Contains(r.body, `name="label" value="ab"`) {
		t.Errorf("?label=ab: the filter form forgot the label")
	}
	r = f.get("/tasks?priority=0")
	if got := taskRE.FindAllStringSubmatch(r.body, -1); len(got) != 2 || tasksIn(t, r.body, "ready")[0] != k.readyB || tasksIn(t, r.body, "waiting")[0] != k.waiting {
		t.Errorf("?priority=0: %v", got)
	}
	if !strings.Contains(r.body, `<option value="0" selected>`) {
		t.Errorf("?priority=0: the filter form forgot the priority")
	}
	r = f.get("/tasks?priority=1&label=bo")
	if got := taskRE.FindAllStringSubmatch(r.body, -1); len(got) != 1 || tasksIn(t, r.body, "backoff")[0] != k.backoff {
		t.Errorf("?priority=1&label=bo: %v", got)
	}
	wantPage(t, f.get("/tasks?priority=9"), http.StatusBadRequest)
}

// What people typed is shown as text, never as markup; the API keeps it
// exactly.
func TestPagesEscape(t *testing.T) {
	const (
		title = `<script>alert(1)</script>`
		msg   = `<img src=x onerror=alert(1)>`
		desc  = `</pre><script>alert(2)</script>`
	)
	const actor = `<script>alert(4)</script>@example.com` // whoever git says
	f := newFixture(t)
	caughtUp := f.follow()
	id := f.add(workqueue.NewTask{Title: title, Description: desc, Priority: 1, Labels: []string{"xss"}})
	f.fail(f.claim("xss", "w1"), msg)
	if _, err := wqservice.Open(f.env(actor)).Comment(context.Background(), id, msg); err != nil {
		t.Fatal(err)
	}
	caughtUp()

	for path, escaped := range map[string][]string{
		"/tasks":       {"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;"},
		"/tasks/" + id: {"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;", "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;", "&lt;script&gt;alert(4)&lt;/script&gt;@example.com"},
		"/activity":    {"&lt;script&gt;alert(4)&lt;/script&gt;@example.com"},
		"/activity?actor=" + url.QueryEscape(actor):                        {`value="&lt;script&gt;alert(4)&lt;/script&gt;@example.com"`, "task.commented"},
		"/activity?type=" + url.QueryEscape(`"><script>alert(5)</script>`): {`value="&#34;&gt;&lt;script&gt;alert(5)&lt;/script&gt;"`},
		"/activity?subject=" + id:                                          {"task.failed"},
		"/tasks?label=" + url.QueryEscape(`"><script>alert(6)</script>`):   {`value="&#34;&gt;&lt;script&gt;alert(6)&lt;/script&gt;"`},
	} {
		r := f.do(request{path: path, token: token})
		wantPage(t, r, http.StatusOK)
		for _, raw := range []string{"<script>alert", "<img src=x", "</pre><script>", `"><script>`} {
			if strings.Contains(r.body, raw) {
				t.Errorf("%s: raw %q in the page:\n%s", path, raw, r.body)
			}
		}
		for _, e := range escaped {
			if !strings.Contains(r.body, e) {
				t.Errorf("%s: no %q:\n%s", path, e, r.body)
			}
		}
	}
	// The Activity view shows an event's data as the log has it (as spool
	// log does): JSON, whose encoder wrote < and > as \u003c and \u003e.
	if r := f.get("/activity?subject=" + id); !strings.Contains(r.body, `\u003cscript\u003ealert(1)\u003c/script\u003e`) ||
		!strings.Contains(r.body, `\u003cimg src=x onerror=alert(1)\u003e`) {
		t.Errorf("/activity: the events' data is not there:\n%s", r.body)
	}

	// The JSON API has the exact strings.
	var shown []workqueue.DetailJSON
	decode(t, f.get("/api/tasks/"+id), &shown)
	if len(shown) != 1 || shown[0].Title != title || shown[0].Description != desc {
		t.Fatalf("/api/tasks/{id}: %+v", shown)
	}
	r := f.get("/api/tasks")
	if !strings.Contains(r.body, `"title":"`+title+`"`) {
		t.Errorf("/api/tasks escapes the title:\n%s", r.body)
	}
	var hist []workqueue.EntryJSON
	decode(t, f.get("/api/history"), &hist)
	if len(hist) != 1 || hist[0].LastError != msg {
		t.Fatalf("/api/history: %+v", hist)
	}
	var ready []workqueue.TaskJSON
	decode(t, f.get("/api/ready"), &ready)
	if len(ready) != 1 || ready[0].Title != title {
		t.Fatalf("/api/ready: %+v", ready)
	}
	// An error message that quotes what was typed keeps it exact too.
	e := wantError(t, f.get("/api/tasks?label="+strings.ReplaceAll(title, " ", "%20")+"%20x"), http.StatusBadRequest, "invalid_label")
	if b, _ := json.Marshal(e); !strings.Contains(string(b), "script") {
		t.Errorf("error %s", b)
	}
}

// The Orchestrator view shows the end of the running agent's output from
// where spool watch writes it, never from a path the log names: an event
// pointing at another file shows nothing of it.
func TestOrchestratorOutputTail(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("do not show this\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := f.add(workqueue.NewTask{Title: "agent work"})
	run := orchestrator.RunDir(store.RunsDir(f.st.Repo), id)
	env := f.env(alice)
	if _, _, err := env.Write(context.Background(), nil, func(*projections.View, string) ([]eventlog.Draft, error) {
		return []eventlog.Draft{
			{Type: orchestrator.TypeClaimed, Subject: id, Data: orchestrator.ClaimedData{Attempt: 1, Branch: "spool/" + id, RunDir: run}},
			{Type: orchestrator.TypeAgentStarted, Subject: id, Data: orchestrator.StartedData{Attempt: 1, Log: secret}},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	page := f.get("/orchestrator")
	if page.code != http.StatusOK || strings.Contains(page.body, "do not show this") {
		t.Fatalf("the view shows the file the log names (status %d):\n%s", page.code, page.body)
	}
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orchestrator.LogPath(run, 1), []byte("compiling\ntests pass <b>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page = f.get("/orchestrator")
	if !strings.Contains(page.body, "compiling\ntests pass &lt;b&gt;") || strings.Contains(page.body, "do not show this") {
		t.Fatalf("the view lacks the agent's own output:\n%s", page.body)
	}
	// A link out of the runs directory is not followed.
	os.Remove(orchestrator.LogPath(run, 1))
	if err := os.Symlink(secret, orchestrator.LogPath(run, 1)); err != nil {
		t.Fatal(err)
	}
	if page = f.get("/orchestrator"); strings.Contains(page.body, "do not show this") {
		t.Fatalf("the view followed a link out of the runs directory:\n%s", page.body)
	}
}

// The Orchestrator view says when the breaker paused it, why, and what to
// do; a resume takes the line away.
func TestOrchestratorPausedLine(t *testing.T) {
	f := newFixture(t)
	env := f.env(alice)
	write := func(d eventlog.Draft) {
		if _, _, err := env.Write(context.Background(), nil, func(*projections.View, string) ([]eventlog.Draft, error) {
			return []eventlog.Draft{d}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(orchestrator.Paused(orchestrator.PausedData{Kind: orchestrator.BreakCannotStart, Tasks: []string{"sp-1"},
		Reason: "the agent command could not start (exit 127); run spool orchestrator resume"}))
	page := f.get("/orchestrator")
	if !strings.Contains(page.body, `id="paused"`) || !strings.Contains(page.body, "could not start (exit 127); run spool orchestrator resume") {
		t.Fatalf("no paused line:\n%s", page.body)
	}
	write(eventlog.Draft{Type: orchestrator.TypeResumed, Subject: orchestrator.Worker, Data: orchestrator.ResumedData{Reason: "by hand"}})
	if page := f.get("/orchestrator"); strings.Contains(page.body, `id="paused"`) {
		t.Fatalf("a paused line after resume:\n%s", page.body)
	}
}

// Only the asset files are served, however a path is spelled: no directory
// listing, nothing outside assets/ (the templates' source).
func TestOnlyAssetFilesAreServed(t *testing.T) {
	f := newFixture(t)
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	for _, path := range []string{"/assets/", "/assets/%2e%2e/templates/layout.html", "/assets/../templates/layout.html",
		"/assets/..%2ftemplates%2flayout.html", "/assets/%2e%2e%2ftemplates%2flayout.html", "/assets/./", "/assets//",
		"/templates/layout.html", "/assets/templates/layout.html"} {
		res, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK || strings.Contains(string(body), "{{define") || strings.Contains(string(body), "app.js") {
			t.Errorf("%s: %d\n%.200s", path, res.StatusCode, body)
		}
	}
	for _, path := range []string{"/assets/app.js", "/assets/style.css"} {
		if res, err := ts.Client().Get(ts.URL + path); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", path, res.StatusCode, err)
		}
	}
}

// A time on a page says its zone: the log's times are UTC, the pages'
// local, and a reader must not have to guess which.
func TestTimesSayTheirZone(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	zone := time.Now().Local().Format("MST")
	r := f.get("/tasks/" + s.working)
	wantPage(t, r, http.StatusOK)
	if !regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ` + regexp.QuoteMeta(zone)).MatchString(r.body) {
		t.Errorf("/tasks/%s shows no time with its zone %s:\n%s", s.working, zone, r.body)
	}
	if r := f.get("/analytics"); !strings.Contains(r.body, "per hour of day, ") {
		t.Errorf("/analytics does not say which zone its hours are in")
	}
}

// The Tasks view's search and its all=1 (every card, the "+N more" link).
func TestTasksSearchAndAll(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	r := f.get("/tasks?q=write+THE")
	wantPage(t, r, http.StatusOK)
	if !strings.Contains(r.body, `data-task="`+s.docs+`"`) || strings.Contains(r.body, `data-task="`+s.urgent+`"`) {
		t.Errorf("q=write THE shows other tasks or misses %s", s.docs)
	}
	if !strings.Contains(r.body, `name="q" type="search" value="write THE"`) {
		t.Errorf("the search box does not keep its text")
	}
	wantPage(t, f.get("/tasks?all=1&q=docs"), http.StatusOK)
	if r := f.get("/tasks?all=perhaps"); r.code != http.StatusBadRequest || !strings.Contains(r.body, "invalid_request") {
		t.Errorf("all=perhaps: %d\n%s", r.code, r.body)
	}
}

// A PRD has a page: its state, gates, epic and open questions, linked from
// the PRD queue view.
func TestPRDPage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	os.MkdirAll(filepath.Join(f.repo.Root, "docs", "prd"), 0o755)
	os.WriteFile(filepath.Join(f.repo.Root, "docs", "prd", "checkout.md"), []byte(
		"---\nprd_approval: approved\nbeads_approval: pending\n---\n# Checkout\n\n## Open Questions\n- Which <b>provider</b>?\n"), 0o644)
	q := prdservice.Open(f.env(alice), f.repo.Root)
	if _, _, err := q.Start(ctx, "f1", "conflict-aware", 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Add(ctx, "f1", "checkout", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := prdservice.Open(f.env(alice), f.repo.Root).Submit(ctx, "checkout", ""); err != nil {
		t.Fatal(err)
	}
	if r := f.get("/prd"); !strings.Contains(r.body, `<a href="/prd/f1/checkout">checkout</a>`) {
		t.Errorf("/prd does not link the PRD's page:\n%s", r.body)
	}
	r := f.get("/prd/f1/checkout")
	wantPage(t, r, http.StatusOK)
	for _, want := range []string{"awaiting_", "prd_approval <b>approved</b>", "beads_approval <b>pending</b>", "<li>Which provider?</li>", "docs/prd/checkout.md"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("/prd/f1/checkout lacks %q:\n%s", want, r.body)
		}
	}
	wantPage(t, f.get("/prd/f1/nope"), http.StatusNotFound)
	wantPage(t, f.get("/prd/nope/checkout"), http.StatusNotFound)
}

// A task's page draws its dependencies and dependents, each a link.
func TestTaskGraph(t *testing.T) {
	f := newFixture(t)
	base := f.add(workqueue.NewTask{Title: "the <base> layer", Priority: 1})
	mid := f.add(workqueue.NewTask{Title: "middle", Priority: 1})
	top := f.add(workqueue.NewTask{Title: "top", Priority: 1})
	f.dep(mid, base)
	f.dep(top, mid)
	r := f.get("/tasks/" + mid)
	wantPage(t, r, http.StatusOK)
	graph := regexp.MustCompile(`(?s)<svg class="graph".*?</svg>`).FindString(r.body)
	for _, want := range []string{`<a href="/tasks/` + base + `">`, `<a href="/tasks/` + top + `">`, `<a href="/tasks/` + mid + `">`,
		"the &lt;base&gt; layer", "<title>blocks: the &lt;base&gt; layer (open)</title>"} {
		if !strings.Contains(graph, want) {
			t.Errorf("the graph lacks %q:\n%s", want, graph)
		}
	}
	if r := f.get("/tasks/" + f.add(workqueue.NewTask{Title: "alone"})); strings.Contains(r.body, `<svg class="graph"`) {
		t.Error("a task without dependencies has a graph")
	}
}

// A subject's timeline reads the whole log: here no follower fed the
// server's recent events at all.
func TestActivityTimelineOfASubject(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	r := f.get("/activity?subject=" + s.flaky)
	wantPage(t, r, http.StatusOK)
	created, blocked := strings.Index(r.body, ">task.created<"), strings.Index(r.body, ">task.blocked<")
	if created < 0 || blocked < 0 || blocked > created || !strings.Contains(r.body, "The timeline of "+s.flaky) {
		t.Fatalf("the timeline of %s lacks its events, newest first:\n%s", s.flaky, r.body)
	}
	if strings.Contains(r.body, `>`+s.docs+`<`) {
		t.Errorf("the timeline of %s shows %s", s.flaky, s.docs)
	}
}

// A job segment's log is served from the worker's own path for it, as
// text; nothing else is.
func TestSegmentLog(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	path := "/jobs/" + s.job1 + "/segments/0/log"
	if r := f.get(path); r.code != http.StatusNotFound {
		t.Fatalf("%s before the segment ran: %d", path, r.code)
	}
	dir := filepath.Join(store.JobsDir(f.st.Repo), s.job1)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "segment-0.log"), []byte("epoch 1\n<b>loss</b> 0.5\n"), 0o644)
	r := f.get(path)
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || r.body != "epoch 1\n<b>loss</b> 0.5\n" {
		t.Fatalf("%s: %d %q %q", path, r.code, r.header.Get("Content-Type"), r.body)
	}
	for p, code := range map[string]int{
		"/jobs/" + s.job1 + "/segments/x/log":   http.StatusBadRequest,
		"/jobs/" + s.job1 + "/segments/-1/log":  http.StatusNotFound,
		"/jobs/not-a-job/segments/0/log":        http.StatusNotFound,
		"/jobs/..%2f..%2fconfig/segments/0/log": http.StatusNotFound,
		"/jobs/" + s.job1 + "/segments/1/log":   http.StatusNotFound,
	} {
		if r := f.get(p); r.code != code {
			t.Errorf("%s: %d, want %d", p, r.code, code)
		}
	}
}

// The Jobs view's "starts (earliest – likely)" is a real range: the job
// behind another shows two different times; a job known to start at one
// time shows it once, never the same time twice.
func TestJobsViewStartRange(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	body := f.get("/jobs").body
	rangeCell := regexp.MustCompile(`<td>([0-9-]+ [0-9:]+ [^ <]+) – ([0-9-]+ [0-9:]+ [^ <]+)</td>`)
	for _, m := range rangeCell.FindAllStringSubmatch(body, -1) {
		if m[1] == m[2] {
			t.Errorf("the same time twice: %s", m[0])
		}
	}
	row := regexp.MustCompile(`(?s)data-job="` + s.job2 + `".*?</tr>`).FindString(body)
	if !rangeCell.MatchString(row) {
		t.Errorf("job %s, second in line, shows no range:\n%s", s.job2, row)
	}
}
