package board

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/spoolhq/spool/internal/fault"
)

// Error codes of the board.
var (
	CodeTokenRequired = fault.Register(fault.Rejected, "token_required")
	CodeOriginRefused = fault.Register(fault.Rejected, "origin_refused")
	CodeReadOnly      = fault.Register(fault.Rejected, "read_only")
	CodeHostRefused   = fault.Register(fault.Rejected, "host_refused")
	CodeBadRequest    = fault.Register(fault.Usage, "invalid_request")
	CodeBodyTooLarge  = fault.Register(fault.Usage, "body_too_large")
)

// cookieName is the browser's read session. Browsers send a host's
// cookies to every port on it, so any other server on 127.0.0.1 the
// browser visits receives it: it never holds the token and never writes.
// The page keeps the token in localStorage, which is per origin (scheme,
// host and port), and sends it as a header with each write. The port in
// the name keeps two boards on one machine apart.
func cookieName(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return "spool_read_" + port
	}
	return "spool_read"
}

// session is the read cookie's value for a token: a MAC of the token's
// hash under a key only this server holds, so the cookie names the
// token's actor without being the token, and nobody can make one.
func (s *Server) session(tokenHash string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("spool board read session\x00" + tokenHash))
	return hex.EncodeToString(m.Sum(nil))
}

// NewToken is a random token: 32 bytes, hex.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// HashToken is how serve.tokens names a token: its SHA-256 in hex.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// actorKey carries the actor a token maps to through a request's context.
type actorKey struct{}

// bearer is the token a request carries in its Authorization header: a
// script's, or the page's for a write.
func bearer(r *http.Request) string {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return strings.TrimSpace(h[len("Bearer "):])
	}
	return ""
}

// reader says who a read comes from: the bearer token's actor, or the read
// cookie's ("" for the serving process's own).
func (s *Server) reader(r *http.Request) (actor string, ok bool) {
	if actor, ok := s.check(bearer(r)); ok {
		return actor, true
	}
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return "", false
	}
	for session, actor := range s.sessions {
		if subtle.ConstantTimeCompare([]byte(c.Value), []byte(session)) == 1 {
			return actor, true
		}
	}
	return "", false
}

// check says whether token is valid and, for one of serve.tokens, the actor
// it acts as ("" for the serving process's own).
func (s *Server) check(token string) (actor string, ok bool) {
	if token == "" {
		return "", false
	}
	if s.opt.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.opt.Token)) == 1 {
		return "", true
	}
	actor, ok = s.opt.Actors[HashToken(token)]
	return actor, ok
}

// authorize passes a request that carries a valid token on, with the
// token's actor in its context.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, next http.Handler) {
	actor, ok := s.check(bearer(r))
	if !ok {
		s.fail(w, r, fault.New(CodeTokenRequired, nil,
			"this needs the token: open the login URL spool serve printed, or send Authorization: Bearer TOKEN"))
		return
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, actor)))
}

// authorizeRead is authorize for a read: the read cookie will do.
func (s *Server) authorizeRead(w http.ResponseWriter, r *http.Request, next http.Handler) {
	actor, ok := s.reader(r)
	if !ok {
		s.fail(w, r, fault.New(CodeTokenRequired, nil,
			"this needs the token: open the login URL spool serve printed, or send Authorization: Bearer TOKEN"))
		return
	}
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, actor)))
}

// read guards what only reads: open on loopback, behind the token when the
// board listens on other addresses. A valid token a loopback read carries
// still names its actor: the pages offer what that actor may do (an
// admin's drag on the Jobs view).
func (s *Server) read(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opt.Private {
			if actor, ok := s.reader(r); ok {
				r = r.WithContext(context.WithValue(r.Context(), actorKey{}, actor))
			}
			next.ServeHTTP(w, r)
			return
		}
		s.authorizeRead(w, r, next)
	})
}

// write guards what appends: not in --read-only, only from the board's own
// pages (Origin, Fetch Metadata), only with the token.
func (s *Server) write(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opt.ReadOnly {
			s.fail(w, r, fault.New(CodeReadOnly, nil, "spool serve runs --read-only: it takes no writes"))
			return
		}
		if !SameOrigin(r) {
			from := cmp.Or(r.Header.Get("Origin"), "Sec-Fetch-Site: "+r.Header.Get("Sec-Fetch-Site"))
			s.fail(w, r, fault.New(CodeOriginRefused, nil, "refused a write from another site ("+from+")", "origin", r.Header.Get("Origin")))
			return
		}
		s.authorize(w, r, next)
	})
}

// SameOrigin: a browser names the page a request comes from; a write must
// come from the server's own pages. Scripts (and MCP clients) send no
// Origin and rely on the token.
func SameOrigin(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host == r.Host
}

// handleLogin trades the one-time code printed at start (or a token) for
// the read cookie and a page whose script keeps the token in the origin's
// localStorage, then goes to the board.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if code := r.URL.Query().Get("code"); code != "" {
		s.mu.Lock()
		if s.login != "" && subtle.ConstantTimeCompare([]byte(code), []byte(s.login)) == 1 {
			token, s.login = s.opt.Token, "" // the code works once
		}
		s.mu.Unlock()
	}
	if _, ok := s.check(token); !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte("This login link was used already or is not valid.\nRestart spool serve for a new one, or use /login?token=TOKEN with a token of serve.tokens or --token-file.\n"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: s.session(HashToken(token)), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	layout().ExecuteTemplate(w, "login", token)
}

// newSessions keys the read cookies: by the start's token, or a random key
// when there is none. A cookie of an earlier start with another token is
// worth nothing.
func newSessions(s *Server) {
	s.secret = []byte(s.opt.Token)
	if len(s.secret) == 0 {
		s.secret = make([]byte, 32)
		rand.Read(s.secret)
	}
	s.sessions = map[string]string{}
	for hash, actor := range s.opt.Actors {
		s.sessions[s.session(hash)] = actor
	}
	if s.opt.Token != "" {
		s.sessions[s.session(HashToken(s.opt.Token))] = ""
	}
}

// canWrite is whether the pages should offer writes to this request.
func (s *Server) canWrite(r *http.Request) bool {
	if s.opt.ReadOnly {
		return false
	}
	_, ok := s.reader(r)
	return ok
}
