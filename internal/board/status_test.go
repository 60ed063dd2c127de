package board_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// Every kind of error gets the HTTP status of its kind, with 404, 403 and
// 401 for the codes that say so.
func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code string
		want int
	}{
		// What does not exist.
		{"not_found", fault.NotFound("task", "sp-x"), "not_found", http.StatusNotFound},
		{"task not found", workqueue.NoTask("sp-x"), "not_found", http.StatusNotFound},
		{"wrapped not_found", fmt.Errorf("show: %w", workqueue.NoTask("sp-x")), "not_found", http.StatusNotFound},
		{"job not found", fault.NotFound("job", "job-x"), "not_found", http.StatusNotFound},
		{"entry_not_found", mergequeue.EntryNotFound(7), "entry_not_found", http.StatusNotFound},
		{"entry ref not found", mergequeue.EntryRefNotFound("abcdef"), "entry_not_found", http.StatusNotFound},
		{"session_not_found", fault.New(mergequeue.CodeSessionNotFound, nil, "no such workspace"), "session_not_found", http.StatusNotFound},
		// What the actor may not do.
		{"unauthorized", fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized, "admins only"), "unauthorized", http.StatusForbidden},
		{"unauthorized_workspace", fault.New(mergequeue.CodeUnauthorizedWorkspace, nil, "not yours"), "unauthorized_workspace", http.StatusForbidden},
		{"unauthorized_entry_modification", mergequeue.UnauthorizedEntryModification("bob", 1, "alice"), "unauthorized_entry_modification", http.StatusForbidden},
		{"read_only", fault.New(board.CodeReadOnly, nil, "read-only"), "read_only", http.StatusForbidden},
		{"origin_refused", fault.New(board.CodeOriginRefused, nil, "another site"), "origin_refused", http.StatusForbidden},
		// A missing token.
		{"token_required", fault.New(board.CodeTokenRequired, nil, "token"), "token_required", http.StatusUnauthorized},
		// The server's own setup: 503.
		{"no_actor", fault.Usagef(fault.CodeNoActor, "no actor"), "no_actor", http.StatusServiceUnavailable},
		// Usage: 400.
		{"invalid_request", fault.New(board.CodeBadRequest, nil, "bad"), "invalid_request", http.StatusBadRequest},
		{"usage", fault.Usagef(fault.CodeUsage, "bad flag"), "usage", http.StatusBadRequest},
		// A body over the limit: 413.
		{"body_too_large", fault.New(board.CodeBodyTooLarge, nil, "too large"), "body_too_large", http.StatusRequestEntityTooLarge},
		{"invalid_priority", fault.New(fault.CodeInvalidPriority, nil, "p9"), "invalid_priority", http.StatusBadRequest},
		{"invalid_move", fault.Usagef(jobs.CodeInvalidMove, "where"), "invalid_move", http.StatusBadRequest},
		{"invalid_label", workqueue.ValidateLabel("a b"), "invalid_label", http.StatusBadRequest},
		{"invalid_entry_ref", mergequeue.InvalidEntryRef("zz"), "invalid_entry_ref", http.StatusBadRequest},
		{"invalid_event (a sentinel)", fmt.Errorf("%w: no type", eventlog.ErrInvalidDraft), "invalid_event", http.StatusBadRequest},
		// Rejected by a rule: 409.
		{"invalid_state_transition", fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition, "not blocked"), "invalid_state_transition", http.StatusConflict},
		{"already_claimed", fault.New(workqueue.CodeAlreadyClaimed, nil, "claimed"), "already_claimed", http.StatusConflict},
		{"entry_is_terminal", fault.New(mergequeue.CodeEntryIsTerminal, nil, "merged"), "entry_is_terminal", http.StatusConflict},
		{"version_conflict (a sentinel)", eventlog.ErrVersionMismatch, "version_conflict", http.StatusConflict},
		// The environment: 503.
		{"not_initialized", fault.New(store.CodeNotInitialized, store.ErrNotInitialized, "no .spool"), "not_initialized", http.StatusServiceUnavailable},
		{"lock_timeout (a sentinel)", fmt.Errorf("append: %w", eventlog.ErrLockTimeout), "lock_timeout", http.StatusServiceUnavailable},
		{"corrupt_log (a sentinel)", eventlog.ErrCorrupt, "corrupt_log", http.StatusServiceUnavailable},
		{"storage", &fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, "storage", http.StatusServiceUnavailable},
		{"already_running", fault.New(fault.CodeAlreadyRunning, nil, "running"), "already_running", http.StatusServiceUnavailable},
		// The rest: 500.
		{"unexpected", fault.New(fault.CodeUnexpected, nil, "bug"), "unexpected", http.StatusInternalServerError},
		{"a plain error", errors.New("boom"), "unexpected", http.StatusInternalServerError},
		{"interrupted", context.Canceled, "interrupted", http.StatusInternalServerError},
		{"a fault without a kind", &fault.Error{Code: "odd", Message: "odd"}, "odd", http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error to classify")
			}
			f := fault.Classify(tc.err)
			if f.Code != tc.code {
				t.Fatalf("classified as %s, want %s", f.Code, tc.code)
			}
			if got := board.Status(f); got != tc.want {
				t.Fatalf("Status(%s, kind %d) = %d, want %d", f.Code, f.Kind, got, tc.want)
			}
		})
	}
}

