package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/mcpserver"
	"github.com/spoolhq/spool/internal/workqueue"
)

// spoolIn runs spool in-process in dir and returns its stdout; the command
// must succeed.
func spoolIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"-C", dir, "--actor", "ada@example.com"}, args...), &out, &errb); code != 0 {
		t.Fatalf("spool %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return out.String()
}

// mcpSession is spool mcp's server, as the command makes it, on dir, with
// a client of the Go SDK connected in memory.
func mcpSession(t *testing.T, dir string, tools []string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	e := &env{Globals: &Globals{Dir: dir, Actor: "ada@example.com"}, ctx: ctx, stdout: io.Discard, stderr: &stderr}
	st, err := e.open()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := newMCP(e, st, tools, "", 0)
	server, client := mcp.NewInMemoryTransports()
	ss, err := srv.Session("", nil).Connect(ctx, server, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, client, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
		if stderr.Len() > 0 {
			t.Logf("spool mcp's stderr:\n%s", stderr.String())
		}
	})
	return cs
}

// toolJSON calls a tool and returns its answer as the CLI would print it:
// the structured content, or what {"result": …} holds.
func toolJSON(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		t.Fatalf("%s %v: %s", name, args, raw)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s: %s: %v", name, raw, err)
	}
	if v, ok := body["result"]; ok && len(body) == 1 {
		return v
	}
	return body
}

// cliJSON runs the command with --json and decodes what it prints: one
// value, or JSON Lines (spool log) as a list.
func cliJSON(t *testing.T, dir string, args ...string) any {
	t.Helper()
	out := spoolIn(t, dir, append([]string{"--json"}, args...)...)
	dec := json.NewDecoder(strings.NewReader(out))
	var vals []any
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("spool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		vals = append(vals, v)
	}
	if len(vals) == 1 && args[0] != "log" {
		return vals[0]
	}
	if vals == nil {
		return []any{}
	}
	return vals
}

// Each read tool answers with exactly what its command prints under
// --json, on the same repository at the same time (SPOOL_NOW), and a
// write tool with what its command would print.
func TestMCPAnswersAsTheCLI(t *testing.T) {
	r := gittest.New(t, nil)
	t.Setenv("SPOOL_NOW", "2026-03-01T12:00:00Z")
	dir := r.Root
	spoolIn(t, dir, "init")
	spoolIn(t, dir, "config", "set", "sync.claims", "local")
	id := strings.Fields(spoolIn(t, dir, "task", "add", "Write the parser", "-p", "1", "-l", "automated"))[1]
	id = strings.TrimSuffix(id, ":")
	other := strings.TrimSuffix(strings.Fields(spoolIn(t, dir, "task", "add", "Document <it> & ship"))[1], ":")
	spoolIn(t, dir, "task", "dep", "add", other, id)
	spoolIn(t, dir, "task", "comment", other, "needs the parser")
	spoolIn(t, dir, "next")
	for _, title := range []string{"Tidy up", "Measure it", "Label it"} {
		spoolIn(t, dir, "task", "add", title, "-l", "automated")
	}
	wt := r.Worktree("feature", "f.txt", "f\n")
	spoolIn(t, wt, "merge", "submit", "--no-push", "--bead", id)
	var job struct{ ID string }
	json.Unmarshal([]byte(spoolIn(t, dir, "--json", "job", "submit", "--name", "train", "--", "true")), &job)
	r.Write(dir, "docs/prd/checkout.md", "---\nprd_approval: pending\nbeads_approval: pending\n---\n# Checkout\n")
	spoolIn(t, dir, "prd", "start", "shop")
	spoolIn(t, dir, "prd", "add", "shop", "checkout", "--path", "docs/prd/checkout.md")

	cs := mcpSession(t, dir, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		cli  []string
	}{
		{"ready", nil, []string{"ready"}},
		{"ready", map[string]any{"limit": 0, "labels": []string{"automated"}}, []string{"ready", "-n", "0", "-l", "automated"}},
		{"show", map[string]any{"ids": []string{id, other}}, []string{"task", "show", id, other}},
		{"stats", nil, []string{"stats"}},
		{"merge_list", nil, []string{"merge", "list"}},
		{"merge_list", map[string]any{"all": true}, []string{"merge", "list", "--all"}},
		{"merge_status", map[string]any{"entry": "1"}, []string{"merge", "show", "1"}},
		{"job_list", nil, []string{"job", "list"}},
		{"job_explain", map[string]any{"job": job.ID}, []string{"job", "explain", job.ID}},
		{"prd_report", nil, []string{"prd", "report"}},
		{"prd_show", map[string]any{"prd": "checkout"}, []string{"prd", "show", "checkout"}},
		{"orchestrator_status", nil, []string{"orchestrator", "status"}},
		{"status", nil, []string{"status"}},
		{"log", map[string]any{"n": 0}, []string{"log"}},
		{"log", map[string]any{"types": []string{"task.*"}, "n": 3}, []string{"log", "-t", "task.*", "-n", "3"}},
		// A write whose answer the clock alone decides: the same at the same time.
		{"heartbeat", map[string]any{"id": id}, []string{"heartbeat", id}},
	} {
		got, want := toolJSON(t, cs, c.tool, c.args), cliJSON(t, dir, c.cli...)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s %v:\n got %s\nwant %s (spool %s --json)", c.tool, c.args, g, w, strings.Join(c.cli, " "))
		}
	}
	// Writes that make something new answer in their command's shape.
	for _, c := range []struct {
		tool string
		args map[string]any
		cli  []string
	}{
		{"create", map[string]any{"title": "t", "labels": []string{"x"}}, []string{"task", "add", "t", "-l", "x"}},
		{"comment", map[string]any{"id": other, "text": "c"}, []string{"task", "comment", other, "c"}},
		{"job_submit", map[string]any{"argv": []string{"true"}}, []string{"job", "submit", "--", "true"}},
	} {
		got, want := toolJSON(t, cs, c.tool, c.args), cliJSON(t, dir, c.cli...)
		if keys(got) != keys(want) {
			t.Errorf("%s: keys %s, spool %s --json: %s", c.tool, keys(got), strings.Join(c.cli, " "), keys(want))
		}
	}
}

