// Package board is spool serve: every queue as a web page and as JSON under
// /api/, kept live by following the log. Reads take no lock of the log (one
// request at a time uses the board's store); every write goes through the
// domains' services, the decide → append path the CLI takes, and its
// errors keep their codes, mapped to HTTP statuses.
package board

import (
	"bytes"
	"embed"
	"io/fs"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
)

//go:embed assets templates
var files embed.FS

// Options configure a Server.
type Options struct {
	// Env is what a request's services get: the store opened once, the
	// clock read again for every request.
	Env      func() (store.Env, error)
	ReadOnly bool   // no writes at all
	Private  bool   // reads need a token too (a non-loopback address)
	Token    string // this start's write token
	Login    string // the one-time code of the URL printed at start
	// Actors maps a token's SHA-256 (hex) to the actor it acts as
	// (serve.tokens); the start's token acts as the serving process.
	Actors map[string]string
	Warn   func(string)
	// Timeouts of HTTPServer; a zero field is DefaultTimeouts'.
	Timeouts Timeouts
}

// Server serves the board.
type Server struct {
	opt      Options
	timeouts Timeouts
	mux      *http.ServeMux
	hub      *hub

	// mu lets one request at a time use the store: a state read from it is
	// the store's own, caught up in place by the next read. A response is
	// rendered under it and written without it, so a client that reads
	// slowly, or not at all, holds up nobody else.
	mu    sync.Mutex
	login string // the one-time code, "" once used

	secret   []byte            // the read cookies' key
	sessions map[string]string // read cookie → the actor of its token

	closing   chan struct{} // closed by Close: the event streams end
	closeOnce sync.Once
}

// New makes a server; Follow must run for pages to update live.
func New(opt Options) *Server {
	s := &Server{opt: opt, timeouts: opt.Timeouts.withDefaults(), mux: http.NewServeMux(), hub: newHub(), login: opt.Login, closing: make(chan struct{})}
	parseTemplates() // a template that does not parse stops spool serve at its start
	newSessions(s)
	s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A snapshot read through a mapping that something cut short in place
	// faults where it is read: a panic net/http ends the request on, not
	// the server's end by SIGBUS.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if !s.opt.Private && !Loopback(r.Host) {
		// On loopback the reads need no token; a page elsewhere whose name
		// was rebound to 127.0.0.1 must not read them (DNS rebinding).
		s.fail(w, r, fault.New(CodeHostRefused, nil, "refused a request for host "+r.Host+": spool serve answers to 127.0.0.1, ::1 and localhost", "host", r.Host))
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /assets/{name}", serveAsset)
	m.HandleFunc("GET /login", s.handleLogin)
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/tasks", http.StatusFound) })

	for _, p := range pages {
		m.Handle("GET /"+p.Path, s.read(s.page(p)))
	}
	m.Handle("GET /tasks/{id}", s.read(s.page(taskPage)))
	m.Handle("GET /merge/{id}", s.read(s.page(mergeEntryPage)))
	m.Handle("GET /jobs/{id}", s.read(s.page(jobPage)))
	m.Handle("GET /jobs/{id}/segments/{n}/log", s.read(http.HandlerFunc(s.handleSegmentLog)))
	m.Handle("GET /prd/{feature}/{prd}", s.read(s.page(prdPage)))

	m.Handle("GET /api/events", s.read(http.HandlerFunc(s.handleEvents)))
	for path, fn := range apiReads {
		m.Handle("GET /api/"+path, s.read(s.api(fn)))
	}
	for path, fn := range apiWrites {
		m.Handle("POST /api/"+path, s.write(s.api(fn)))
	}
}

// Close ends the event streams (for http.Server.RegisterOnShutdown): the
// server's shutdown waits for the other requests, which a stream never
// finishes by itself.
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.closing) }) }

// Loopback says whether a host, or a Host header's host:port, names this
// machine only.
func Loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// assets are the files under assets/, by name, read at the first request.
var assets = sync.OnceValue(func() map[string][]byte {
	m := map[string][]byte{}
	entries, _ := fs.ReadDir(files, "assets")
	for _, e := range entries {
		b, err := fs.ReadFile(files, "assets/"+e.Name())
		if err != nil {
			panic(err) // embedded at build time
		}
		m[e.Name()] = b
	}
	return m
})

// serveAsset serves one of assets by its exact name, and nothing else: no
// directory listing, no path that walks out of assets/ however it is
// spelled (the templates stay unseen).
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, ok := assets()[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}
