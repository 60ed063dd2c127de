package board

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
	"unicode/utf8"

	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	"github.com/spoolhq/spool/internal/store"
)

// outputPoll is how often the stream of the agent's output looks for more;
// outputChunk is the most one message carries.
const (
	outputPoll  = 250 * time.Millisecond
	outputChunk = 64 << 10
)

// handleOutput streams the running agent's output as it grows (Server-Sent
// Events): a "reset" with the end of the file when the page connects or
// another attempt starts (an empty one when no agent runs), then "append"
// with what was written since. Each message's data is a JSON string. The
// file is the one spool watch writes under runs, never one the log names
// (agentOutput).
func (s *Server) handleOutput(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	send := func(event string, text []byte) bool {
		data, _ := json.Marshal(string(text))
		rc.SetWriteDeadline(time.Now().Add(s.timeouts.Write))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.WriteHeader(http.StatusOK)
	var (
		path string
		f    *os.File
		off  int64
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	t := time.NewTicker(outputPoll)
	defer t.Stop()
	for first := true; ; first = false {
		cur := s.agentOutputPath(r)
		st, err := os.Stat(cur)
		switch {
		case first || cur != path || err != nil && f != nil || err == nil && st.Size() < off:
			// Another attempt, the file gone, or truncated: start again.
			if f != nil {
				f.Close()
				f = nil
			}
			path, off = cur, 0
			tail := ""
			if err == nil {
				tail = orchservice.Tail(cur, tailLines, tailBytes)
				off = st.Size()
				f, _ = os.Open(cur)
			}
			if !send("reset", []byte(tail)) {
				return
			}
		case f != nil && st.Size() > off:
			buf := make([]byte, min(st.Size()-off, outputChunk))
			n, err := f.ReadAt(buf, off)
			if err != nil && err != io.EOF {
				return
			}
			buf = wholeRunes(buf[:n])
			off += int64(len(buf))
			if len(buf) > 0 && !send("append", buf) {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-t.C:
		}
	}
}

// agentOutputPath is the running agent's output file, or "" when none runs.
func (s *Server) agentOutputPath(r *http.Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	env, err := s.env(r)
	if err != nil {
		return ""
	}
	st, err := orchservice.Open(env).Read(r.Context())
	if err != nil || st.ActiveTask == nil {
		return ""
	}
	path, _ := agentOutput(store.RunsDir(env.Store.Repo), st.ActiveTask)
	return path
}

// wholeRunes is b without a UTF-8 sequence its end cuts in two: the rest
// comes with the next read.
func wholeRunes(b []byte) []byte {
	for i := 1; i <= min(3, len(b)); i++ {
		if c := b[len(b)-i]; c&0xC0 != 0x80 { // the last sequence's first byte
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
