package board

import (
	"bytes"
	"context"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	"github.com/spoolhq/spool/internal/orchestrator"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	"github.com/spoolhq/spool/internal/prdqueue"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// page is one view: its path, its template and what it shows.
type page struct {
	Path  string
	Title string
	file  string // templates/FILE.html defines "main"
	load  func(ctx context.Context, env store.Env, r *http.Request) (any, error)
	tmpl  *template.Template
}

// cardLimit bounds each column of the Tasks view: the page stays fast with
// 10,000 tasks, and the API lists them all.
const cardLimit = 200

// pages are the views in the menu's order.
var pages = []*page{
	{Path: "tasks", Title: "Tasks", file: "tasks", load: loadTasks},
	{Path: "merge", Title: "Merge queue", file: "merge", load: loadMerge},
	{Path: "jobs", Title: "Jobs", file: "jobs", load: loadJobs},
	{Path: "prd", Title: "PRD queue", file: "prd", load: loadPRD},
	{Path: "orchestrator", Title: "Orchestrator", file: "orchestrator", load: loadOrchestrator},
	{Path: "activity", Title: "Activity", file: "activity"}, // loads from the server's hub
	{Path: "analytics", Title: "Analytics", file: "analytics", load: loadAnalytics},
}

var (
	taskPage       = &page{Path: "tasks", Title: "Task", file: "task", load: loadTask}
	mergeEntryPage = &page{Path: "merge", Title: "Merge entry", file: "entry", load: loadMergeEntry}
	jobPage        = &page{Path: "jobs", Title: "Job", file: "job", load: apiJob}
	prdPage        = &page{Path: "prd", Title: "PRD", file: "prdentry", load: loadPRDItem}
)

// parseTemplates parses every page's template, once: when the board is
// made (New), not at every spool command's start.
var parseTemplates = sync.OnceFunc(func() {
	for _, p := range append(pages[:len(pages):len(pages)], taskPage, mergeEntryPage, jobPage, prdPage) {
		p.tmpl = template.Must(template.Must(layout().Clone()).ParseFS(files, "templates/"+p.file+".html"))
	}
})

// layout is the frame every page shares: templates/layout.html.
var layout = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"when":    when,
		"graph":   depGraph,
		"ago":     ago,
		"join":    strings.Join,
		"short":   mergequeue.ShortRef,
		"sha":     func(s string) string { return s[:min(len(s), 10)] },
		"subject": subjectLink,
		"data":    func(raw []byte) string { return clipString(string(raw), 300) },
	}).ParseFS(files, "templates/layout.html"))
})

// view is what a page's template gets.
type view struct {
	Page     *page
	Nav      []*page
	CanWrite bool
	ReadOnly bool
	Actor    string // who the page's writes act as: buttons only for what they may do
	Now      time.Time
	Data     any
}

// page serves a view: the whole page, or only its main part when the page's
// script asks (X-Spool-Partial) to refresh it after an event.
func (s *Server) page(p *page) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.render(r, p)
		if err != nil {
			s.failPage(w, r, p, err)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		s.send(w, http.StatusOK, v)
	})
}

func (s *Server) render(r *http.Request, p *page) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.env(r)
	if err != nil {
		return nil, err
	}
	var data any
	if p.load != nil {
		data, err = p.load(r.Context(), env, r)
	} else {
		// The activity view reads the server's recent events, or for one
		// subject the whole log: neither is the store's, so other requests
		// need not wait for it.
		s.mu.Unlock()
		data, err = s.loadActivity(r.Context(), env, r)
		s.mu.Lock()
	}
	if err != nil {
		return nil, err
	}
	actor, _ := env.Actor(r.Context())
	v := view{Page: p, Nav: pages, CanWrite: s.canWrite(r), ReadOnly: s.opt.ReadOnly, Actor: actor, Now: env.Now, Data: data}
	name := "page"
	if r.Header.Get("X-Spool-Partial") != "" {
		name = "partial" // main, and what this browser may do (a restart with a new token takes it away)
	}
	var buf bytes.Buffer
	parseTemplates()
	err = p.tmpl.ExecuteTemplate(&buf, name, v)
	return buf.Bytes(), err
}

