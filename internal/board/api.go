package board

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	"github.com/spoolhq/spool/internal/prdqueue"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// call is an API endpoint: what it answers with, in the CLI's --json shape
// (rawJSON when it is encoded already), or the error.
type call func(ctx context.Context, env store.Env, r *http.Request) (any, error)

// rawJSON is an answer that is JSON already.
type rawJSON []byte

// apiReads are the GET endpoints under /api/, each the JSON of a command.
var apiReads = map[string]call{
	"tasks":               apiTasks,       // task list --json
	"tasks/{id}":          apiTask,        // task show ID --json
	"ready":               apiReady,       // ready --json
	"history":             apiHistory,     // history --json
	"stats":               apiStats,       // stats --json
	"merge":               apiMerge,       // merge list --json
	"merge/{id}":          apiMergeEntry,  // merge show ID --json
	"jobs":                apiJobs,        // job list --json
	"jobs/stats":          apiJobStats,    // job stats --json
	"jobs/{id}":           apiJob,         // job show ID --json
	"prd":                 apiPRD,         // prd list --json
	"prd/report":          apiPRDReport,   // prd report --json
	"orchestrator/status": apiBuildStatus, // orchestrator status --json
}

// apiWrites are the POST endpoints: each runs the command of the same name.
var apiWrites = map[string]call{
	"tasks/{id}/unblock": func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		reset, err := boolParam(r, "reset_attempts")
		if err != nil {
			return nil, err
		}
		return wqservice.Open(env).Unblock(ctx, r.PathValue("id"), reset)
	},
	"tasks/{id}/retry": func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		return wqservice.Open(env).Retry(ctx, r.PathValue("id"))
	},
	"jobs/{id}/move": func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		var m jobs.Move
		var err error
		m.Before, m.After = param(r, "before"), param(r, "after")
		if m.Top, err = boolParam(r, "top"); err != nil {
			return nil, err
		}
		if m.Bottom, err = boolParam(r, "bottom"); err != nil {
			return nil, err
		}
		return jobservice.Open(env).Move(ctx, r.PathValue("id"), m)
	},
	"jobs/{id}/cancel": jobChange((*jobservice.Service).Cancel),
	"jobs/{id}/pause":  jobChange((*jobservice.Service).Pause),
	"jobs/{id}/resume": jobChange((*jobservice.Service).Resume),
	"jobs/{id}/retry":  jobChange((*jobservice.Service).Retry),
	"merge/{id}/cancel": func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		return placed(env)(mqservice.Open(env).Cancel(ctx, r.PathValue("id"), param(r, "reason")))
	},
	"merge/{id}/retry": func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		return placed(env)(mqservice.Open(env).Retry(ctx, r.PathValue("id")))
	},
	"merge/freeze":   mergeFreeze(true),
	"merge/unfreeze": mergeFreeze(false),
	// The breaker's pause only: the orchestrator has no start or pause a
	// person uses, so ready work never waits for one.
	"orchestrator/resume": func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		o := orchservice.Open(env)
		if _, err := o.Resume(ctx); err != nil {
			return nil, err
		}
		status, _, err := o.Status(ctx)
		return status, err
	},
}

// mergeFreeze is merge freeze (on) or unfreeze: the queue as merge list
// --json shows it.
func mergeFreeze(on bool) call {
	return func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		mq := mqservice.Open(env)
		q, _, err := mq.Freeze(ctx, on, param(r, "reason"))
		if err != nil {
			return nil, err
		}
		o := mq.Order(q)
		return rawJSON(q.ListJSONIn(q.ListedIn(false, o), o)), nil
	}
}

func jobChange(do func(*jobservice.Service, context.Context, string) (*jobs.Job, error)) call {
	return func(ctx context.Context, env store.Env, r *http.Request) (any, error) {
		return do(jobservice.Open(env), ctx, r.PathValue("id"))
	}
}

// placed is where a changed entry stands, aging counted, at env's time.
func placed(env store.Env) func(q *mergequeue.State, en *mergequeue.Entry, err error) (any, error) {
	return func(q *mergequeue.State, en *mergequeue.Entry, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return q.PlacedIn(en, mqservice.Open(env).Order(q)), nil
	}
}

