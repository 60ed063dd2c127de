package board

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	"github.com/spoolhq/spool/internal/watch"
)

// recentMax is how many of the latest events the Activity view can show.
const recentMax = 2000

// hub hands what the follower reads to every open stream, and keeps the
// latest events for the Activity view.
type hub struct {
	mu     sync.Mutex
	subs   map[*sub]struct{}
	recent []*eventlog.Event // oldest first, at most recentMax
	status []byte            // the last build.status sent
}

// A stream queues at most streamQueue messages and streamBytes bytes (two
// of the largest lines the log takes) that its client has not taken yet.
const (
	streamQueue = 256
	streamBytes = 8 << 20
)

// sub is one stream's queue.
type sub struct {
	ready  chan struct{} // holds a value while queue may have messages
	queue  [][]byte      // guarded by hub.mu
	queued int           // bytes in queue
}

func newHub() *hub { return &hub{subs: map[*sub]struct{}{}} }

func (h *hub) subscribe() (*sub, func()) {
	sb := &sub{ready: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[sb] = struct{}{}
	h.mu.Unlock()
	return sb, func() {
		h.mu.Lock()
		delete(h.subs, sb)
		h.mu.Unlock()
	}
}

// takeAll empties sb's queue.
func (h *hub) takeAll(sb *sub) [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	msgs := sb.queue
	sb.queue, sb.queued = nil, 0
	return msgs
}

// publish sends one message to every stream. A stream whose queue is full
// (by count or bytes) misses the next ones: its page re-renders on the
// messages it does get, and a client that stopped reading is cut off by
// the write timeout.
func (h *hub) publish(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sb := range h.subs {
		if len(sb.queue) >= streamQueue || sb.queued > 0 && sb.queued+len(msg) > streamBytes {
			continue
		}
		sb.queue = append(sb.queue, msg)
		sb.queued += len(msg)
		select {
		case sb.ready <- struct{}{}:
		default:
		}
	}
}

func (h *hub) remember(evs []*eventlog.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recent = append(h.recent, evs...)
	if n := len(h.recent) - recentMax; n > 0 {
		h.recent = append(h.recent[:0:0], h.recent[n:]...)
	}
}

// latest returns up to n of the latest events that match, newest first.
func (h *hub) latest(n int, match func(*eventlog.Event) bool) []*eventlog.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*eventlog.Event
	for i := len(h.recent) - 1; i >= 0 && len(out) < n; i-- {
		if match(h.recent[i]) {
			out = append(out, h.recent[i])
		}
	}
	return out
}

// Follow keeps the pages live until ctx ends: it reads the log from the
// start, then again on every wake (watch.Follow), and sends each new event
// to the streams, then build.status when it changed.
func (s *Server) Follow(ctx context.Context, wakes <-chan struct{}) error {
	s.mu.Lock()
	env, err := s.opt.Env()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	warn := func(msg string) { s.opt.Warn("spool serve: " + msg) }
	return watch.Follow(ctx, env.Store.Log, wakes, statusEvery, warn, func(b watch.Batch) {
		s.hub.remember(b.Events)
		if b.First {
			s.publishStatus(ctx)
			return
		}
		for _, ev := range b.Events {
			if line, err := json.Marshal(ev); err == nil {
				s.hub.publish(line)
			}
		}
		// A backoff or a lease ran out (a tick): time alone changes what is ready.
		s.publishStatus(ctx)
	})
}

// statusEvery is how often build.status is computed without an event.
const statusEvery = 30 * time.Second

// publishStatus sends build.status (the active task and how many tasks
// wait) when it changed.
func (s *Server) publishStatus(ctx context.Context) {
	s.mu.Lock()
	env, err := s.opt.Env()
	var status orchservice.Status
	if err == nil {
		status, _, err = orchservice.Open(env).Status(ctx)
	}
	s.mu.Unlock()
	if err != nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"type": "build.status", "data": status})
	s.hub.mu.Lock()
	changed := !bytes.Equal(b, s.hub.status)
	s.hub.status = b
	s.hub.mu.Unlock()
	if changed {
		s.hub.publish(b)
	}
}

// keepAlive is how often an idle stream gets a comment, so that proxies
// and browsers keep it open.
const keepAlive = 25 * time.Second

// handleEvents is /api/events: Server-Sent Events, one event of the log
// per message, as the log has it (type, subject, data, …), and build.status
// as {"type":"build.status","data":{"currentTask":…,"queueDepth":…}}.
// Each write has Timeouts.Write to go through; a client that stopped
// reading is cut off then, and its queue (bounded, see publish) let go.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	sb, done := s.hub.subscribe()
	defer done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	// Each write and each flush gets Timeouts.Write afresh.
	deadline := func() { rc.SetWriteDeadline(time.Now().Add(s.timeouts.Write)) }
	message := func(msg []byte) bool {
		deadline()
		_, err := fmt.Fprintf(w, "data: %s\n\n", msg)
		return err == nil
	}
	flush := func() bool {
		deadline()
		return rc.Flush() == nil
	}
	deadline()
	w.WriteHeader(http.StatusOK)
	s.hub.mu.Lock()
	status := s.hub.status
	s.hub.mu.Unlock()
	if status != nil && !message(status) {
		return
	}
	if !flush() {
		return
	}
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	// ?output=1 (the Orchestrator view): the running agent's output on the
	// same stream, so a page holds one connection, not two.
	var output <-chan time.Time
	var out *outputFollower
	if r.URL.Query().Get("output") == "1" {
		out = &outputFollower{s: s, r: r}
		defer out.close()
		ot := time.NewTicker(outputPoll)
		defer ot.Stop()
		output = ot.C
		if !s.sendOutput(w, out, deadline) || !flush() {
			return
		}
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-output:
			if !s.sendOutput(w, out, deadline) {
				return
			}
		case <-sb.ready:
			for _, msg := range s.hub.takeAll(sb) { // what queued up goes in one flush
				if !message(msg) {
					return
				}
			}
		case <-t.C:
			deadline()
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		}
		if !flush() {
			return
		}
	}
}

// sendOutput writes the output follower's next message, if it has one.
func (s *Server) sendOutput(w http.ResponseWriter, out *outputFollower, deadline func()) bool {
	event, text, err := out.step()
	if err != nil {
		return false
	}
	if event == "" {
		return true
	}
	deadline()
	_, err = w.Write(outputMessage(event, text))
	return err == nil
}
