package board

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
)

// recentMax is how many of the latest events the Activity view can show.
const recentMax = 2000

// hub hands what the follower reads to every open stream, and keeps the
// latest events for the Activity view.
type hub struct {
	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	recent []*eventlog.Event // oldest first, at most recentMax
	status []byte            // the last build.status sent
}

func newHub() *hub { return &hub{subs: map[chan []byte]struct{}{}} }

func (h *hub) subscribe() (chan []byte, func()) {
	ch := make(chan []byte, 256)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// publish sends one message to every stream. A stream 256 messages behind
// misses the next ones: its page re-renders on the messages it does get.
func (h *hub) publish(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- msg:
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
// start, then again on every wake, and sends each new event to the
// streams, then build.status when it changed.
func (s *Server) Follow(ctx context.Context, wakes <-chan struct{}) error {
	s.mu.Lock()
	env, err := s.opt.Env()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	log := env.Store.Log
	from := map[string]eventlog.Start{}
	if _, err := s.readNew(log, from); err != nil {
		return err
	}
	s.publishStatus(ctx)
	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s.publishStatus(ctx) // a backoff or a lease ran out: time alone changes what is ready
			continue
		case <-wakes:
		}
		evs, err := s.readNew(log, from)
		for _, ev := range evs { // what was read before an error too
			line, err := json.Marshal(ev)
			if err == nil {
				s.hub.publish(line)
			}
		}
		if len(evs) > 0 {
			s.publishStatus(ctx)
		}
		if errors.Is(err, eventlog.ErrCorrupt) {
			return err // as every command would stop: spool doctor --repair
		}
		if err != nil {
			s.opt.Warn(fmt.Sprintf("spool serve: reading the log: %v", err))
		}
	}
}

// statusEvery is how often build.status is computed without an event.
const statusEvery = 30 * time.Second

// readNew reads the events appended since from, and moves from past them.
func (s *Server) readNew(log *eventlog.Log, from map[string]eventlog.Start) ([]*eventlog.Event, error) {
	rd, err := log.Read(from)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var evs []*eventlog.Event
	for {
		ev, pos, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.hub.remember(evs)
			return evs, err
		}
		from[pos.Writer] = pos.Start()
		evs = append(evs, ev)
	}
	s.hub.remember(evs)
	return evs, nil
}

// publishStatus sends seed 004's build.status when it changed.
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
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, done := s.hub.subscribe()
	defer done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	s.hub.mu.Lock()
	status := s.hub.status
	s.hub.mu.Unlock()
	if status != nil {
		fmt.Fprintf(w, "data: %s\n\n", status)
	}
	fl.Flush()
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case msg := <-ch:
			fmt.Fprintf(w, "data: %s\n\n", msg)
			for n := len(ch); n > 0; n-- { // what queued up goes in one write
				fmt.Fprintf(w, "data: %s\n\n", <-ch)
			}
			fl.Flush()
		case <-t.C:
			io.WriteString(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}