// failPage shows an error in the page's frame, with the API's status.
func (s *Server) failPage(w http.ResponseWriter, r *http.Request, p *page, err error) {
	f := fault.Classify(err)
	var buf bytes.Buffer
	layout().ExecuteTemplate(&buf, "error", view{Page: p, Nav: pages, CanWrite: s.canWrite(r), ReadOnly: s.opt.ReadOnly, Data: f})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.send(w, Status(f), buf.Bytes())
}

// TasksData is the Tasks view.
type TasksData struct {
	Columns  []Column
	Label    string
	Priority string
	Text     string
	All      bool   // every card, not cardLimit a column
	AllURL   string // this view with all=1
	Native   bool
}

func loadTasks(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	f := TaskFilter{Label: r.URL.Query().Get("label"), Text: strings.TrimSpace(r.URL.Query().Get("q"))}
	d := TasksData{Label: f.Label, Priority: r.URL.Query().Get("priority"), Text: f.Text}
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	query := r.URL.Query()
	query.Set("all", "1")
	d.All, d.AllURL = all, "/tasks?"+query.Encode()
	if d.Priority != "" {
		n, err := priority(d.Priority)
		if err != nil {
			return nil, err
		}
		f.Priority = &n
	}
	q := wqservice.Open(env)
	d.Native = q.Native()
	st, err := q.Read(ctx, wqservice.Both)
	if err != nil {
		return nil, err
	}
	limit := cardLimit
	if all {
		limit = 0
	}
	d.Columns = Kanban(st, q.Policy, f, env.Now, limit)
	return d, nil
}

// TaskData is one task's page.
type TaskData struct {
	Task    workqueue.DetailJSON
	History workqueue.EntryJSON
}

func loadTask(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	q := wqservice.Open(env)
	out, _, err := q.Show(ctx, []string{r.PathValue("id")})
	if err != nil {
		return nil, err
	}
	h, err := q.Entry(ctx, out[0].ID)
	return TaskData{Task: out[0], History: h}, err
}

// MergeData is the Merge queue view.
type MergeData struct {
	Queue     *mergequeue.State
	Entries   []*mergequeue.Entry // pending ones at their effective positions (aging counted)
	All       bool
	Admin     bool // the viewer may act on anyone's entry
	MayFreeze bool // the viewer may freeze and unfreeze the train
	Order     mergequeue.Order
}

// Aging is why e's effective priority is not its own ("P4→P3 aged 7d"), or "".
func (d MergeData) Aging(e *mergequeue.Entry) string {
	if st, ok := d.Order.Of(e); ok {
		return st.Aging(e.Priority)
	}
	return ""
}

func loadMerge(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	mq := mqservice.Open(env)
	q, err := mq.Queue(ctx)
	if err != nil {
		return nil, err
	}
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	o := mq.Order(q)
	actor, _ := env.Actor(ctx)
	return MergeData{Queue: q, Entries: q.ListedIn(all, o), All: all, Order: o, Admin: slices.Contains(mq.Policy.Admins, actor),
		MayFreeze: mergequeue.MayFreeze(mq.Policy, actor) == nil}, nil
}

// JobsData is the Jobs view.
type JobsData struct {
	Rows  []jobs.Row
	Admin bool
	Depth template.HTML
	Zone  *time.Location
}

func loadJobs(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	q := jobservice.Open(env)
	st, err := q.Read(ctx)
	if err != nil {
		return nil, err
	}
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	actor, _ := env.Actor(ctx)
	stats := st.Stats(q.Policy, env.Now.Add(-24*time.Hour), env.Now)
	return JobsData{Rows: st.List(q.Policy, env.Now, all), Admin: q.Policy.Admin(actor),
		Depth: depthChart(stats.Depth, env.Now.Add(-24*time.Hour), env.Now), Zone: q.Policy.Zone}, nil
}

// PRDData is the PRD queue view: each feature's reconciliation.
type PRDData struct {
	Features []prdqueue.Manifest
	Reports  []prdqueue.Report
}

// PRDItemData is one PRD of one feature run: its manifest entry, gates and
// open questions, as spool prd show says them.
type PRDItemData struct {
	Feature    string
	Item       prdqueue.ManifestItem
	PRD        prdqueue.PRD
	QueueReady bool
}

