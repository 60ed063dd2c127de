package board

import (
	"net/http"
	"strconv"
	"time"
)

// Timeouts bound what one client can hold of the board: a connection, a
// goroutine and the response it has not read. None of them holds the
// board's lock: a response is rendered under it into a buffer and written
// after.
type Timeouts struct {
	ReadHeader time.Duration // to read a request's headers
	Read       time.Duration // to read a whole request, body included
	// Write is how long one write of a response may wait on the client:
	// each chunk of a large answer and each message of the event stream
	// gets it afresh, so a slow reader gets everything and one that stopped
	// reading is cut off.
	Write time.Duration
	Idle  time.Duration // a kept-alive connection between requests
}

// DefaultTimeouts are spool serve's.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 2 * time.Minute}

// withDefaults fills in what t leaves zero.
func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts
	for _, p := range []struct{ v, def *time.Duration }{{&t.ReadHeader, &d.ReadHeader}, {&t.Read, &d.Read}, {&t.Write, &d.Write}, {&t.Idle, &d.Idle}} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	return t
}

// HTTPServer is the http.Server that serves s with its timeouts; its
// Shutdown ends the event streams (Close), which never finish by
// themselves.
func (s *Server) HTTPServer() *http.Server {
	t := s.timeouts
	hs := &http.Server{Handler: s, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
	hs.RegisterOnShutdown(s.Close)
	return hs
}

// chunk is how much of a response goes out per write (see Timeouts.Write).
const chunk = 64 << 10

// send writes a response rendered already, a chunk at a time, each with
// Timeouts.Write to go through. A write that fails has lost the client:
// the server closes the connection when the handler returns.
func (s *Server) send(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(s.timeouts.Write)) // not supported by httptest's recorder: nothing to bound there
	w.WriteHeader(status)
	for len(body) > 0 {
		n := min(len(body), chunk)
		rc.SetWriteDeadline(time.Now().Add(s.timeouts.Write))
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		body = body[n:]
	}
}