func keys(v any) string {
	m, _ := v.(map[string]any)
	return fmt.Sprint(slices.Sorted(maps.Keys(m)))
}

// logLines is the repository's log as spool log --json prints it.
func logLines(t *testing.T, bin, dir string, env []string) []logEvent {
	t.Helper()
	var out []logEvent
	sc := bufio.NewScanner(strings.NewReader(jobSpool(t, bin, dir, env, "--json", "log")))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e logEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// stdioSession starts `spool mcp` as a process of its own in dir, acting
// as actor, and connects the Go SDK's client to it over stdio.
func stdioSession(t *testing.T, bin, dir, actor string, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-C", dir, "--actor", actor, "mcp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		cancel()
		t.Fatalf("spool mcp: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close() // closes its stdin: the server ends
		cancel()
		if stderr.Len() > 0 {
			t.Logf("spool mcp (%s) stderr:\n%s", actor, stderr.String())
		}
	})
	return cs
}

// Eight agents on two spool mcp processes over stdio, one repository of
// 200 tasks, each agent claiming (next) and finishing (done) until nothing
// is left: every task is claimed once and completed once, whichever
// process and agent got it. Over the same stdio, the tools are listed, and
// a refused call carries its code and appends nothing.
func mCPStdioClaimsAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("two spool mcp processes, 400 appends")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	servers := []*mcp.ClientSession{stdioSession(t, bin, dir, "proc-a", env), stdioSession(t, bin, dir, "proc-b", env)}
	ctx := context.Background()

	res, err := servers[0].ListTools(ctx, nil)
	if err != nil || len(res.Tools) != len(mcpserver.ToolNames()) {
		t.Fatalf("tools/list over stdio: %d tools, %v", len(res.Tools), err)
	}
	const n, agents = 200, 8
	for i := range n {
		if r, err := servers[i%2].CallTool(ctx, &mcp.CallToolParams{Name: "create", Arguments: map[string]any{"title": fmt.Sprintf("task %03d", i)}}); err != nil || r.IsError {
			t.Fatalf("create %d: %v %+v", i, err, r)
		}
	}
	before := len(logLines(t, bin, dir, env))
	r, err := servers[1].CallTool(ctx, &mcp.CallToolParams{Name: "done", Arguments: map[string]any{"id": "sp-none"}})
	if err != nil || !r.IsError || !strings.Contains(fmt.Sprint(r.StructuredContent), "not_found") {
		t.Fatalf("done of no task: %v %+v", err, r)
	}
	if after := len(logLines(t, bin, dir, env)); after != before {
		t.Fatalf("a refused call appended %d events", after-before)
	}

	done := make([][]string, agents)
	var wg sync.WaitGroup
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, worker := servers[a%2], fmt.Sprintf("agent-%d", a)
			for range n + 1 { // bounded: no agent can claim more than every task
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "next", Arguments: map[string]any{"worker": worker}})
				if err != nil || r.IsError {
					t.Errorf("%s next: %v %+v", worker, err, r)
					return
				}
				var claim struct{ ID, Worker string }
				raw, _ := json.Marshal(r.StructuredContent)
				if json.Unmarshal(raw, &claim); claim.ID == "" {
					return // {"result": null}: nothing is left
				}
				if claim.Worker != worker {
					t.Errorf("%s claimed %s for %s", worker, claim.ID, claim.Worker)
				}
				if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "done", Arguments: map[string]any{"id": claim.ID}}); err != nil || r.IsError {
					t.Errorf("%s done %s: %v %+v", worker, claim.ID, err, r)
					return
				}
				done[a] = append(done[a], claim.ID)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := 0
	for a := range agents {
		t.Logf("agent-%d (%s) completed %d tasks", a, []string{"proc-a", "proc-b"}[a%2], len(done[a]))
		total += len(done[a])
	}
	if total != n {
		t.Errorf("%d tasks completed in all, want %d", total, n)
	}
	log := logLines(t, bin, dir, env)
	claims := heldOnce(t, log, workqueue.TypeClaimed, workqueue.TypeSucceeded, workqueue.TypeFailed, workqueue.TypeReleased)
	succeeded, byProc := map[string]int{}, map[string]int{}
	for _, e := range log {
		switch e.Type {
		case workqueue.TypeSucceeded:
			succeeded[e.Subject]++
		case workqueue.TypeClaimed:
			byProc[e.Actor]++
		}
	}
	if len(claims) != n || len(succeeded) != n {
		t.Errorf("%d tasks claimed and %d succeeded, want %d", len(claims), len(succeeded), n)
	}
	for id, k := range claims {
		if k != 1 || succeeded[id] != 1 {
			t.Errorf("%s claimed %d times, succeeded %d times", id, k, succeeded[id])
		}
	}
	if byProc["proc-a"] == 0 || byProc["proc-b"] == 0 {
		t.Errorf("claims by process %v: the two servers did not contend", byProc)
	}
}

