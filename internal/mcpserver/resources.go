package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/agentguide"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/watch"
	"github.com/spoolhq/spool/internal/workqueue"
)

// The resources: the ready queue, a task, the merge queue, the job queue,
// each as its command's --json. They only read, so every session has them,
// whatever its tools.
const (
	uriReady  = "spool://ready"
	uriTask   = "spool://task/" // + id
	uriMerge  = "spool://merge"
	uriJobs   = "spool://jobs"
	readyTop  = 10 // spool://ready is ready's default: the most urgent 10
	readyTick = 30 * time.Second
)

func (s *Server) addResources(srv *mcp.Server, _ []string) {
	add := func(uri, name, desc string, read func(ctx context.Context, env store.Env, uri string) (any, string, error)) {
		srv.AddResource(&mcp.Resource{URI: uri, Name: name, Description: desc, MIMEType: "application/json"}, s.resource(read))
	}
	add(uriReady, "ready", "The ready queue: the 10 tasks next would claim first (spool ready --json). Subscribe to hear when it changes.",
		func(ctx context.Context, env store.Env, _ string) (any, string, error) {
			return readyList(ctx, env, workqueue.ReadyFilter{}, readyTop)
		})
	add(uriMerge, "merge", "The merge queue (spool merge list --json).", func(ctx context.Context, env store.Env, _ string) (any, string, error) {
		return mergeList(ctx, env, mergeListIn{})
	})
	add(uriJobs, "jobs", "The job queue in dispatch order (spool job list --json).", func(ctx context.Context, env store.Env, _ string) (any, string, error) {
		return jobList(ctx, env, jobListIn{})
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriTask + "{id}", Name: "task", MIMEType: "application/json",
		Description: "A task with its dependencies, dependents and comments (spool task show ID --json). Subscribe to hear when it changes: a claim, a comment, its close."},
		s.resource(func(ctx context.Context, env store.Env, uri string) (any, string, error) {
			out, _, err := wq(env).Show(ctx, []string{strings.TrimPrefix(uri, uriTask)})
			if err != nil {
				return nil, "", err
			}
			return out[0], "", nil
		}))
}

// resource serves a read as the resource's JSON (the command's, compact),
// with the store to itself. What does not exist is the protocol's
// resource-not-found; another error is the read's, with spool's code and
// message.
func (s *Server) resource(read func(ctx context.Context, env store.Env, uri string) (any, string, error)) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		body, err := s.readResource(ctx, uri, read)
		if err != nil {
			if f := fault.Classify(err); f.Code == fault.CodeNotFound.Name {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			f := fault.Classify(err)
			return nil, fmt.Errorf("%s: %s", f.Code, f.Message)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
	}
}

func (s *Server) readResource(ctx context.Context, uri string, read func(ctx context.Context, env store.Env, uri string) (any, string, error)) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.env("")
	if err != nil {
		return nil, err
	}
	v, _, err := read(ctx, env, uri)
	if err != nil {
		return nil, err
	}
	return compact(v)
}

// compact is v as the CLI's --json, compact and with strings as written.
func compact(v any) ([]byte, error) {
	if raw, ok := v.(rawJSON); ok {
		return bytes.TrimSpace(raw), nil
	}
	var buf bytes.Buffer
	enc := newEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// subscribe takes a subscription to one of the resources (the SDK keeps
// who subscribed; Follow says when it changed). A subscription to the
// ready queue reads it, so that what Follow compares it with is what the
// subscriber saw.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	switch {
	case uri == uriMerge || uri == uriJobs:
	case uri == uriReady:
		body, err := s.readResource(ctx, uriReady, func(ctx context.Context, env store.Env, _ string) (any, string, error) {
			return readyList(ctx, env, workqueue.ReadyFilter{}, readyTop)
		})
		if err != nil {
			return err
		}
		s.smu.Lock()
		if !s.readSubscribed() {
			s.ready = body
		}
		s.readers[req.Session] = true
		s.smu.Unlock()
	case strings.HasPrefix(uri, uriTask) && workqueue.ValidID(strings.TrimPrefix(uri, uriTask)):
	default:
		return mcp.ResourceNotFoundError(uri)
	}
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Params.URI == uriReady {
		s.smu.Lock()
		delete(s.readers, req.Session)
		s.smu.Unlock()
	}
	return nil
}