// A store the board cannot open answers every request with its error.
func TestEnvironmentError(t *testing.T) {
	notInit := fault.New(store.CodeNotInitialized, store.ErrNotInitialized, "/repo has no .spool directory; run spool init")
	srv := board.New(board.Options{Env: func() (store.Env, error) { return store.Env{}, notInit }, Token: token, Warn: func(string) {}})
	f := &fixture{t: t, srv: srv}
	wantError(t, f.get("/api/tasks"), http.StatusServiceUnavailable, "not_initialized")
	wantError(t, f.post("/api/tasks/sp-x/unblock", ""), http.StatusServiceUnavailable, "not_initialized")
	r := f.get("/tasks")
	wantPage(t, r, http.StatusServiceUnavailable)
	if !strings.Contains(r.body, "run spool init") || !strings.Contains(r.body, "code not_initialized") {
		t.Fatalf("/tasks:\n%s", r.body)
	}
	if err := srv.Follow(context.Background(), nil); err == nil || fault.Classify(err).Code != "not_initialized" {
		t.Fatalf("Follow: %v", err)
	}
}

func TestParseTokens(t *testing.T) {
	h1, h2 := board.HashToken("one"), board.HashToken("two")
	got, err := board.ParseTokens([]string{h1 + "=ada@example.com", " " + strings.ToUpper(h2) + " = Grace Hopper "})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[h1] != "ada@example.com" || got[h2] != "Grace Hopper" {
		t.Fatalf("ParseTokens: %v", got)
	}
	if got, err := board.ParseTokens(nil); err != nil || len(got) != 0 {
		t.Fatalf("no tokens: %v %v", got, err)
	}
	for _, bad := range []string{
		"ada@example.com",         // no hash
		h1,                        // no actor
		h1 + "=",                  // empty actor
		h1 + "=  ",                // blank actor
		h1[:63] + "=ada",          // too short
		h1 + "0=ada",              // too long
		"g" + h1[1:] + "=ada",     // not hex
		"one=ada",                 // a token, not its hash
		"=" + h1,                  // the wrong way round
		h1[:32] + " " + h1[32:63], // spaces inside
	} {
		if _, err := board.ParseTokens([]string{h1 + "=ok", bad}); err == nil {
			t.Errorf("ParseTokens accepted %q", bad)
		}
	}

	// config set refuses what ParseTokens refuses.
	cfg, err := config.Load(filepath.Join(t.TempDir(), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("serve.tokens", `["`+h1+`=ada"]`); err != nil {
		t.Fatalf("config set serve.tokens: %v", err)
	}
	if err := cfg.Set("serve.tokens", `["not-a-hash=ada"]`); err == nil {
		t.Fatal("config set accepted a bad serve.tokens")
	}
	if got := cfg.Strings("serve.tokens"); len(got) != 1 || !strings.HasPrefix(got[0], h1) {
		t.Fatalf("serve.tokens after a refused set: %v", got)
	}
}

// A config.json edited by hand with a bad serve.tokens falls back to no
// tokens (as config does for every key), so no one is let in by mistake.
func TestBadServeTokensInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"serve.tokens": ["nope=ada"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	actors, err := board.ParseTokens(cfg.Strings("serve.tokens"))
	if err != nil || len(actors) != 0 {
		t.Fatalf("actors %v, %v", actors, err)
	}
}

func TestTokens(t *testing.T) {
	sum := sha256.Sum256([]byte("abc"))
	if got := board.HashToken("abc"); got != hex.EncodeToString(sum[:]) || got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("HashToken(abc) = %s", got)
	}
	a, b := board.NewToken(), board.NewToken()
	if len(a) != 64 || strings.Trim(a, "0123456789abcdef") != "" || a == b {
		t.Fatalf("NewToken: %q, %q", a, b)
	}
}
