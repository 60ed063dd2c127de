package board_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// Who acts: the serving process, and the people of serve.tokens.
const (
	alice = "alice@example.com" // the process's own actor (the start's token)
	bob   = "bob@example.com"   // a serve.tokens token, no admin
	boss  = "boss@example.com"  // a serve.tokens token, scheduler.admins

	token     = "tok-0123456789abcdef0123" // the start's token
	loginCode = "code-0123456789abcdef"    // the one-time login code
	bobToken  = "bob-token-0123456789abcdef"
	bossToken = "boss-token-0123456789abcdef"
)

// t0 is the fixture's clock at the start; every write through the fixture
// moves it on by a second.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a real spool repository (git init, .spool/ committed) with a
// board serving it. The fixture writes through its own store, as a CLI
// command in another process would; the board has a store of its own and
// catches up from the log.
type fixture struct {
	t    *testing.T
	repo *gittest.Repo
	st   *store.Store // the fixture's: setup writes and reading the log
	srv  *board.Server
	opt  board.Options

	mu    sync.Mutex
	now   time.Time
	warns []string
}

// config is the fixture's .spool/config.json: an admin, two serve.tokens,
// and abandonment after three attempts.
func fixtureConfig() string {
	cfg := map[string]any{
		"admins":               []string{boss},
		"serve.tokens":         []string{board.HashToken(bobToken) + "=" + bob, strings.ToUpper(board.HashToken(bossToken)) + " = " + boss},
		"backoff.max_failures": 3,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return string(b) + "\n"
}

// newFixture makes the repository and the server; change adjusts the
// server's options (ReadOnly, Private) before it is made.
func newFixture(t *testing.T, change ...func(*board.Options)) *fixture {
	t.Helper()
	repo := gittest.New(t, map[string]string{
		".spool/config.json": fixtureConfig(),
	})
	f := &fixture{t: t, repo: repo, now: t0}
	f.st = f.open()
	srvStore := f.open()
	actors, err := board.ParseTokens(srvStore.Config.Strings("serve.tokens"))
	if err != nil {
		t.Fatal(err)
	}
	if len(actors) != 2 {
		t.Fatalf("serve.tokens: %v", actors)
	}
	f.opt = board.Options{
		Env: func() (store.Env, error) {
			return store.Env{Store: srvStore, Now: f.clock(), Warn: f.warn,
				Actor: func(context.Context) (string, error) { return alice, nil }}, nil
		},
		Token: token, Login: loginCode, Actors: actors, Warn: f.warn,
	}
	for _, c := range change {
		c(&f.opt)
	}
	f.srv = board.New(f.opt)
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, w := range f.warns {
			t.Logf("warning: %s", w)
		}
	})
	return f
}

func (f *fixture) open() *store.Store {
	f.t.Helper()
	st, err := store.Open(context.Background(), f.repo.Root, f.warn)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) warn(m string) {
	f.mu.Lock()
	f.warns = append(f.warns, m)
	f.mu.Unlock()
}

// clock is the fixture's time now.
func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// advance moves the clock on.
func (f *fixture) advance(d time.Duration) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	return f.now
}

// env is a service's env on the fixture's store as actor, a second later.
func (f *fixture) env(actor string) store.Env {
	return store.Env{Store: f.st, Now: f.advance(time.Second), Warn: f.warn,
		Actor: func(context.Context) (string, error) { return actor, nil }}
}

// readEnv is an env at the current time, for reading what the board reads.
func (f *fixture) readEnv() store.Env {
	return store.Env{Store: f.st, Now: f.clock(), Warn: f.warn,
		Actor: func(context.Context) (string, error) { return alice, nil }}
}

func (f *fixture) wq(actor string) *wqservice.Service { return wqservice.Open(f.env(actor)) }

// add adds a task and returns its id.
func (f *fixture) add(n workqueue.NewTask) string {
	f.t.Helper()
	if n.Type == "" {
		n.Type = "task"
	}
	task, err := f.wq(alice).Add(context.Background(), n)
	if err != nil {
		f.t.Fatalf("add %q: %v", n.Title, err)
	}
	return task.ID
}

// claim claims the task carrying label (each test task that is claimed has
// a label of its own) for worker.
func (f *fixture) claim(label, worker string) string {
	f.t.Helper()
	c, _, err := f.wq(alice).Next(context.Background(), []string{label}, nil, worker)
	if err != nil || c == nil {
		f.t.Fatalf("next --label %s: %v, %v", label, c, err)
	}
	return c.ID
}

func (f *fixture) fail(id, msg string) {
	f.t.Helper()
	if _, err := f.wq(alice).Fail(context.Background(), id, msg); err != nil {
		f.t.Fatalf("fail %s: %v", id, err)
	}
}

func (f *fixture) block(id, reason string) {
	f.t.Helper()
	if _, err := f.wq(alice).Block(context.Background(), id, reason); err != nil {
		f.t.Fatalf("block %s: %v", id, err)
	}
}

func (f *fixture) closeTask(id string) {
	f.t.Helper()
	if _, err := f.wq(alice).Close(context.Background(), []string{id}, "done", false); err != nil {
		f.t.Fatalf("close %s: %v", id, err)
	}
}

