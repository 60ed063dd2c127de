package board_test

import (
	"context"
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/projections"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/workqueue"
)

// unblockFlaky is a write that succeeds with a valid token: flaky is
// blocked (again) first.
func unblockFlaky(f *fixture, s seed) request {
	f.ensureBlocked(s.flaky)
	return request{method: http.MethodPost, path: "/api/tasks/" + s.flaky + "/unblock"}
}

// ensureBlocked blocks id unless it is blocked.
func (f *fixture) ensureBlocked(id string) {
	f.t.Helper()
	h, err := f.wq(alice).Entry(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	if h.Status != workqueue.HistBlocked {
		f.block(id, "blocked for the test")
	}
}

// refusedWrite checks that r is refused with status and code, and appends nothing.
func refusedWrite(t *testing.T, f *fixture, r request, status int, code string) {
	t.Helper()
	var got response
	if evs := f.appended(func() { got = f.do(r) }); len(evs) != 0 {
		t.Fatalf("%s %s: refused (%d) but appended %v", r.method, r.path, got.code, evs)
	}
	wantError(t, got, status, code)
}

// acceptedWrite checks that r appends one event, by actor.
func acceptedWrite(t *testing.T, f *fixture, r request, actor string) {
	t.Helper()
	var got response
	evs := f.appended(func() { got = f.do(r) })
	wantStatus(t, got, http.StatusOK)
	if len(evs) != 1 || evs[0].Actor != actor {
		t.Fatalf("%s %s appended %v, want one event by %s", r.method, r.path, evs, actor)
	}
}

func TestWriteNeedsAValidToken(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	path := "/api/tasks/" + s.flaky + "/unblock"

	refusedWrite(t, f, request{method: "POST", path: path}, http.StatusUnauthorized, "token_required")
	refusedWrite(t, f, request{method: "POST", path: path, token: "wrong-token"}, http.StatusUnauthorized, "token_required")
	refusedWrite(t, f, request{method: "POST", path: path, token: token + "x"}, http.StatusUnauthorized, "token_required")
	refusedWrite(t, f, request{method: "POST", path: path, header: map[string]string{"Authorization": token}}, http.StatusUnauthorized, "token_required")
	refusedWrite(t, f, request{method: "POST", path: path, header: map[string]string{"Authorization": "Basic " + token}}, http.StatusUnauthorized, "token_required")
	refusedWrite(t, f, request{method: "POST", path: path, header: map[string]string{"Cookie": "spool_token_7070=nope"}}, http.StatusUnauthorized, "token_required")
	// Another board's cookie (another port on this host) is not this one's.
	refusedWrite(t, f, request{method: "POST", path: path, header: map[string]string{"Cookie": "spool_token_7071=" + token}}, http.StatusUnauthorized, "token_required")
	// A token's hash is what serve.tokens holds, not a token.
	refusedWrite(t, f, request{method: "POST", path: path, token: board.HashToken(bobToken)}, http.StatusUnauthorized, "token_required")
	// GETs stay open on loopback.
	wantStatus(t, f.get("/api/tasks"), http.StatusOK)

	// The bearer token works, as the serving process's actor.
	acceptedWrite(t, f, request{method: "POST", path: path, token: token}, alice)
	// A token of serve.tokens acts as its actor, not as the process.
	f.ensureBlocked(s.flaky)
	acceptedWrite(t, f, request{method: "POST", path: path, token: bobToken}, bob)
	f.ensureBlocked(s.flaky)
	acceptedWrite(t, f, request{method: "POST", path: path, token: bossToken}, boss)

	// No cookie writes: browsers send a host's cookies to every port on it,
	// so any other local server the browser visits has them. Not the read
	// cookie, not its value as a token, not a cookie holding the token.
	f.ensureBlocked(s.flaky)
	read := readCookie(f, token)
	refusedWrite(t, f, request{method: "POST", path: path, header: map[string]string{"Cookie": read}}, http.StatusUnauthorized, "token_required")
	refusedWrite(t, f, request{method: "POST", path: path, token: read[strings.IndexByte(read, '=')+1:]}, http.StatusUnauthorized, "token_required")
	for _, name := range []string{"spool_token_7070", "spool_read_7070", "spool_token"} {
		refusedWrite(t, f, request{method: "POST", path: path, header: map[string]string{"Cookie": name + "=" + token}}, http.StatusUnauthorized, "token_required")
	}
}

// readCookie logs in with tok and returns the read cookie it sets, as a
// Cookie header's value.
func readCookie(f *fixture, tok string) string {
	f.t.Helper()
	res := login(f, "token="+url.QueryEscape(tok))
	if res.StatusCode != http.StatusOK || len(res.Cookies()) != 1 {
		f.t.Fatalf("login?token=: %d %v", res.StatusCode, res.Cookies())
	}
	return res.Cookies()[0].Name + "=" + res.Cookies()[0].Value
}

// login does GET /login?query and returns the answer.
func login(f *fixture, query string) *http.Response {
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7070/login?"+query, nil)
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	return w.Result()
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	s := f.seed()

	// A wrong code gets nothing, and does not use up the right one.
	if res := login(f, "code=wrong"); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Fatalf("wrong code: %d %v", res.StatusCode, res.Cookies())
	}
	// The right one gets the read cookie and a page that hands the token to
	// the board's script, never stored on the way.
	res := login(f, "code="+loginCode)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(string(body), `<meta name="spool-token" content="`+token+`">`) {
		t.Fatalf("login: %d %q\n%s", res.StatusCode, res.Header, body)
	}
	cs := res.Cookies()
	if len(cs) != 1 {
		t.Fatalf("login set %v", cs)
	}
	c := cs[0]
	if c.Name != "spool_read_7070" || strings.Contains(c.Value, token) || len(c.Value) != 64 || !c.HttpOnly ||
		c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Fatalf("login cookie %+v (Set-Cookie %q)", c, res.Header.Get("Set-Cookie"))
	}
	// The code works once.
	if res := login(f, "code="+loginCode); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
		t.Fatalf("second use of the code: %d %v", res.StatusCode, res.Cookies())
	}
	// The cookie lets the pages offer writes; the writes need the token.
	if r := f.do(request{path: "/tasks", header: map[string]string{"Cookie": c.String()}}); !strings.Contains(r.body, "data-api=") {
		t.Fatal("the read cookie's pages offer no writes")
	}
	r := unblockFlaky(f, s)
	r.header = map[string]string{"Cookie": c.String()}
	refusedWrite(t, f, r, http.StatusUnauthorized, "token_required")

	// /login?token= takes the start's token or one of serve.tokens; each
	// token's cookie is its own.
	seen := map[string]bool{}
	for _, tok := range []string{token, bobToken, bossToken} {
		c := readCookie(f, tok)
		if seen[c] || readCookie(f, tok) != c {
			t.Fatalf("read cookie of %s: %s, not one per token", tok, c)
		}
		seen[c] = true
	}
	for _, q := range []string{"token=wrong", "token=", "", "code=" + token, "token=" + board.HashToken(bobToken)} {
		if res := login(f, q); res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
			t.Fatalf("login?%s: %d %v", q, res.StatusCode, res.Cookies())
		}
	}
}

