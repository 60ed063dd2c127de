package board_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/workqueue"
)

// bound is how long a request may take while another client is stuck: far
// more than any of them needs, so that only a request that waits on the
// stuck one misses it.
const bound = 10 * time.Second

// bigBoard is a fixture with 20,000 tasks, each with a description:
// /api/tasks is about 10 MB, far more than a loopback socket's buffers
// take from a client that never reads.
func bigBoard(t *testing.T) (*fixture, seed) {
	t.Helper()
	f := newFixture(t)
	s := f.seed()
	now := f.clock()
	recs := make([]workqueue.TaskJSON, 20000)
	desc := strings.Repeat("so that the answer is large. ", 10)
	for i := range recs {
		recs[i] = workqueue.TaskJSON{ID: fmt.Sprintf("sp-big%05d", i), Title: fmt.Sprint("bulk task ", i), Description: desc,
			Status: workqueue.StatusOpen, Priority: 3, IssueType: "task", CreatedAt: now, UpdatedAt: now}
	}
	if _, err := f.wq(alice).Import(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	return f, s
}

// serving serves srv on a loopback port until the test ends, and reports
// each connection's last state by its client's address.
type serving struct {
	addr string
	mu   sync.Mutex
	conn map[string]http.ConnState
	ch   chan struct{} // a value on every change of state
}

func serve(t *testing.T, srv *board.Server) *serving {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sv := &serving{addr: ln.Addr().String(), conn: map[string]http.ConnState{}, ch: make(chan struct{}, 1)}
	hs := srv.HTTPServer()
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		sv.mu.Lock()
		sv.conn[c.RemoteAddr().String()] = st
		sv.mu.Unlock()
		select {
		case sv.ch <- struct{}{}:
		default:
		}
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return sv
}

func (sv *serving) state(client net.Conn) http.ConnState {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.conn[client.LocalAddr().String()]
}

// stuckClient asks for path and reads only the start of the answer (so the
// server is writing it), then nothing more.
func stuckClient(t *testing.T, sv *serving, path string) (net.Conn, int) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return nil
	}}
	c, err := d.Dial("tcp", sv.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:7070\r\n\r\n", path)
	c.SetReadDeadline(time.Now().Add(bound))
	res, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil)
	if err != nil {
		t.Fatalf("the stuck client's answer: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the stuck client's answer: %s", res.Status)
	}
	size, err := strconv.Atoi(res.Header.Get("Content-Length"))
	if err != nil || size < 8<<20 {
		t.Fatalf("%s is %q bytes: too small to get stuck", path, res.Header.Get("Content-Length"))
	}
	return c, size
}

// A client that asks for /api/tasks on a large board and never reads the
// answer holds up nobody: pages, the API and a write all complete while it
// stays connected (the answer is rendered under the board's lock and
// written without it).
func TestStuckClientHoldsUpNobody(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 tasks")
	}
	f, s := bigBoard(t)
	// No write timeout to speak of: the stuck client stays for the test.
	opt := f.opt
	opt.Timeouts.Write = time.Hour
	sv := serve(t, board.New(opt))
	stuck, _ := stuckClient(t, sv, "/api/tasks")

	client := &http.Client{Timeout: bound}
	do := func(method, path string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+sv.addr+path, nil)
		if method == http.MethodPost {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s while a client does not read /api/tasks: %v", method, path, err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s %v\n%.300s", method, path, res.Status, err, body)
		}
	}
	for _, path := range []string{"/tasks", "/tasks/" + s.docs, "/jobs", "/api/ready?n=5", "/api/tasks?label=ops", "/activity"} {
		do(http.MethodGet, path)
	}
	do(http.MethodPost, "/api/tasks/"+s.flaky+"/unblock")
	do(http.MethodGet, "/api/tasks") // a second reader of the large answer, who reads it

	// Still stuck: otherwise the test proved nothing.
	if st := sv.state(stuck); st != http.StateActive {
		t.Fatalf("the stuck client's connection is %v, want active (its answer still being written)", st)
	}
}

// The server cuts off a client that stopped reading once a write of its
// answer waits longer than Timeouts.Write, and closes the connection.
func TestStuckClientIsCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 tasks")
	}
	f, _ := bigBoard(t)
	opt := f.opt
	opt.Timeouts.Write = time.Second
	sv := serve(t, board.New(opt))
	stuck, size := stuckClient(t, sv, "/api/tasks")

	limit := time.After(30 * time.Second)
	for sv.state(stuck) != http.StateClosed {
		select {
		case <-sv.ch:
		case <-limit:
			t.Fatalf("the server kept a client that reads nothing for 30s with a write timeout of 1s (state %v)", sv.state(stuck))
		}
	}
	// What the client gets is what the socket buffers held, then the end.
	stuck.SetReadDeadline(time.Now().Add(bound))
	n, err := io.Copy(io.Discard, stuck)
	if err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the cut answer: %v", err)
	}
	if n >= int64(size) {
		t.Fatalf("the client got %d bytes of %d after the server gave up on it", n, size)
	}
}