func (f *fixture) dep(id, blocker string) {
	f.t.Helper()
	if _, _, err := f.wq(alice).AddDep(context.Background(), id, blocker); err != nil {
		f.t.Fatalf("dep %s on %s: %v", id, blocker, err)
	}
}

// submitJob submits a job as actor.
func (f *fixture) submitJob(actor, name string) string {
	f.t.Helper()
	out, err := jobservice.Open(f.env(actor)).Submit(context.Background(), jobs.Submit{Name: name, Argv: []string{"echo", name}})
	if err != nil {
		f.t.Fatalf("job submit %s: %v", name, err)
	}
	return out.ID
}

// submitMerge adds a worktree on a branch of its own with one commit and
// queues it (no push), as actor.
func (f *fixture) submitMerge(name, actor string) *mqservice.Response {
	f.t.Helper()
	f.repo.Worktree(name, name+".txt", name+"\n")
	resp, err := mqservice.Open(f.env(actor)).Submit(context.Background(), mqservice.SubmitOptions{Workspace: name, NoPush: true})
	if err != nil {
		f.t.Fatalf("merge submit %s: %v", name, err)
	}
	return resp
}

// events is the whole log, in replay order.
func (f *fixture) events() []*eventlog.Event {
	f.t.Helper()
	rd, err := f.st.Log.Read(nil)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rd.Close()
	var out []*eventlog.Event
	for {
		ev, _, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, ev)
	}
}

// appended runs do and returns the events it appended.
func (f *fixture) appended(do func()) []*eventlog.Event {
	f.t.Helper()
	before := len(f.events())
	do()
	return f.events()[before:]
}

// request is one request to the board.
type request struct {
	method string
	path   string
	body   string
	ctype  string // Content-Type; "application/json" when body starts with { and none is given
	header map[string]string
	token  string // sent as Authorization: Bearer
	host   string // the Host header; "" is 127.0.0.1:7070
}

type response struct {
	code   int
	header http.Header
	body   string
}

func (f *fixture) do(rq request) response {
	f.t.Helper()
	if rq.method == "" {
		rq.method = http.MethodGet
	}
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	r := httptest.NewRequest(rq.method, "http://127.0.0.1:7070"+rq.path, body)
	if rq.ctype == "" && strings.HasPrefix(rq.body, "{") {
		rq.ctype = "application/json"
	}
	if rq.ctype != "" {
		r.Header.Set("Content-Type", rq.ctype)
	}
	if rq.token != "" {
		r.Header.Set("Authorization", "Bearer "+rq.token)
	}
	if rq.host != "" {
		r.Host = rq.host
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	return response{code: w.Code, header: w.Result().Header, body: w.Body.String()}
}

func (f *fixture) get(path string) response { return f.do(request{path: path}) }

// post is a write as the start's token, as a script sends it.
func (f *fixture) post(path, body string) response {
	return f.do(request{method: http.MethodPost, path: path, body: body, token: token})
}

// wantStatus checks the status and that an API answer is JSON.
func wantStatus(t *testing.T, r response, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body:\n%s", r.code, code, r.body)
	}
}

// wantError checks an API error: the status and {"error":{"code":…,"message":…}}.
func wantError(t *testing.T, r response, status int, code string) map[string]any {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var body struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("error body is not JSON: %v\n%s", err, r.body)
	}
	if body.Error["code"] != code {
		t.Fatalf("error code %v, want %s; body:\n%s", body.Error["code"], code, r.body)
	}
	if msg, _ := body.Error["message"].(string); msg == "" {
		t.Fatalf("error without a message: %s", r.body)
	}
	return body.Error
}

// decode decodes an answer's JSON into v.
func decode(t *testing.T, r response, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.body)
	}
}

// sameJSON compares an answer with what the services return, as JSON.
func sameJSON(t *testing.T, what string, got string, want any) {
	t.Helper()
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", what, err, got)
	}
	json.Unmarshal(b, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, compact(got), b)
	}
}

func compact(s string) string {
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(s)) != nil {
		return s
	}
	return buf.String()
}

// follow runs the board's Follow until the test ends, on a wakes channel
// the test holds. The returned caughtUp returns once Follow has read (and
// sent to the streams) everything appended before it was called: the
// second of two wakes is taken only after the first was handled. Follow
// handles that second wake after caughtUp returned: what is appended then
// may be read in that pass or the next.
func (f *fixture) follow() (caughtUp func()) {
	ctx, cancel := context.WithCancel(context.Background())
	wakes := make(chan struct{})
	stopped := make(chan struct{})
	var ferr error
	go func() {
		defer close(stopped)
		ferr = f.srv.Follow(ctx, wakes)
	}()
	f.t.Cleanup(func() {
		cancel()
		<-stopped
	})
	wake := func() {
		f.t.Helper()
		select {
		case wakes <- struct{}{}:
		case <-stopped:
			f.t.Fatalf("Follow returned: %v", ferr)
		case <-time.After(10 * time.Second):
			f.t.Fatal("Follow takes no wakes")
		}
	}
	return func() {
		f.t.Helper()
		wake()
		wake()
	}
}