// A read cookie made by anyone but this server (of a token's hash, which
// serve.tokens publishes, or of another start's key) is worth nothing.
func TestReadCookieCannotBeMade(t *testing.T) {
	f := newFixture(t, func(o *board.Options) { o.Private = true })
	other := newFixture(t, func(o *board.Options) { o.Private = true; o.Token = "another-start" })
	for _, v := range []string{board.HashToken(bobToken), board.HashToken(token), readCookie(other, bobToken)} {
		v = v[strings.IndexByte(v, '=')+1:]
		wantError(t, f.do(request{path: "/tasks", header: map[string]string{"Cookie": "spool_read_7070=" + v}}), http.StatusUnauthorized, "token_required")
	}
	wantStatus(t, f.do(request{path: "/tasks", header: map[string]string{"Cookie": readCookie(f, bobToken)}}), http.StatusOK)
}

// The browser's way in, over a real connection: the login URL, the cookie
// jar, the token from the login page, then a write from the board's page.
func TestLoginInABrowser(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}

	res, err := client.Get(ts.URL + "/login?code=" + loginCode)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`<meta name="spool-token" content="([^"]+)">`).FindSubmatch(page)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("login: %d\n%s", res.StatusCode, page)
	}
	post := func(origin, bearer string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/tasks/"+s.flaky+"/unblock", strings.NewReader("reset_attempts=on"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := post("http://evil.example", string(m[1])); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a write from another site: %d", res.StatusCode)
	}
	if res := post(ts.URL, ""); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a write with the cookies alone: %d", res.StatusCode)
	}
	var res2 *http.Response
	evs := f.appended(func() { res2 = post(ts.URL, string(m[1])) })
	if res2.StatusCode != http.StatusOK || len(evs) != 1 || evs[0].Type != workqueue.TypeUnblocked || evs[0].Actor != alice {
		t.Fatalf("a write from the board: %d, %v", res2.StatusCode, evs)
	}
}

