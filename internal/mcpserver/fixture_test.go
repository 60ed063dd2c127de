package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/mcpserver"
	"github.com/spoolhq/spool/internal/store"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// Who acts: the server's actor, and a serve.tokens token's.
const (
	ada      = "ada@example.com"
	bob      = "bob@example.com"
	token    = "tok-0123456789abcdef0123"
	bobToken = "bob-token-0123456789abcdef"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a real spool repository with a server over it. The test
// writes through a store of its own, as another process would; the server
// has its own and catches up from the log.
type fixture struct {
	t    *testing.T
	repo *gittest.Repo
	st   *store.Store
	srv  *mcpserver.Server

	mu    sync.Mutex
	now   time.Time
	warns []string
	wakes chan struct{}
}

func newFixture(t *testing.T, tools ...string) *fixture {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"serve.tokens": []string{board.HashToken(bobToken) + "=" + bob}})
	f := &fixture{t: t, now: t0, wakes: make(chan struct{})}
	f.repo = gittest.New(t, map[string]string{".spool/config.json": string(cfg) + "\n"})
	f.st = f.open()
	srvStore := f.open()
	allowed, err := mcpserver.Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = mcpserver.New(mcpserver.Options{Tools: allowed, Version: "test", Warn: f.warn,
		Env: func() (store.Env, error) {
			return store.Env{Store: srvStore, Now: f.clock(), Warn: f.warn, Actor: func(context.Context) (string, error) { return ada, nil }}, nil
		}})
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
	defer f.mu.Unlock()
	f.warns = append(f.warns, m)
}

// clock moves on by a second a reading: every call is at its own time.
func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(time.Second)
	return f.now
}

// env is what the test's own writes get, as actor.
func (f *fixture) env(actor string) store.Env {
	return store.Env{Store: f.st, Now: f.clock(), Warn: f.warn, Actor: func(context.Context) (string, error) { return actor, nil }}
}

// connect opens a client session on the server over an in-memory
// transport; opt may take notifications.
func (f *fixture) connect(srv *mcp.Server, opt *mcp.ClientOptions, mw ...mcp.Middleware) *mcp.ClientSession {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opt)
	client.AddReceivingMiddleware(mw...)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
	})
	return cs
}

// follow runs the server's Follow until the test ends, on a wakes channel
// the test holds: wake hands it one wake and returns once it was taken.
func (f *fixture) follow() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Follow(ctx, f.wakes) }()
	select { // what the test appends next is news, not the log Follow starts from
	case <-f.srv.Following():
	case <-time.After(10 * time.Second):
		f.t.Fatal("Follow did not read the log in 10 s")
	}
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("Follow: %v", err)
		}
	})
}

func (f *fixture) wake() {
	f.t.Helper()
	select {
	case f.wakes <- struct{}{}:
	case <-time.After(10 * time.Second):
		f.t.Fatal("Follow took no wake in 10 s")
	}
}

// result is a tool call's outcome: the structured content, decoded.
type result struct {
	IsError bool
	Text    string
	Body    map[string]any
	Raw     json.RawMessage
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r result
	r.IsError = res.IsError
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.Text += tc.Text + "\n"
		}
	}
	r.Raw, _ = json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(r.Raw, &r.Body); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, r.Raw, err)
	}
	return r
}

// ok is call of a tool that must succeed.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args any) result {
	t.Helper()
	r := call(t, cs, name, args)
	if r.IsError {
		t.Fatalf("%s %v: %s", name, args, r.Raw)
	}
	return r
}

// code is the spool error code of a call that must fail.
func code(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	r := call(t, cs, name, args)
	if !r.IsError {
		t.Fatalf("%s %v succeeded: %s", name, args, r.Raw)
	}
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	if c == "" || !strings.HasPrefix(r.Text, c+": ") {
		t.Fatalf("%s: an error without spool's code: %s (%q)", name, r.Raw, r.Text)
	}
	return c
}

// events is the log as it is, in order.
func (f *fixture) events() []*eventlog.Event {
	f.t.Helper()
	rd, err := f.st.Log.Read(map[string]eventlog.Start{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer rd.Close()
	var out []*eventlog.Event
	for {
		ev, _, err := rd.Next()
		if err != nil {
			break
		}
		out = append(out, ev)
	}
	return out
}

// toolNames lists a session's tools.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// wqOpen is the work queue as the test's own writes see it, as actor.
func wqOpen(f *fixture, actor string) *wqservice.Service { return wqservice.Open(f.env(actor)) }

// list is a call's answer that is a list: {"result": [...]}.
func list(t *testing.T, r result) []any {
	t.Helper()
	l, ok := r.Body["result"].([]any)
	if !ok {
		t.Fatalf("not a list: %s", r.Raw)
	}
	return l
}