// readSubscribed reports whether a session subscribed to spool://ready is
// still open, forgetting those that ended without unsubscribing (an HTTP
// client that went away), which the SDK forgets too; s.smu is held.
func (s *Server) readSubscribed() bool {
	if len(s.readers) == 0 {
		return false
	}
	open := map[*mcp.ServerSession]bool{}
	for _, srv := range s.sessions {
		for ss := range srv.Sessions() {
			open[ss] = true
		}
	}
	maps.DeleteFunc(s.readers, func(ss *mcp.ServerSession, _ bool) bool { return !open[ss] })
	return len(s.readers) > 0
}

// Follow tells subscribers when a resource changed, until ctx ends: it
// follows the log as spool serve does (watch.Follow, on wakes) and, for
// each batch of new events, notifies spool://task/ID for each task an
// event is about, spool://merge and spool://jobs for those queues' events,
// and spool://ready when the ready queue reads differently than it did
// (also looked at every 30 s: a backoff or a lease running out changes it
// without an event).
func (s *Server) Follow(ctx context.Context, wakes <-chan struct{}) error {
	s.mu.Lock()
	env, err := s.opt.Env()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	warn := func(msg string) { s.opt.Warn("spool mcp: " + msg) }
	return watch.Follow(ctx, env.Store.Log, wakes, readyTick, warn, func(b watch.Batch) {
		if b.First {
			s.followed.Do(func() { close(s.following) })
			return // nobody has seen anything to compare with yet
		}
		changed := map[string]bool{}
		readyMay := b.Tick
		for _, ev := range b.Events {
			switch {
			case strings.HasPrefix(ev.Type, "task."):
				changed[uriTask+ev.Subject] = true
				readyMay = true
			case strings.HasPrefix(ev.Type, "merge."):
				changed[uriMerge] = true
			case strings.HasPrefix(ev.Type, "job."):
				changed[uriJobs] = true
			}
		}
		if readyMay && s.readyChanged(ctx) {
			changed[uriReady] = true
		}
		s.notify(ctx, changed)
	})
}

// Following is closed once Follow has read the log as it stood when it
// started: every event appended after that is told to its subscribers.
func (s *Server) Following() <-chan struct{} { return s.following }

// readyChanged reads the ready queue for its subscribers and says whether
// it differs from the last reading.
func (s *Server) readyChanged(ctx context.Context) bool {
	s.smu.Lock()
	subscribed := s.readSubscribed()
	s.smu.Unlock()
	if !subscribed {
		return false
	}
	body, err := s.readResource(ctx, uriReady, func(ctx context.Context, env store.Env, _ string) (any, string, error) {
		return readyList(ctx, env, workqueue.ReadyFilter{}, readyTop)
	})
	if err != nil {
		s.opt.Warn(fmt.Sprintf("spool mcp: reading the ready queue: %v", err))
		return false
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	if bytes.Equal(body, s.ready) {
		return false
	}
	s.ready = body
	return true
}

// notify sends resources/updated for uris to their subscribers on every
// session.
func (s *Server) notify(ctx context.Context, uris map[string]bool) {
	if len(uris) == 0 {
		return
	}
	s.smu.Lock()
	servers := make([]*mcp.Server, 0, len(s.sessions))
	for _, srv := range s.sessions {
		servers = append(servers, srv)
	}
	s.smu.Unlock()
	for _, srv := range servers {
		for uri := range uris {
			srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}

// addPrompt adds the workflow prompt: agentguide's text, with the agent's
// task when the orchestrator started it.
func (s *Server) addPrompt(srv *mcp.Server) {
	srv.AddPrompt(&mcp.Prompt{Name: "workflow", Title: "Work on spool",
		Description: "How to work with spool's queues: the loop (ready, next, heartbeat, comment, done or fail) and the rules (propose, never close your own task)."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text := agentguide.Text(agentguide.Context{Task: s.opt.Task, Attempt: s.opt.Attempt})
			return &mcp.GetPromptResult{Description: "spool's workflow",
				Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}, nil
		})
}