// Writes come from the board's own pages, or from scripts (no Origin).
func TestWriteOriginChecks(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	with := func(h map[string]string) request {
		r := unblockFlaky(f, s)
		r.token, r.header = token, h
		return r
	}
	// The fixture's requests are for Host 127.0.0.1:7070.
	for _, h := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "http://127.0.0.1:7070.evil.example"},
		{"Origin": "http://127.0.0.1:8080"},
		{"Origin": "null"},
		{"Origin": "file://127.0.0.1:7070"},
		{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://127.0.0.1:7070", "Sec-Fetch-Site": "cross-site"},
	} {
		r := with(h)
		refusedWrite(t, f, r, http.StatusForbidden, "origin_refused")
		// The token does not matter: refused before it is asked for.
		r.token = ""
		refusedWrite(t, f, r, http.StatusForbidden, "origin_refused")
		f.post("/api/tasks/"+s.flaky+"/unblock", "") // unblock for the next round
	}
	for _, h := range []map[string]string{
		nil,
		{"Origin": "http://127.0.0.1:7070"},
		{"Origin": "https://127.0.0.1:7070"},
		{"Origin": "http://127.0.0.1:7070", "Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "none"},
	} {
		acceptedWrite(t, f, with(h), alice)
	}
}

// --read-only takes no writes, whatever the token, and its pages offer none.
func TestReadOnly(t *testing.T) {
	f := newFixture(t, func(o *board.Options) { o.ReadOnly = true })
	s := f.seed()
	for _, path := range []string{
		"/api/tasks/" + s.flaky + "/unblock", "/api/tasks/" + s.flaky + "/retry",
		"/api/jobs/" + s.job1 + "/cancel", "/api/jobs/" + s.job1 + "/pause", "/api/jobs/" + s.job1 + "/resume",
		"/api/jobs/" + s.job1 + "/retry", "/api/jobs/" + s.job2 + "/move?top=true", "/api/merge/1/cancel", "/api/merge/1/retry",
	} {
		refusedWrite(t, f, request{method: http.MethodPost, path: path, token: token}, http.StatusForbidden, "read_only")
		refusedWrite(t, f, request{method: http.MethodPost, path: path, token: bossToken}, http.StatusForbidden, "read_only")
	}
	for _, path := range []string{"/tasks", "/tasks/" + s.flaky, "/jobs", "/merge", "/activity"} {
		r := f.do(request{path: path, token: token})
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(r.body, "data-api=") || strings.Contains(r.body, "data-movable") {
			t.Fatalf("%s offers writes in --read-only:\n%s", path, r.body)
		}
		if !strings.Contains(r.body, `<span class="badge">read-only</span>`) {
			t.Fatalf("%s has no read-only badge", path)
		}
	}
	// Reads go on.
	wantStatus(t, f.get("/api/tasks"), http.StatusOK)
}