func apiTasks(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	f := workqueue.ListFilter{Status: param(r, "status"), Label: param(r, "label")}
	switch f.Status {
	case "", workqueue.StatusOpen, workqueue.StatusInProgress, workqueue.StatusDeferred, workqueue.StatusClosed:
	default:
		return nil, badRequest("status must be open, in_progress, deferred or closed, got %q", f.Status)
	}
	if f.Label != "" {
		if err := workqueue.ValidateLabel(f.Label); err != nil {
			return nil, err
		}
	}
	if p := param(r, "priority"); p != "" {
		n, err := priority(p)
		if err != nil {
			return nil, err
		}
		f.Priority = &n
	}
	return wqservice.Open(env).ListItems(ctx, f)
}

// priority parses a priority as the CLI's -p takes it.
func priority(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fault.New(fault.CodeInvalidPriority, nil, fmt.Sprintf("priority must be 0 (most urgent) to 4, got %q", s), "priority", s)
	}
	return n, workqueue.ValidatePriority(n)
}

func apiTask(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	out, _, err := wqservice.Open(env).Show(ctx, []string{r.PathValue("id")})
	return out, err
}

func apiReady(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	limit := 10
	if n := param(r, "n"); n != "" {
		var err error
		if limit, err = strconv.Atoi(n); err != nil || limit < 0 {
			return nil, badRequest("n must be a whole number, 0 for all, got %q", n)
		}
	}
	f := workqueue.ReadyFilter{All: r.URL.Query()["label"], Any: r.URL.Query()["label_any"]}
	for _, l := range append(f.All[:len(f.All):len(f.All)], f.Any...) {
		if err := workqueue.ValidateLabel(l); err != nil {
			return nil, err
		}
	}
	q := wqservice.Open(env)
	tasks, st, err := q.Ready(ctx, f, limit)
	if err != nil {
		return nil, err
	}
	out := make([]workqueue.TaskJSON, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, st.View(t, q.Policy, q.Now))
	}
	return out, nil
}

func apiHistory(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	return wqservice.Open(env).Histories(ctx)
}

func apiStats(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	return wqservice.Open(env).Stats(ctx)
}

func apiMerge(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	q, err := mqservice.Open(env).Queue(ctx)
	if err != nil {
		return nil, err
	}
	o := mqservice.Open(env).Order(q)
	return rawJSON(q.ListJSONIn(q.ListedIn(all, o), o)), nil
}

func apiMergeEntry(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	mq := mqservice.Open(env)
	q, en, err := mq.Entry(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return mq.Show(ctx, q, en)
}

func apiJobs(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	q := jobservice.Open(env)
	st, err := q.Read(ctx)
	if err != nil {
		return nil, err
	}
	rows := st.List(q.Policy, env.Now, all)
	if rows == nil {
		rows = []jobs.Row{}
	}
	return rows, nil
}

func apiJob(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	st, err := jobservice.Open(env).Read(ctx)
	if err != nil {
		return nil, err
	}
	return st.Job(r.PathValue("id"))
}

func apiJobStats(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	q := jobservice.Open(env)
	since, err := jobs.ParseSince(cmp.Or(param(r, "since"), "7d"), env.Now)
	if err != nil {
		return nil, err
	}
	st, err := q.Read(ctx)
	if err != nil {
		return nil, err
	}
	return st.Stats(q.Policy, since, env.Now), nil
}

func apiPRD(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	feature := param(r, "feature")
	st, err := prdservice.Open(env, env.Store.Repo.WorkTree).ReadFeature(ctx, feature)
	if err != nil {
		return nil, err
	}
	out := []prdqueue.Manifest{}
	for _, slug := range st.FeatureSlugs() {
		if feature == "" || slug == feature {
			out = append(out, st.Manifest(slug))
		}
	}
	return out, nil
}

func apiPRDReport(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	st, err := prdservice.Open(env, env.Store.Repo.WorkTree).ReadFeature(ctx, param(r, "feature"))
	if err != nil {
		return nil, err
	}
	return st.Report(param(r, "feature")), nil
}

func apiBuildStatus(ctx context.Context, env store.Env, r *http.Request) (any, error) {
	status, _, err := orchservice.Open(env).Status(ctx)
	return status, err
}

// api serves a call: the store to itself, the token's actor, JSON out.
func (s *Server) api(fn call) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if err := parseBody(w, r); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		body, err := s.answer(r, fn)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		s.send(w, http.StatusOK, body)
	})
}

