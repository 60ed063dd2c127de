package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/fault"
)

// HTTPOptions are the board's token rules (spool serve), for MCP's
// streamable HTTP.
type HTTPOptions struct {
	// Private: every request needs a token (an address off loopback).
	// Otherwise a request
	// without one gets the read tools only, as the board's pages read
	// without a token on loopback.
	Private bool
	// Token is this start's token: it acts as the server's actor, with
	// every tool of the allow-list.
	Token string
	// Actors maps a token's SHA-256 (hex) to the actor it acts as
	// (serve.tokens), with every tool of the allow-list.
	Actors map[string]string
}

// identity is who a request acts as: an actor ("" for the server's own)
// and the tools it has (nil: the allow-list).
type identity struct {
	actor string
	tools []string
}

type identityKey struct{}

// sessionHeader is where streamable HTTP keeps the session.
const sessionHeader = "Mcp-Session-Id"

// maxBody bounds a request: a proposal of the most tasks spool takes (1
// MiB) with room for its JSON-RPC envelope.
const maxBody = 4 << 20

// HTTPHandler serves MCP's streamable HTTP under the board's rules: on
// loopback only requests for 127.0.0.1, ::1 or localhost (a web page that
// rebinds its name to this machine reads nothing), never a request a web
// page of another site sends, the token for writes (and for everything
// when Private). A session is bound to the identity that opened it: a
// request of another token gets token_required, whatever session id it
// presents.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		id, _ := r.Context().Value(identityKey{}).(identity)
		return s.session(id.actor, id.tools, tag(id))
	}, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !o.Private && !board.Loopback(r.Host) {
			httpError(w, fault.New(board.CodeHostRefused, nil, "refused a request for host "+r.Host+": spool mcp answers to 127.0.0.1, ::1 and localhost", "host", r.Host))
			return
		}
		if !sameOrigin(r) {
			from := cmp.Or(r.Header.Get("Origin"), "Sec-Fetch-Site: "+r.Header.Get("Sec-Fetch-Site"))
			httpError(w, fault.New(board.CodeOriginRefused, nil, "refused a request from a web page ("+from+")", "origin", r.Header.Get("Origin")))
			return
		}
		id, ok := o.identify(r)
		if !ok {
			httpError(w, fault.New(board.CodeTokenRequired, nil, "this needs the token: send Authorization: Bearer TOKEN"))
			return
		}
		if sid := r.Header.Get(sessionHeader); sid != "" && !strings.HasPrefix(sid, tag(id)+"-") {
			httpError(w, fault.New(board.CodeTokenRequired, nil, "this session was opened with another token: open a session of your own"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// identify is who r acts as: a valid token's identity; without a token the
// read tools, unless Private. A token that is not valid is refused.
func (o HTTPOptions) identify(r *http.Request) (identity, bool) {
	h := r.Header.Get("Authorization")
	token, bearer := strings.CutPrefix(h, "Bearer ")
	token = strings.TrimSpace(token)
	switch {
	case !bearer || token == "":
		return identity{tools: Sets["read"]}, !o.Private
	case o.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(o.Token)) == 1:
		return identity{}, true
	}
	actor, ok := o.Actors[board.HashToken(token)]
	return identity{actor: actor}, ok
}

// tag names an identity in the ids of its sessions, without the token.
func tag(id identity) string {
	sum := sha256.Sum256([]byte("spool mcp\x00" + id.actor + "\x00" + joinNames(id.tools)))
	return hex.EncodeToString(sum[:8])
}

// sameOrigin: MCP clients send no Origin; a browser names the page a
// request comes from, and a page may not drive spool's tools (the MCP
// specification asks servers to check it).
func sameOrigin(r *http.Request) bool {
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

// httpError answers with the error as the board does: the CLI's --json error
// object and the HTTP status of its kind.
func httpError(w http.ResponseWriter, err error) {
	f := fault.Classify(err)
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(map[string]any{"error": f.Object()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(board.Status(f))
	w.Write(buf.Bytes())
}