// Pages offer the writes to a request with the token, and only to it.
func TestPagesOfferWritesWithTheToken(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	for _, path := range []string{"/tasks", "/tasks/" + s.flaky, "/jobs"} {
		r := f.get(path)
		wantStatus(t, r, http.StatusOK)
		if strings.Contains(r.body, "data-api=") {
			t.Fatalf("%s without a token offers writes", path)
		}
		if !strings.Contains(r.body, "view only") {
			t.Fatalf("%s without a token is not marked view only", path)
		}
		r = f.do(request{path: path, header: map[string]string{"Cookie": readCookie(f, token)}})
		if !strings.Contains(r.body, "data-api=") {
			t.Fatalf("%s with the token offers no writes:\n%s", path, r.body)
		}
		if strings.Contains(r.body, "view only") {
			t.Fatalf("%s with the token is marked view only", path)
		}
	}
	// Dragging jobs is for admins: alice (the start's token) is none, boss is.
	if r := f.do(request{path: "/jobs", token: token}); strings.Contains(r.body, "data-movable") {
		t.Fatalf("/jobs lets a non-admin drag")
	}
	if r := f.do(request{path: "/jobs", token: bossToken}); !strings.Contains(r.body, `data-job="`+s.job1+`" data-movable="true"`) {
		t.Fatalf("/jobs does not let the admin drag:\n%s", r.body)
	}
}

// Private (a non-loopback address): reads need the token too.
func TestPrivateReadsNeedTheToken(t *testing.T) {
	f := newFixture(t, func(o *board.Options) { o.Private = true })
	s := f.seed()
	paths := []string{"/api/tasks", "/api/tasks/" + s.docs, "/api/ready", "/api/jobs", "/api/merge", "/api/orchestrator/status",
		"/tasks", "/tasks/" + s.docs, "/jobs", "/merge", "/prd", "/orchestrator", "/activity", "/analytics", "/api/events"}
	for _, path := range paths {
		wantError(t, f.get(path), http.StatusUnauthorized, "token_required")
		wantError(t, f.do(request{path: path, token: "wrong"}), http.StatusUnauthorized, "token_required")
	}
	for _, path := range paths[:len(paths)-1] { // not the stream: it does not end
		wantStatus(t, f.do(request{path: path, token: token}), http.StatusOK)
		wantStatus(t, f.do(request{path: path, header: map[string]string{"Cookie": readCookie(f, bobToken)}}), http.StatusOK)
	}
	// The login URL itself needs no token.
	if res := login(f, "code="+loginCode); res.StatusCode != http.StatusOK {
		t.Fatalf("login in private mode: %d", res.StatusCode)
	}
	refusedWrite(t, f, unblockFlaky(f, s), http.StatusUnauthorized, "token_required")
}