// answer runs a call with the store to itself and encodes what it returns
// before letting the store go: the values may be the store's own, which
// the next request catches up in place.
func (s *Server) answer(r *http.Request, fn call) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.env(r)
	if err != nil {
		return nil, err
	}
	v, err := fn(r.Context(), env, r)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if raw, ok := v.(rawJSON); ok {
		// merge list --json's shape has a row a line, for a terminal; the
		// API answers compact JSON, a line ending it, as every endpoint.
		if err := json.Compact(&buf, raw); err != nil {
			return nil, err
		}
		buf.WriteByte('\n')
		return buf.Bytes(), nil
	}
	err = writeJSON(&buf, v)
	return buf.Bytes(), err
}

// env is a request's store.Env: a fresh clock and, for a token of
// serve.tokens, that token's actor.
func (s *Server) env(r *http.Request) (store.Env, error) {
	env, err := s.opt.Env()
	if err != nil {
		return env, err
	}
	if actor, _ := r.Context().Value(actorKey{}).(string); actor != "" {
		env.Actor = func(context.Context) (string, error) { return actor, nil }
	}
	return env, nil
}

// fail answers with the error as the CLI's --json prints it and the HTTP
// status of its kind.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	f := fault.Classify(err)
	var buf bytes.Buffer
	writeJSON(&buf, map[string]any{"error": f.Object()})
	w.Header().Set("Content-Type", "application/json")
	s.send(w, Status(f), buf.Bytes())
}

// Status is the HTTP status of an error: its kind's (usage 400, rejected
// 409, environment 503, unexpected 500), with 404 for what does not exist,
// 403 for what the actor may not do, 401 for a missing token, 413 for a
// body over the limit and 503 for no_actor (the server's setup).
func Status(f *fault.Error) int {
	switch f.Code {
	case fault.CodeNotFound.Name, mergequeue.CodeEntryNotFound.Name, mergequeue.CodeSessionNotFound.Name:
		return http.StatusNotFound
	case fault.CodeUnauthorized.Name, mergequeue.CodeUnauthorizedWorkspace.Name, mergequeue.CodeUnauthorizedEntryModified.Name,
		CodeReadOnly.Name, CodeOriginRefused.Name, CodeHostRefused.Name:
		return http.StatusForbidden
	case CodeTokenRequired.Name:
		return http.StatusUnauthorized
	case CodeBodyTooLarge.Name:
		return http.StatusRequestEntityTooLarge
	case fault.CodeNoActor.Name: // the serving process has no actor: its setup, not the request
		return http.StatusServiceUnavailable
	}
	switch f.Kind {
	case fault.Usage:
		return http.StatusBadRequest
	case fault.Rejected:
		return http.StatusConflict
	case fault.Environment:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeJSON sends v as compact JSON: the CLI's shapes without its
// indentation, which costs a large list a third of its time.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// maxBody is the most a write's body may carry: its parameters are a few
// short strings.
const maxBody = 1 << 20

// parseBody reads a JSON body into the request's form values, so that a
// parameter can come as JSON, as a form or in the query. A body over
// maxBody is refused whole: cut at the limit it would read as broken JSON
// (or a short form), which says nothing of why.
func parseBody(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		if err := r.ParseForm(); err != nil {
			return bodyError(err, "cannot read the form: ")
		}
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyError(err, "cannot read the body: ")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return fault.New(CodeBadRequest, err, "the body is not a JSON object: "+err.Error())
	}
	r.Form = map[string][]string{}
	for k, v := range r.URL.Query() {
		r.Form[k] = v
	}
	for k, v := range m {
		switch v := v.(type) {
		case string:
			r.Form.Set(k, v)
		case bool, float64:
			r.Form.Set(k, fmt.Sprint(v))
		default:
			return fault.New(CodeBadRequest, nil, fmt.Sprintf("%s: want a string, a number or true/false", k), "field", k)
		}
	}
	return nil
}

// bodyError is why a body could not be read: over maxBody (body_too_large,
// HTTP 413), or what the reader said.
func bodyError(err error, what string) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fault.New(CodeBodyTooLarge, err, fmt.Sprintf("the request body is over the limit of %d bytes (1 MiB)", tooLarge.Limit), "limit", tooLarge.Limit)
	}
	return fault.New(CodeBadRequest, err, what+err.Error())
}

// param is a request's parameter: JSON body, form or query.
func param(r *http.Request, name string) string {
	if r.Form != nil {
		return r.Form.Get(name)
	}
	return r.URL.Query().Get(name)
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := param(r, name)
	switch v {
	case "", "false", "0", "off":
		return false, nil
	case "true", "1", "on":
		return true, nil
	}
	return false, fault.New(CodeBadRequest, nil, fmt.Sprintf("%s must be true or false, got %q", name, v), "field", name)
}
