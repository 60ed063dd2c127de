package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/mcpserver"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
	"github.com/spoolhq/spool/internal/workqueue"
)

// MCPCmd is spool mcp: the queues as tools for coding agents
// (internal/mcpserver).
type MCPCmd struct {
	Serve   MCPServeCmd   `cmd:"" default:"withargs" help:"Serve the tools over stdio (the default), or streamable HTTP with --http."`
	Install MCPInstallCmd `cmd:"" help:"Write spool's entry into a client's MCP configuration: claude, codex or cursor."`
}

// MCPServeCmd serves one session over stdio, or any number over HTTP.
type MCPServeCmd struct {
	Tools     []string `placeholder:"LIST" help:"The tools to offer: names and the sets read, agent, all (default all; comma-separated or repeated)."`
	HTTP      string   `name:"http" placeholder:"ADDR" help:"Serve streamable HTTP on ADDR (such as 127.0.0.1:7071) instead of stdio, with spool serve's token rules."`
	TokenFile string   `placeholder:"FILE" help:"With --http: the token (at least 16 characters) instead of one made at start; needed off loopback."`
	Agent     string   `placeholder:"TASK" env:"SPOOL_TASK_ID" help:"Serve the agent the orchestrator started for TASK (default: $SPOOL_TASK_ID, which it sets): the agent tools alone (read only: its exit status and output are its report); --tools may only narrow them."`
	Attempt   int      `env:"SPOOL_ATTEMPT" hidden:"" help:"With --agent: the attempt, for the workflow prompt."`
	OfflineFlag
}

func (c *MCPServeCmd) Run(e *env) error {
	longRunning()
	tools, err := c.tools()
	if err != nil {
		return err
	}
	if c.TokenFile != "" && c.HTTP == "" {
		return fault.Usagef(CodeInvalidFlag, "--token-file is for --http: over stdio the client that started spool mcp is the only one it serves")
	}
	var private bool
	if c.HTTP != "" {
		host, _, err := net.SplitHostPort(c.HTTP)
		if err != nil {
			return fault.Usagef(CodeInvalidFlag, "--http %s: want HOST:PORT such as 127.0.0.1:7071 (%v)", c.HTTP, err)
		}
		if private = !board.Loopback(host); private && c.TokenFile == "" {
			return fault.Usagef(CodeTokenFileRequired, "--http %s is not a loopback address: give --token-file, whose token every request then needs", c.HTTP)
		}
	}
	st, err := e.open()
	if err != nil {
		return err
	}
	srv := newMCP(e, st, tools, c.Agent, c.Attempt)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	followed := followMCP(ctx, e, st, srv)
	if c.HTTP == "" {
		// stdout is the protocol's: warnings and everything else go to stderr.
		err := srv.Run(ctx, &mcp.StdioTransport{})
		cancel()
		<-followed
		if e.ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed) {
			return nil // interrupted, or the client went
		}
		return err
	}
	token, err := mcpToken(c.TokenFile)
	if err != nil {
		return err
	}
	actors, err := board.ParseTokens(board.SettingsFrom(st.Config).Tokens)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.HTTP)
	if err != nil {
		return fault.New(CodeListenFailed, err, fmt.Sprintf("cannot listen on %s: %v", c.HTTP, err), "addr", c.HTTP)
	}
	fmt.Fprintf(e.stdout, "spool mcp: http://%s/\n", ln.Addr())
	if c.TokenFile == "" {
		fmt.Fprintf(e.stdout, "token (Authorization: Bearer …): %s\n", token)
	}
	return serveMCP(ctx, ln, srv.HTTPHandler(mcpserver.HTTPOptions{Private: private, Token: token, Actors: actors}))
}

// tools is the allow-list: --tools, within the agent set for an agent the
// orchestrator started (the trust boundary: it reads; its exit status
// closes or fails its task).
func (c *MCPServeCmd) tools() ([]string, error) {
	list := splitList(c.Tools)
	if c.Agent == "" {
		return mcpserver.Resolve(list)
	}
	if !workqueue.ValidID(c.Agent) {
		return nil, fault.Usagef(CodeInvalidFlag, "--agent %q (or $SPOOL_TASK_ID): not a task id", c.Agent)
	}
	return mcpserver.ResolveAgent(list, c.Agent)
}