// On loopback the board answers only to its own names: a page elsewhere
// whose name resolves to 127.0.0.1 (DNS rebinding) reads nothing. Off
// loopback the token guards every request instead, whatever the Host.
func TestHostOnLoopback(t *testing.T) {
	f := newFixture(t)
	for _, host := range []string{"127.0.0.1:7070", "localhost:7070", "[::1]:7070", "127.0.0.2", "localhost"} {
		if r := f.do(request{path: "/api/ready", host: host}); r.code != http.StatusOK {
			t.Errorf("Host %s: status %d, want 200\n%s", host, r.code, r.body)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:7070", "127.0.0.1.evil.example:7070", "10.0.0.1:7070", "0.0.0.0:7070"} {
		r := f.do(request{path: "/api/ready", host: host, token: token})
		if r.code != http.StatusForbidden || !strings.Contains(r.body, `"host_refused"`) {
			t.Errorf("Host %q: status %d, want 403 host_refused\n%s", host, r.code, r.body)
		}
	}
	private := newFixture(t, func(o *board.Options) { o.Private = true })
	if r := private.do(request{path: "/api/ready", host: "board.example:7070", token: token}); r.code != http.StatusOK {
		t.Errorf("off loopback with the token: status %d, want 200\n%s", r.code, r.body)
	}
}

// Pages offer an action only to who may take it: a job's or an entry's
// owner, or an admin of that queue; anyone else sees none (the server
// would refuse it). boss is in admins.
func TestPagesOfferOnlyWhatTheViewerMay(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	f.submitMerge("feat-a", alice)
	jobForm, mergeForm := `data-api="/api/jobs/`+s.job1+`/cancel"`, `data-api="/api/merge/1/cancel"`
	for _, c := range []struct {
		token     string
		job, merg bool
	}{{token, true, true}, {bossToken, true, true}, {bobToken, false, false}} {
		if got := strings.Contains(f.do(request{path: "/jobs", token: c.token}).body, jobForm); got != c.job {
			t.Errorf("/jobs as %s offers cancel: %v, want %v", c.token, got, c.job)
		}
		if got := strings.Contains(f.do(request{path: "/merge", token: c.token}).body, mergeForm); got != c.merg {
			t.Errorf("/merge as %s offers cancel: %v, want %v", c.token, got, c.merg)
		}
	}
}

// An admin freezes and unfreezes the merge train from its page.
func TestMergeFreezeFromThePage(t *testing.T) {
	f := newFixture(t)
	if r := f.do(request{path: "/merge", token: token}); strings.Contains(r.body, "/api/merge/freeze") {
		t.Error("/merge offers a freeze to a non-admin")
	}
	if r := f.do(request{path: "/merge", token: bossToken}); !strings.Contains(r.body, `data-api="/api/merge/freeze"`) {
		t.Fatalf("/merge offers no freeze to an admin:\n%s", r.body)
	}
	// With admins set, only they freeze: the server refuses anyone else.
	refusedWrite(t, f, request{method: "POST", path: "/api/merge/freeze", token: bobToken}, http.StatusForbidden, "unauthorized")
	acceptedWrite(t, f, request{method: "POST", path: "/api/merge/freeze", body: "reason=release+day", ctype: "application/x-www-form-urlencoded", token: bossToken}, boss)
	refusedWrite(t, f, request{method: "POST", path: "/api/merge/unfreeze", token: bobToken}, http.StatusForbidden, "unauthorized")
	r := f.do(request{path: "/merge", token: bossToken})
	if !strings.Contains(r.body, "frozen by "+boss+": release day") || !strings.Contains(r.body, `data-api="/api/merge/unfreeze"`) {
		t.Fatalf("after the freeze:\n%s", r.body)
	}
	// Again: nothing to append.
	if evs := f.appended(func() { f.do(request{method: "POST", path: "/api/merge/freeze", token: bossToken}) }); len(evs) != 0 {
		t.Fatalf("a second freeze appended %v", evs)
	}
	acceptedWrite(t, f, request{method: "POST", path: "/api/merge/unfreeze", token: bossToken}, boss)
}

// The breaker's pause is lifted from the board as from the CLI; there is
// no pause a person starts (the orchestrator is always on): the page
// offers none, the API has none.
func TestOrchestratorResumeFromTheBoard(t *testing.T) {
	f := newFixture(t)
	if r := f.do(request{path: "/orchestrator", token: token}); strings.Contains(r.body, "/api/orchestrator/") {
		t.Fatalf("a running orchestrator's page offers a control:\n%s", r.body)
	}
	if r := f.do(request{method: "POST", path: "/api/orchestrator/pause", token: token}); r.code != http.StatusNotFound && r.code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /api/orchestrator/pause: %d", r.code)
	}
	if _, _, err := f.env(alice).Write(context.Background(), nil, func(*projections.View, string) ([]eventlog.Draft, error) {
		return []eventlog.Draft{orchestrator.Paused(orchestrator.PausedData{Kind: orchestrator.BreakCannotStart, Reason: "the agent could not start", Tasks: []string{}})}, nil
	}); err != nil {
		t.Fatal(err)
	}
	r := f.do(request{path: "/orchestrator", token: token})
	if !strings.Contains(r.body, "the agent could not start") || !strings.Contains(r.body, `data-api="/api/orchestrator/resume"`) {
		t.Fatalf("the paused orchestrator's page:\n%s", r.body)
	}
	acceptedWrite(t, f, request{method: "POST", path: "/api/orchestrator/resume", token: token}, alice)
	refusedWrite(t, f, request{method: "POST", path: "/api/orchestrator/resume", token: token}, http.StatusConflict, "invalid_state_transition")
}
