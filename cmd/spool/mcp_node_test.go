package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/agentguide"
	"github.com/spoolhq/spool/internal/mcpserver"
)

// nodeClient is testdata/mcp-node/client.mjs with node, once its
// dependencies are installed (.ci/run: npm ci there); under CI=true their
// absence fails the test.
func nodeClient(t *testing.T) (node, script string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "mcp-node"))
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if node, err = exec.LookPath("node"); err != nil {
		missing = "no node on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing = "the TypeScript SDK is not installed (npm ci in testdata/mcp-node)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: .ci/run installs it; the MCP Node client test cannot run", missing)
		}
		t.Skip(missing + "; CI=true makes this a failure")
	}
	return node, filepath.Join(dir, "client.mjs")
}

// spool mcp driven by a second, independent implementation: the official
// TypeScript SDK's client (which Claude Code and most clients build on),
// over stdio. It lists the tools, calls ready and next, gets a refusal with
// spool's code, reads spool://ready and the claimed task, and gets the
// prompt; each answer is what the CLI prints under --json.
func TestMCPNodeClient(t *testing.T) {
	t.Parallel()
	node, script := nodeClient(t)
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	var first, second struct{ ID string }
	json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "add", "first", "-p", "1")), &first)
	json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "add", "second <&>")), &second)
	var wantReady any
	json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "ready")), &wantReady)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, bin, "-C", dir, "--actor", "ada@example.com", "mcp")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Server struct{ Name string }
		Tools  []string
		Ready  struct {
			IsError    bool
			Structured struct{ Result any }
			Text       string
		}
		Next struct {
			IsError    bool
			Structured map[string]any
			Text       string
		}
		Refused struct {
			IsError    bool
			Structured struct{ Error struct{ Code string } }
		}
		Resource    []map[string]any
		Task        map[string]any
		PromptBytes int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node client.mjs printed %s: %v", out, err)
	}
	want := mcpserver.ToolNames()
	slices.Sort(want)
	if got.Server.Name != "spool" || !slices.Equal(got.Tools, want) {
		t.Errorf("server %q, tools/list %v; want spool, %v", got.Server.Name, got.Tools, want)
	}
	if got.Ready.IsError || !reflect.DeepEqual(got.Ready.Structured.Result, wantReady) || !strings.HasPrefix(got.Ready.Text, "2 ready: "+first.ID) {
		t.Errorf("ready: %+v\nwant (spool ready --json) %v", got.Ready, wantReady)
	}
	if got.Next.IsError || got.Next.Structured["id"] != first.ID || got.Next.Structured["worker"] != "ada@example.com" ||
		!strings.HasPrefix(got.Next.Text, "claimed "+first.ID) {
		t.Errorf("next: %+v", got.Next)
	}
	if !got.Refused.IsError || got.Refused.Structured.Error.Code != "not_found" {
		t.Errorf("done of no task: %+v", got.Refused)
	}
	if len(got.Resource) != 1 || got.Resource[0]["id"] != second.ID || got.Resource[0]["title"] != "second <&>" {
		t.Errorf("spool://ready after the claim: %v, want %s alone", got.Resource, second.ID)
	}
	if got.Task["id"] != first.ID || got.Task["status"] != "in_progress" {
		t.Errorf("spool://task/%s: %v", first.ID, got.Task)
	}
	if got.PromptBytes == 0 || got.PromptBytes > agentguide.Max {
		t.Errorf("the workflow prompt is %d bytes, want 1..%d", got.PromptBytes, agentguide.Max)
	}
}
