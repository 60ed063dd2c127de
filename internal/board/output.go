package board

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
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
	cur := ""
	for tick := 0; ; tick++ {
		first := tick == 0
		if tick%4 == 0 {
			cur = s.agentOutputPath(r) // under the board's lock: once a second, not at each look
		}
		size := int64(-1)
		if f != nil {
			if st, err := f.Stat(); err == nil {
				size = st.Size()
			}
		}
		again := first || cur != path || size >= 0 && size < off
		if !again && f == nil && cur != "" {
			// The attempt's file did not exist (or was no regular file) yet.
			if f = openRegular(cur); f != nil {
				again = true
			}
		}
		if again {
			// Another attempt, the file there at last, or truncated: start
			// again, from one open file (its end and the offset after it
			// read from the same file).
			if f != nil && (cur != path || size >= 0 && size < off) {
				f.Close()
				f = nil
			}
			if f == nil && cur != "" {
				f = openRegular(cur)
			}
			path, off = cur, 0
			tail := []byte{}
			if f != nil {
				tail, off = endOf(f)
			}
			if !send("reset", tail) {
				return
			}
		} else if f != nil && size > off {
			buf := make([]byte, min(size-off, outputChunk))
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

// openRegular opens path for reading only if it is a regular file, without
// blocking on anything else (a FIFO put in the log's place would hold the
// stream forever); nil otherwise.
func openRegular(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil
	}
	return f
}

// endOf is the end of f as the page shows it (the last tailLines lines, at
// most tailBytes, starting at a line), with its last newline, and the
// offset the next read starts at.
func endOf(f *os.File) ([]byte, int64) {
	st, err := f.Stat()
	if err != nil {
		return []byte{}, 0
	}
	size := st.Size()
	from := max(0, size-tailBytes)
	b := make([]byte, size-from)
	n, _ := f.ReadAt(b, from)
	b = b[:n]
	if from > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // the first line is cut
		}
	}
	for lines := bytes.Count(b, []byte{'\n'}); lines > tailLines; lines-- {
		b = b[bytes.IndexByte(b, '\n')+1:]
	}
	return wholeRunes(b), from + int64(n) - int64(len(b)-len(wholeRunes(b)))
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
	if path, ok := agentOutput(store.RunsDir(env.Store.Repo), st.ActiveTask); ok {
		return path
	}
	return ""
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