// newMCP is spool mcp's server on st: the store kept open, the clock read
// again and the configuration reloaded (as spool serve) for every call.
// task and attempt name the task of an agent the orchestrator started.
func newMCP(e *env, st *store.Store, tools []string, task string, attempt int) *mcpserver.Server {
	return mcpserver.New(mcpserver.Options{Env: reloading(e, st, e.envs(st)), Tools: tools, Task: task, Attempt: attempt,
		Version: spoolVersion(), Warn: e.warn})
}

// followMCP runs the server's Follow (subscriptions) until ctx ends; the
// returned channel closes when it has. A damaged log stops it with a
// warning: the tools then fail with corrupt_log on their own.
func followMCP(ctx context.Context, e *env, st *store.Store, srv *mcpserver.Server) <-chan struct{} {
	done := make(chan struct{})
	wakes := watch.Wakes(ctx, st.Repo, watch.SettingsFrom(st.Config).Poll, e.warn)
	fault.Go(func() {
		defer close(done)
		if err := srv.Follow(ctx, wakes); err != nil {
			e.warn(fmt.Sprintf("spool mcp: no more notifications: %v", err))
		}
	})
	return done
}

// serveMCP serves h on ln until ctx ends, then shuts down (5 s for the
// requests in flight).
func serveMCP(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	fault.Go(func() { served <- hs.Serve(ln) })
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	return shutdown(hs, err)
}

// shutdown stops hs, giving the requests in flight 5 s, and returns why it
// stopped serving: err, or nil for a shutdown.
func shutdown(hs *http.Server, err error) error {
	shut, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if hs.Shutdown(shut) != nil {
		hs.Close() // a request or stream that outlasted the grace
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// mcpToken is --token-file's token, or a new one.
func mcpToken(file string) (string, error) {
	if file == "" {
		return board.NewToken(), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fault.New(CodeInvalidTokenFile, err, fmt.Sprintf("--token-file: %v", err), "path", file)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < 16 || strings.ContainsAny(token, " \t\r\n") {
		return "", fault.New(CodeInvalidTokenFile, nil, "--token-file: the token must be one word of at least 16 characters", "path", file)
	}
	return token, nil
}

// splitList takes "a,b" and repeated flags alike.
func splitList(items []string) []string {
	var out []string
	for _, it := range items {
		for _, s := range strings.Split(it, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// spoolVersion is spool version's version, for the server's name.
func spoolVersion() string {
	v, _ := buildVersion(debug.ReadBuildInfo())
	return v
}

// MCPInstallCmd writes spool's entry into a client's configuration.
type MCPInstallCmd struct {
	Client string   `arg:"" enum:"claude,codex,cursor" help:"claude (.mcp.json in the repository), cursor (.cursor/mcp.json in the repository) or codex (config.toml in $CODEX_HOME or ~/.codex)."`
	Tools  []string `placeholder:"LIST" help:"The entry's --tools (default: every tool)."`
	Name   string   `default:"spool" help:"The entry's name."`
	Print  bool     `help:"Print the entry instead of writing it."`
}

func (c *MCPInstallCmd) Run(e *env) error {
	if !mcpserver.ValidName(c.Name) {
		return fault.Usagef(CodeInvalidFlag, "--name %q: want letters, digits, - and _ (at most 64)", c.Name)
	}
	entry := mcpserver.Entry{Name: c.Name, Command: "spool", Args: []string{"mcp"}}
	if tools := splitList(c.Tools); len(tools) > 0 {
		if _, err := mcpserver.Resolve(tools); err != nil {
			return err
		}
		entry.Args = append(entry.Args, "--tools", strings.Join(tools, ","))
	}
	if c.Print {
		_, err := e.stdout.Write(mcpserver.Snippet(c.Client, entry))
		return err
	}
	var root string
	if c.Client != "codex" {
		st, err := e.openLenient()
		if err != nil {
			return err
		}
		root = st.Repo.WorkTree
	}
	home, _ := os.UserHomeDir()
	path := mcpserver.ConfigPath(c.Client, root, os.Getenv("CODEX_HOME"), home)
	changed, err := mcpserver.Install(c.Client, path, entry)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"client": c.Client, "path": path, "name": c.Name, "changed": changed, "entry": entry})
	}
	if changed {
		fmt.Fprintf(e.stdout, "wrote %s to %s\n", c.Name, path)
	} else {
		fmt.Fprintf(e.stdout, "%s already in %s\n", c.Name, path)
	}
	return nil
}
