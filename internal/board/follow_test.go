package board_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/workqueue"
)

// message is one message of /api/events: an event of the log, or build.status.
type message struct {
	Type    string          `json:"type"`
	Subject string          `json:"subject"`
	Actor   string          `json:"actor"`
	Data    json.RawMessage `json:"data"`
}

// stream is an open /api/events.
type stream struct {
	t    *testing.T
	msgs chan string
}

// openStream opens /api/events on ts until the test ends.
func openStream(t *testing.T, ts *httptest.Server, header map[string]string) (*stream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api/events", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &stream{t: t, msgs: make(chan string, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.msgs)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				s.msgs <- data
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		res.Body.Close()
		<-done
	})
	return s, res
}

// next is the stream's next message.
func (s *stream) next() message {
	s.t.Helper()
	select {
	case data, ok := <-s.msgs:
		if !ok {
			s.t.Fatal("the stream ended")
		}
		var m message
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			s.t.Fatalf("a message that is not JSON: %v\n%s", err, data)
		}
		return m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no message in 10s")
	}
	return message{}
}

// status checks that the next message is build.status, and returns its queue depth.
func (s *stream) status() (depth int, current json.RawMessage) {
	s.t.Helper()
	return s.statusOf(s.next())
}

// statusOf is the queue depth and current task of m, a build.status.
func (s *stream) statusOf(m message) (depth int, current json.RawMessage) {
	s.t.Helper()
	if m.Type != "build.status" {
		s.t.Fatalf("got %s %s, want build.status", m.Type, m.Subject)
	}
	var st struct {
		CurrentTask json.RawMessage `json:"currentTask"`
		QueueDepth  *int            `json:"queueDepth"`
	}
	if err := json.Unmarshal(m.Data, &st); err != nil || st.QueueDepth == nil || st.CurrentTask == nil {
		s.t.Fatalf("build.status %s: %v", m.Data, err)
	}
	return *st.QueueDepth, st.CurrentTask
}

// event checks that the next message is an event of type about subject.
func (s *stream) event(typ, subject, actor string) message {
	s.t.Helper()
	m := s.next()
	if m.Type != typ || m.Subject != subject || m.Actor != actor {
		s.t.Fatalf("got %s %s by %s, want %s %s by %s", m.Type, m.Subject, m.Actor, typ, subject, actor)
	}
	return m
}

func TestEvents(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	caughtUp := f.follow()
	caughtUp()
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close) // after the streams' cleanups end them

	st, res := openStream(t, ts, nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("/api/events: %d %v", res.StatusCode, res.Header)
	}
	// It starts with the current build.status; what the log had before is
	// not sent again.
	if depth, current := st.status(); depth != 2 || string(current) != "null" {
		t.Fatalf("build.status: depth %d, current task %s", depth, current)
	}

	// A task another process adds: its event, then build.status (one more ready).
	id := f.add(workqueue.NewTask{Title: "Live", Priority: 0})
	caughtUp()
	m := st.event(workqueue.TypeCreated, id, alice)
	if !strings.Contains(string(m.Data), `"title":"Live"`) {
		t.Fatalf("task.created data %s", m.Data)
	}
	if depth, _ := st.status(); depth != 3 {
		t.Fatalf("build.status after the add: depth %d, want 3", depth)
	}

	// What leaves build.status as it was sends no build.status.
	job := f.submitJob(bob, "sweep")
	caughtUp()
	if _, err := f.wq(alice).Comment(context.Background(), id, "on it"); err != nil {
		t.Fatal(err)
	}
	caughtUp()
	st.event(jobs.TypeSubmitted, job, bob)
	st.event(workqueue.TypeCommented, id, alice)

	// A write through the board itself is streamed the same way.
	wantStatus(t, f.post("/api/tasks/"+s.flaky+"/unblock", ""), http.StatusOK)
	caughtUp()
	st.event(workqueue.TypeUnblocked, s.flaky, alice)
	if depth, _ := st.status(); depth != 4 {
		t.Fatalf("build.status after the unblock: depth %d, want 4", depth)
	}

	// Several events arrive in the log's order. (Follow may still be
	// handling caughtUp's last wake while they are appended, and read them
	// in one pass or two: a build.status may come between.)
	a := f.add(workqueue.NewTask{Title: "A", Priority: 4})
	b := f.add(workqueue.NewTask{Title: "B", Priority: 4})
	caughtUp()
	st.event(workqueue.TypeCreated, a, alice)
	m = st.next()
	between := -1
	if m.Type == "build.status" {
		between, _ = st.statusOf(m)
		m = st.next()
	}
	if m.Type != workqueue.TypeCreated || m.Subject != b {
		t.Fatalf("got %s %s, want the task.created of %s", m.Type, m.Subject, b)
	}
	// build.status goes out when it changed: one between the two, computed
	// once B was appended, counts both already, and none follows.
	if between != 6 {
		if depth, _ := st.status(); depth != 6 {
			t.Fatalf("build.status after two adds: depth %d, want 6", depth)
		}
	}

	// A stream opened later starts with the build.status of now.
	later, _ := openStream(t, ts, nil)
	if depth, _ := later.status(); depth != 6 {
		t.Fatalf("a later stream's build.status: depth %d", depth)
	}
	f.closeTask(a)
	caughtUp()
	for _, s := range []*stream{st, later} {
		s.event(workqueue.TypeClosed, a, alice)
		if depth, _ := s.status(); depth != 5 {
			t.Fatalf("build.status after the close: depth %d, want 5", depth)
		}
	}

	// The Activity view lists what Follow read, newest first.
	r := f.get("/activity")
	if i, j := strings.Index(r.body, `href="/tasks/`+b+`"`), strings.Index(r.body, `href="/tasks/`+a+`"`); i < 0 || j < 0 || j > i {
		t.Fatalf("/activity: %s at %d, %s at %d: want the newest (%s, closed last) first", b, i, a, j, a)
	}
}