func loadPRDItem(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	st, err := prdservice.Open(env, env.Store.Repo.WorkTree).Read(ctx)
	if err != nil {
		return nil, err
	}
	it, err := st.FindItem(r.PathValue("prd"), r.PathValue("feature"))
	if err != nil {
		return nil, err
	}
	return PRDItemData{Feature: it.Feature, Item: st.ManifestItem(it), PRD: *st.PRDs[it.PRD], QueueReady: st.QueueReady(it)}, nil
}

func loadPRD(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	st, err := prdservice.Open(env, env.Store.Repo.WorkTree).Read(ctx)
	if err != nil {
		return nil, err
	}
	var d PRDData
	for _, slug := range st.FeatureSlugs() {
		d.Features = append(d.Features, st.Manifest(slug))
		d.Reports = append(d.Reports, st.Report(slug))
	}
	return d, nil
}

// OrchestratorData is the Orchestrator view.
type OrchestratorData struct {
	Status  orchservice.Status
	State   *orchestrator.State
	Enabled bool
	Tail    string // the end of the agent's output
}

// The view shows the last 200 lines of the agent's output, at most 8 KiB.
const tailLines, tailBytes = 200, 8 << 10

func loadOrchestrator(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	o := orchservice.Open(env)
	status, st, err := o.Status(ctx)
	if err != nil {
		return nil, err
	}
	d := OrchestratorData{Status: status, State: st, Enabled: o.Policy.Enabled()}
	if a := st.ActiveTask; a != nil {
		if path, ok := agentOutput(store.RunsDir(env.Store.Repo), a); ok {
			d.Tail = orchservice.Tail(path, tailLines, tailBytes)
		}
	}
	return d, nil
}

// MergeEntryData is the merge entry view: merge show, with the end of each
// attempt's test output.
type MergeEntryData struct {
	mergequeue.Shown
	Attempts []AttemptOutput
}

// AttemptOutput is one attempt's test log and its last lines ("" when this
// clone has none).
type AttemptOutput struct {
	mergequeue.AttemptLog
	Tail string
	Open bool // the latest attempt's output is shown unfolded
}