// The trust boundary over MCP: the orchestrator hands its agent an MCP
// configuration (SPOOL_MCP_CONFIG) whose spool mcp has the agent tools
// alone. Started from that file alone, with none of the agent's
// environment (as the TypeScript SDK's clients start a server), it reads,
// heartbeats the claim and comments as the claimant; done, next and create
// are not there, and calling them appends nothing.
func TestMCPOrchestratedAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch and an agent")
	}
	bin := spoolBinary(t)
	dir, env, id, _ := orchRepo(t, bin, "wait", 2)
	tmp := t.TempDir()
	release, config := filepath.Join(tmp, "release"), filepath.Join(tmp, "mcp.json")
	env = append(env, "FAKE_AGENT_RELEASE="+release, "FAKE_AGENT_MCP="+config)
	w := startWatch(t, bin, dir, env, "--poll", "50ms")
	waitFor(t, 20*time.Second, "the agent got no MCP configuration", func() bool {
		_, err := os.Stat(config)
		return err == nil
	})
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	b, _ := os.ReadFile(config)
	if err := json.Unmarshal(b, &cfg); err != nil || len(cfg.MCPServers) != 1 {
		t.Fatalf("SPOOL_MCP_CONFIG: %v\n%s", err, b)
	}
	entry := cfg.MCPServers["spool"]
	cmd := exec.Command(entry.Command, entry.Args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("spool mcp from %s: %v\n%s", b, err, stderr.String())
	}
	defer cs.Close()

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tool := range res.Tools {
		listed = append(listed, tool.Name)
	}
	want := slices.Clone(mcpserver.Sets["agent"])
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the agent's tools: %v, want %v", listed, want)
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "workflow"})
	if err != nil || !strings.Contains(p.Messages[0].Content.(*mcp.TextContent).Text, "started for task "+id+" (attempt 1)") {
		t.Errorf("the workflow prompt does not name the agent's task: %v %+v", err, p)
	}
	before := len(logLines(t, bin, dir, env))
	for _, c := range []struct {
		name string
		args map[string]any
	}{{"done", map[string]any{"id": id}}, {"next", map[string]any{}}, {"create", map[string]any{"title": "mine"}},
		{"update", map[string]any{"id": id, "status": "closed"}}, {"heartbeat", map[string]any{"id": id}},
		{"comment", map[string]any{"id": id, "text": "halfway"}}, {"propose", map[string]any{"category": "scope"}}} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err == nil && !r.IsError {
			t.Errorf("the agent's %s answered %+v", c.name, r.StructuredContent)
		}
	}
	if after := len(logLines(t, bin, dir, env)); after != before {
		t.Errorf("the agent's refused calls appended %d events", after-before)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "show", Arguments: map[string]any{"ids": []string{id}}}); err != nil || r.IsError {
		t.Errorf("the agent's show: %v %+v", err, r)
	}
	os.WriteFile(release, []byte("0"), 0o644)
	waitFor(t, 30*time.Second, "the task was not closed by the agent's exit", func() bool {
		return taskStatus(t, bin, dir, env, id) == "closed"
	})
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch: %v\n%s", err, w.output())
	}
}

