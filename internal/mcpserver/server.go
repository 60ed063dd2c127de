// Package mcpserver is spool mcp: every queue as tools, resources and a
// prompt for coding agents, over the Model Context Protocol (the official
// Go SDK, github.com/modelcontextprotocol/go-sdk). Each tool is a thin call
// into the service its CLI command calls (the same decide, the same events,
// the same errors), answering with the command's --json as structured
// content; an error is a tool error carrying spool's code. As in spool
// serve, the store is opened once and kept: one call at a time uses it,
// and its projections stay loaded between calls, caught up from the log.
//
// Nothing here is built before spool mcp runs: the SDK's own packages
// initialise with every command (they are linked), but the tools' schemas
// and the servers are made by New and Session only.
package mcpserver

import (
	"context"
	"crypto/rand"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/store"
)

// Options configure a Server.
type Options struct {
	// Env is what a call's services get: the store opened once, the clock
	// read again for every call, the actor of the process (--actor,
	// SPOOL_ACTOR, git user.email).
	Env func() (store.Env, error)
	// Tools is the allow-list (tool names, already resolved: Resolve); nil
	// is every tool.
	Tools []string
	// Task and Attempt name the task an orchestrated agent was started for
	// (its prompt says so); "" otherwise.
	Task    string
	Attempt int
	Version string
	Warn    func(string)
}

// Server serves spool's tools to any number of MCP sessions: one for
// stdio, one per client over HTTP, each acting as the actor it was made
// for.
type Server struct {
	opt Options

	// mu lets one call at a time use the store: the merge queue's state read
	// from it is the store's own, caught up in place by the next read (the
	// work queue's and the scheduler's are snapshots). A call's answer is
	// encoded under it.
	mu sync.Mutex

	smu      sync.Mutex
	sessions map[string]*mcp.Server      // by actor and tools
	readers  map[*mcp.ServerSession]bool // the sessions subscribed to spool://ready
	ready    []byte                      // spool://ready as last read for its subscribers

	following chan struct{} // closed when Follow has read the log as it stood
	followed  sync.Once
}

// New makes a server; Follow must run for subscriptions to be told of
// changes.
func New(opt Options) *Server {
	if opt.Tools == nil {
		opt.Tools = ToolNames()
	}
	if opt.Warn == nil {
		opt.Warn = func(string) {}
	}
	return &Server{opt: opt, sessions: map[string]*mcp.Server{}, readers: map[*mcp.ServerSession]bool{}, following: make(chan struct{})}
}

// Session returns the MCP server of one identity: acting as actor (""
// is the process's own) with the tools of opt.Tools that tools allows
// (nil: all of them). Sessions of one identity share it.
func (s *Server) Session(actor string, tools []string) *mcp.Server {
	return s.session(actor, tools, "")
}

// session is Session whose session ids (over HTTP) start with tag and "-".
func (s *Server) session(actor string, tools []string, tag string) *mcp.Server {
	allowed := s.opt.Tools
	if tools != nil {
		allowed = slices.DeleteFunc(slices.Clone(allowed), func(name string) bool { return !slices.Contains(tools, name) })
	}
	key := actor + "\x00" + joinNames(allowed) + "\x00" + tag
	s.smu.Lock()
	defer s.smu.Unlock()
	if srv, ok := s.sessions[key]; ok {
		return srv
	}
	opt := &mcp.ServerOptions{
		Instructions:       instructions,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		Capabilities:       &mcp.ServerCapabilities{}, // not the SDK's default logging: spool sends no log messages
	}
	if tag != "" {
		opt.GetSessionID = func() string { return tag + "-" + rand.Text() }
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "spool", Title: "spool", Version: s.opt.Version}, opt)
	for _, t := range toolTable() {
		if slices.Contains(allowed, t.name) {
			srv.AddTool(t.describe(), s.handler(t, actor))
		}
	}
	s.addResources(srv, allowed)
	s.addPrompt(srv)
	s.sessions[key] = srv
	return srv
}

// instructions is what a client shows its model about the server.
const instructions = "spool's work queues (tasks, merge queue, jobs, PRDs, orchestrator) kept as an event log in the git repository. " +
	"Get the prompt 'workflow' for how to work with them. Tools answer with spool's --json as structured content; errors carry spool's code."

func joinNames(names []string) string {
	out := ""
	for _, n := range names {
		out += n + ","
	}
	return out
}

// Run serves one session on t (stdio: &mcp.StdioTransport{}) until the
// client goes or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.Session("", nil).Run(ctx, t)
}

// env is a call's store.Env, acting as actor when one is given.
func (s *Server) env(actor string) (store.Env, error) {
	env, err := s.opt.Env()
	if err != nil {
		return env, err
	}
	if actor != "" {
		env.Actor = func(context.Context) (string, error) { return actor, nil }
	}
	return env, nil
}
