package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/mcpserver"
	"github.com/spoolhq/spool/internal/workqueue"
)

// withHeader adds a header to every request a client sends.
type withHeader struct {
	key, value string
	rt         http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return h.rt.RoundTrip(r)
}

// serveHTTP serves f's server under opt on 127.0.0.1 until the test ends.
func serveHTTP(t *testing.T, f *fixture, opt mcpserver.HTTPOptions) *httptest.Server {
	ts := httptest.NewServer(f.srv.HTTPHandler(opt)) // 127.0.0.1
	t.Cleanup(ts.Close)
	return ts
}

// dial opens a session over streamable HTTP with token ("" for none).
func dial(t *testing.T, ts *httptest.Server, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := ts.Client()
	if token != "" {
		client = &http.Client{Transport: withHeader{"Authorization", "Bearer " + token, ts.Client().Transport}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: client, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// post sends one JSON-RPC message as a raw request and returns the status
// and spool's error code, if any.
func post(t *testing.T, ts *httptest.Server, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var e struct{ Error struct{ Code string } }
	json.Unmarshal(body, &e)
	return res.StatusCode, e.Error.Code
}

// Over HTTP, the board's token rules: on loopback a client without a
// token reads (the read tools only); the start's token has every tool and
// acts as the server's actor, a serve.tokens token as its own; a wrong
// token, another host or a web page is refused, and a session answers
// only to the token that opened it.
func TestHTTPTokenRules(t *testing.T) {
	f := newFixture(t)
	actors, err := board.ParseTokens([]string{board.HashToken(bobToken) + "=" + bob})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(t, f, mcpserver.HTTPOptions{Token: token, Actors: actors})

	anon, err := dial(t, ts, "")
	if err != nil {
		t.Fatal(err)
	}
	read := slices.Clone(mcpserver.Sets["read"])
	slices.Sort(read)
	if got := toolNames(t, anon); !slices.Equal(got, read) {
		t.Errorf("without a token: %v, want the read tools %v", got, read)
	}
	if res, err := anon.CallTool(context.Background(), &mcp.CallToolParams{Name: "create", Arguments: map[string]any{"title": "x"}}); err == nil && !res.IsError {
		t.Error("a write without a token went through")
	}

	own, err := dial(t, ts, token)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, own); len(got) != len(mcpserver.ToolNames()) {
		t.Errorf("with the start's token: %v", got)
	}
	if c := ok(t, own, "create", map[string]any{"title": "mine"}); c.Body["created_by"] != ada {
		t.Errorf("the start's token acts as %v, want %s", c.Body["created_by"], ada)
	}
	bobs, err := dial(t, ts, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	if c := ok(t, bobs, "create", map[string]any{"title": "bob's"}); c.Body["created_by"] != bob {
		t.Errorf("bob's token acts as %v, want %s", c.Body["created_by"], bob)
	}
	if _, err := dial(t, ts, "not-a-token-0123456789"); err == nil {
		t.Error("a wrong token opened a session")
	}

	for _, c := range []struct {
		header map[string]string
		status int
		code   string
	}{
		{map[string]string{"Authorization": "Bearer nope-0123456789abcdef"}, 401, "token_required"},
		{map[string]string{"Host": "evil.example:80"}, 403, "host_refused"},
		{map[string]string{"Origin": "http://evil.example"}, 403, "origin_refused"},
		{map[string]string{"Sec-Fetch-Site": "cross-site", "Authorization": "Bearer " + token}, 403, "origin_refused"},
		// A session bob opened, presented with the start's token (or none).
		{map[string]string{"Mcp-Session-Id": bobs.ID(), "Authorization": "Bearer " + token}, 401, "token_required"},
		{map[string]string{"Mcp-Session-Id": bobs.ID()}, 401, "token_required"},
	} {
		if status, code := post(t, ts, c.header); status != c.status || code != c.code {
			t.Errorf("%v: %d %s, want %d %s", c.header, status, code, c.status, c.code)
		}
	}
}

// Private (an address off loopback, an agent's server): nothing without
// the token, not even a read.
func TestHTTPPrivate(t *testing.T) {
	f := newFixture(t, "agent")
	ts := serveHTTP(t, f, mcpserver.HTTPOptions{Private: true, Token: token})
	if _, err := dial(t, ts, ""); err == nil {
		t.Error("a session without the token")
	}
	if status, code := post(t, ts, nil); status != 401 || code != "token_required" {
		t.Errorf("a request without the token: %d %s", status, code)
	}
	cs, err := dial(t, ts, token)
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := mcpserver.Resolve([]string{"agent"})
	slices.Sort(agent)
	if got := toolNames(t, cs); !slices.Equal(got, agent) {
		t.Errorf("tools: %v, want %v", got, agent)
	}
}

// Over HTTP too, a subscriber hears of a change; a client that goes away
// without unsubscribing is forgotten, so that the ready queue is no longer
// read for nobody.
func TestHTTPSubscriptions(t *testing.T) {
	f := newFixture(t)
	ts := serveHTTP(t, f, mcpserver.HTTPOptions{})
	ctx := context.Background()
	task, err := wqOpen(f, bob).Add(ctx, workqueue.NewTask{Title: "watched", Priority: 2, Type: "task"})
	if err != nil {
		t.Fatal(err)
	}
	f.follow()
	updated := make(chan string, 100)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: ts.Client(), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, uri := range []string{"spool://ready", "spool://task/" + task.ID} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.ReadySubscribers() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.srv.ReadySubscribers(); n != 1 {
		t.Fatalf("%d subscribers to spool://ready after one subscribed", n)
	}
	if _, _, err := wqOpen(f, bob).Next(ctx, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	f.wake()
	got := map[string]bool{}
	for timeout := time.After(10 * time.Second); !got["spool://task/"+task.ID] || !got["spool://ready"]; {
		select {
		case uri := <-updated:
			got[uri] = true
		case <-timeout:
			t.Fatalf("over HTTP heard %v after a claim", got)
		}
	}
	cs.Close() // no unsubscribe: the client just goes
	for f.srv.ReadySubscribers() != 0 && time.Now().Before(deadline.Add(10*time.Second)) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.srv.ReadySubscribers(); n != 0 {
		t.Fatalf("%d subscribers to spool://ready after its only client went", n)
	}
}