// In private mode the stream needs the token, or the read cookie that a
// browser's EventSource sends.
func TestEventsPrivate(t *testing.T) {
	f := newFixture(t, func(o *board.Options) { o.Private = true })
	f.follow()()
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close) // after the streams' cleanups end them
	res, err := ts.Client().Get(ts.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/api/events without the token: %d", res.StatusCode)
	}
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	read := readCookie(f, token) // the fixture's Host is 127.0.0.1:7070
	st, res := openStream(t, ts, map[string]string{"Cookie": "spool_read_" + port + read[strings.IndexByte(read, '='):]})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/api/events with the token: %d", res.StatusCode)
	}
	if depth, _ := st.status(); depth != 0 {
		t.Fatalf("build.status: depth %d", depth)
	}
}

// Requests, the board's own writes, another process's writes and Follow
// all at once: each request has the store to itself, Follow reads the log
// beside them (go test -race checks they share nothing unguarded).
func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t)
	s := f.seed()
	caughtUp := f.follow()
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	st, _ := openStream(t, ts, nil)
	st.status()

	const rounds = 10
	errs := make(chan error, 100)
	done := make(chan struct{})
	go func() { // the board's writes
		defer func() { done <- struct{}{} }()
		for i := range rounds {
			what := []string{"pause", "resume"}[i%2]
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/jobs/"+s.job1+"/"+what, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := ts.Client().Do(req)
			if err != nil {
				errs <- err
				return
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("%s: %d", what, res.StatusCode)
			}
		}
	}()
	for _, path := range []string{"/api/tasks", "/tasks", "/jobs", "/api/orchestrator/status", "/activity"} {
		go func() { // reads
			defer func() { done <- struct{}{} }()
			for range rounds {
				res, err := ts.Client().Get(ts.URL + path)
				if err != nil {
					errs <- err
					return
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("%s: %d", path, res.StatusCode)
				}
			}
		}()
	}
	// Another process's writes, and wakes, meanwhile.
	var added []string
	for i := range rounds {
		added = append(added, f.add(workqueue.NewTask{Title: fmt.Sprint("concurrent ", i), Priority: 3}))
		caughtUp()
	}
	for range 6 {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	caughtUp()
	// The stream had every event, each once, in the log's order.
	want := map[string]bool{}
	for _, id := range added {
		want[id] = true
	}
	var pauses int
	for len(want) > 0 || pauses < rounds {
		m := st.next()
		switch {
		case m.Type == workqueue.TypeCreated && want[m.Subject]:
			delete(want, m.Subject)
		case m.Type == jobs.TypePaused || m.Type == jobs.TypeResumed:
			pauses++
		case m.Type == "build.status":
		default:
			t.Fatalf("unexpected %s %s", m.Type, m.Subject)
		}
	}
}

// A log damaged under the board (a line it has read edited) stops Follow
// with corrupt_log, as it stops every command; what it read before the
// damage was sent.
func TestFollowStopsOnACorruptLog(t *testing.T) {
	f := newFixture(t)
	f.add(workqueue.NewTask{Title: "first"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wakes := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- f.srv.Follow(ctx, wakes) }()
	files, err := f.st.Log.Files()
	if err != nil || len(files) != 1 {
		t.Fatalf("writer files %v: %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the board has read the first line, then change it.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(f.get("/activity").body, "task.created") {
		if time.Now().After(deadline) {
			t.Fatal("the board never read the log")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(files[0], bytes.Replace(b, []byte(`"first"`), []byte(`"FIRST"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	wakes <- struct{}{}
	select {
	case err := <-done:
		if !errors.Is(err, eventlog.ErrCorrupt) {
			t.Fatalf("Follow returned %v, want corrupt_log", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow went on over a damaged log")
	}
}