// bearer adds the token to every request of an MCP client over HTTP.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// spool mcp --http as a process: it prints its address and token; a client
// with the token has every tool and acts as the server's actor, one without
// has the read tools; SIGTERM ends it with exit 0.
func TestMCPHTTPProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool mcp --http")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	w := startSpool(t, bin, dir, env, "mcp", "mcp", "--http", "127.0.0.1:0")
	var url, token string
	waitFor(t, 10*time.Second, "spool mcp --http printed no address and token", func() bool {
		m := regexp.MustCompile(`(?m)^spool mcp: (http://127\.0\.0\.1:\d+/)\ntoken \(Authorization: Bearer …\): (\S+)$`).FindStringSubmatch(w.output())
		if m != nil {
			url, token = m[1], m[2]
		}
		return m != nil
	})
	ctx := context.Background()
	var sessions []*mcp.ClientSession
	connect := func(rt http.RoundTripper) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect to %s: %v\n%s", url, err, w.output())
		}
		sessions = append(sessions, cs)
		return cs
	}
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	names := func(cs *mcp.ClientSession) []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	withToken := connect(bearer{token})
	all, read := mcpserver.ToolNames(), slices.Clone(mcpserver.Sets["read"])
	slices.Sort(all)
	slices.Sort(read)
	if got := names(withToken); !slices.Equal(got, all) {
		t.Errorf("with the token: %v, want %v", got, all)
	}
	r, err := withToken.CallTool(ctx, &mcp.CallToolParams{Name: "create", Arguments: map[string]any{"title": "over http"}})
	if err != nil || r.IsError || !strings.Contains(fmt.Sprint(r.StructuredContent), "created_by:ada@example.com") {
		t.Errorf("create with the token: %v %+v", err, r)
	}
	if got := names(connect(http.DefaultTransport)); !slices.Equal(got, read) {
		t.Errorf("without a token: %v, want %v", got, read)
	}
	for _, cs := range sessions {
		cs.Close()
	}
	start := time.Now()
	if err := w.stop(t); err != nil {
		t.Errorf("spool mcp --http after SIGTERM: %v\n%s", err, w.output())
	}
	t.Logf("stopped in %s", time.Since(start))
}