func loadMergeEntry(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	mq := mqservice.Open(env)
	q, en, err := mq.Entry(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	shown, err := mq.Show(ctx, q, en)
	if err != nil {
		return nil, err
	}
	d := MergeEntryData{Shown: shown}
	runs := store.RunsDir(env.Store.Repo)
	for _, l := range shown.Logs {
		a := AttemptOutput{AttemptLog: l}
		if path, ok := underRuns(runs, l.Path); ok {
			a.Tail = orchservice.Tail(path, tailLines, tailBytes)
		}
		d.Attempts = append(d.Attempts, a)
	}
	if n := len(d.Attempts); n > 0 {
		d.Attempts[n-1].Open = true
	}
	return d, nil
}

// underRuns resolves path's links and reports whether it is a regular file
// inside runs: the board shows no other file, whatever an event names.
func underRuns(runsDir, path string) (string, bool) {
	runs, err := filepath.EvalSymlinks(runsDir)
	if err != nil {
		return "", false
	}
	path, err = filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(runs, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	fi, err := os.Stat(path)
	return path, err == nil && fi.Mode().IsRegular()
}

// agentOutput is the active attempt's output file where spool watch puts
// it, under runs (store.RunsDir): never the path the log names (anyone who
// can push an event could name any file), and only a regular file inside
// runs once links are resolved.
func agentOutput(runsDir string, a *orchestrator.Active) (string, bool) {
	return underRuns(runsDir, orchestrator.LogPath(orchestrator.RunDir(runsDir, a.TaskID), a.Attempt))
}

// ActivityData is the Activity view: the latest events that match.
type ActivityData struct {
	Events  []*eventlog.Event
	Type    string
	Subject string
	Actor   string
	Limit   int
	Whole   bool // read from the whole log (one subject's timeline)
}

// activityLimit is how many events the view lists.
const activityLimit = 200

func (s *Server) loadActivity(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	q := r.URL.Query()
	d := ActivityData{Type: q.Get("type"), Subject: q.Get("subject"), Actor: q.Get("actor"), Limit: activityLimit}
	match := func(e *eventlog.Event) bool {
		return strings.HasPrefix(e.Type, d.Type) && (d.Subject == "" || e.Subject == d.Subject) &&
			(d.Actor == "" || e.Actor == d.Actor)
	}
	if d.Subject == "" {
		d.Events = s.hub.latest(activityLimit, match)
		return d, nil
	}
	// One item's timeline: the whole log, not only what the server keeps.
	d.Whole = true
	var err error
	d.Events, _, err = env.Store.Latest(ctx, d.Subject, activityLimit, match)
	slices.Reverse(d.Events) // newest first
	return d, err
}

// AnalyticsData is the Analytics view.
type AnalyticsData struct {
	Days  int
	Jobs  jobs.Stats
	Queue workqueue.Stats
	Depth template.HTML
	Wait  template.HTML
	Hours template.HTML
}

func loadAnalytics(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	days := 7
	if s := r.URL.Query().Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 366 {
			return nil, badRequest("days must be 1 to 366, got %q", s)
		}
		days = n
	}
	q := jobservice.Open(env)
	st, err := q.Read(ctx)
	if err != nil {
		return nil, err
	}
	since := env.Now.Add(-time.Duration(days) * 24 * time.Hour)
	d := AnalyticsData{Days: days, Jobs: st.Stats(q.Policy, since, env.Now)}
	if d.Queue, err = wqservice.Open(env).Stats(ctx); err != nil {
		return nil, err
	}
	d.Depth = depthChart(d.Jobs.Depth, since, env.Now)
	d.Wait = waitChart(d.Jobs.WaitAll)
	d.Hours = hoursChart(d.Jobs.Hours)
	return d, nil
}

// when is a time as the pages show it; the zero time is "-".
func when(t any) string {
	var tm time.Time
	switch t := t.(type) {
	case time.Time:
		tm = t
	case *time.Time:
		if t != nil {
			tm = *t
		}
	}
	if tm.IsZero() {
		return "-"
	}
	return tm.Local().Format("2006-01-02 15:04:05 MST") // with its zone: the log is UTC, the page local
}

// ago is how long before now t was, roughly.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " from now"
	}
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s" + suffix
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m" + suffix
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h" + suffix
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d" + suffix
}

// subjectLink is where an event's subject is shown: its item's page (the
// subjects are the event catalogue's).
func subjectLink(e *eventlog.Event) string {
	kind, _, _ := strings.Cut(e.Type, ".")
	switch {
	case e.Subject == "":
		return ""
	case kind == "merge":
		if id, ok := strings.CutPrefix(e.Subject, "merge/"); ok {
			return "/merge/" + url.PathEscape(id)
		}
		return "/merge"
	case kind == "prd":
		return "/prd"
	case kind == "orchestrator" && e.Subject == "orchestrator":
		return "/orchestrator"
	case kind == "task" || kind == "queue" || kind == "orchestrator":
		return "/tasks/" + url.PathEscape(e.Subject)
	case kind == "job" && !strings.Contains(e.Subject, "/"):
		return "/jobs/" + url.PathEscape(e.Subject)
	}
	return ""
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// segmentLogBytes is how much of a segment's log its page shows: the end.
const segmentLogBytes = 256 << 10

// handleSegmentLog shows the end of one job segment's output, as text. The
// path is the worker's own (jobservice.OutputDir: a job id spool makes, a
// segment number), never one an event names.
func (s *Server) handleSegmentLog(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		s.fail(w, r, badRequest("segment %q is not a number", r.PathValue("n")))
		return
	}
	s.mu.Lock()
	env, err := s.env(r)
	s.mu.Unlock()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	dir, err := jobservice.OutputDir(store.JobsDir(env.Store.Repo), r.PathValue("id"), n)
	if err != nil {
		s.fail(w, r, fault.NotFound("job", r.PathValue("id")))
		return
	}
	text := orchservice.Tail(dir+".log", math.MaxInt, segmentLogBytes)
	if text == "" {
		if _, err := os.Stat(dir + ".log"); err != nil {
			s.fail(w, r, fault.NotFound("segment log", r.PathValue("id")+"/"+r.PathValue("n")))
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	s.send(w, http.StatusOK, []byte(text+"\n"))
}
