package board

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/table/tabletest"
)

// streamServer serves a board with no store (the event stream needs none)
// on a loopback port until the test ends.
func streamServer(t *testing.T, timeouts Timeouts) (*Server, string) {
	t.Helper()
	s := New(Options{Env: func() (store.Env, error) { return store.Env{}, errors.New("no store here") }, Timeouts: timeouts})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return s, ln.Addr().String()
}

// waitSubs waits until the hub has n streams.
func waitSubs(t *testing.T, s *Server, n int, why string) {
	t.Helper()
	limit := time.Now().Add(30 * time.Second)
	for {
		s.hub.mu.Lock()
		got := len(s.hub.subs)
		s.hub.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("%s: %d streams after 30s, want %d", why, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stream whose client stopped reading queues at most streamBytes (not
// streamQueue messages of any size), and is cut off once a write waits
// longer than Timeouts.Write: the server closes the connection.
func TestStuckStreamIsBoundedAndCutOff(t *testing.T) {
	s, addr := streamServer(t, Timeouts{Write: time.Second})
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return nil
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:7070\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/api/events: %v %v", res, err)
	}
	waitSubs(t, s, 1, "the stream never subscribed")

	// 32 MiB for a client that reads nothing, in messages of 256 KiB.
	msg := bytes.Repeat([]byte("x"), 256<<10)
	most := 0
	for range 128 {
		s.hub.publish(msg)
		s.hub.mu.Lock()
		for sb := range s.hub.subs {
			most = max(most, sb.queued)
			if len(sb.queue) > streamQueue {
				t.Errorf("%d messages queued, at most %d", len(sb.queue), streamQueue)
			}
		}
		s.hub.mu.Unlock()
	}
	if most > streamBytes {
		t.Errorf("a stuck stream queued %d bytes, at most %d", most, streamBytes)
	}
	if most < streamBytes/2 {
		t.Errorf("a stuck stream queued at most %d bytes: the client was not stuck, the test proves nothing", most)
	}
	waitSubs(t, s, 0, "the server kept a stream whose client reads nothing, with a write timeout of 1s")
	// The client gets what the socket buffers held, then the end.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the cut stream: %v", err)
	}
}

// The server's ReadTimeout bounds reading a request, not a stream: one
// open longer than it still gets messages (net/http clears the read
// deadline once it has read a request without a body: this holds the
// board's streams to that).
func TestStreamOutlivesReadTimeout(t *testing.T) {
	s, addr := streamServer(t, Timeouts{Read: 300 * time.Millisecond, ReadHeader: 300 * time.Millisecond})
	res, err := http.Get("http://" + addr + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	waitSubs(t, s, 1, "the stream never subscribed")
	time.Sleep(time.Second) // past the read timeout
	s.hub.publish([]byte(`{"type":"late"}`))
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				got <- sc.Text()
				return
			}
		}
		got <- "the stream ended: " + errors.Join(sc.Err(), io.EOF).Error()
	}()
	select {
	case line := <-got:
		if line != `data: {"type":"late"}` {
			t.Fatalf("got %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message in 10s")
	}
}

// A request that reads a mapped file something cut short in place ends
// that request (net/http recovers its panic), not the server by SIGBUS:
// the next request is answered.
func TestAMappedFileCutShortEndsOnlyItsRequest(t *testing.T) {
	s := New(Options{Env: func() (store.Env, error) { return store.Env{}, errors.New("no store here") }})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := s.HTTPServer()
	hs.ErrorLog = log.New(io.Discard, "", 0) // net/http's report of the recovered panic
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	addr := ln.Addr().String()
	data := tabletest.CutShort(t)
	s.mux.HandleFunc("GET /test/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Write(data[2<<12 : 2<<12+1]) // past the file's new end
	})
	if resp, err := http.Get("http://" + addr + "/test/cut"); err == nil {
		resp.Body.Close()
		t.Fatalf("the cut file was read: %s", resp.Status)
	}
	resp, err := http.Get("http://" + addr + "/assets/style.css")
	if err != nil {
		t.Fatalf("the server did not answer after: %v", err)
	}
	resp.Body.Close()
}
