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

// outputFollower follows the running agent's output for one event stream
// (/api/events?output=1): at its first step a "reset" with the end of the
// file (empty when no agent runs), then an "append" with what was written
// since at each step, and a "reset" again when another attempt starts or
// the file is truncated. The file is the one spool watch writes under
// runs, never one the log names (agentOutput).
type outputFollower struct {
	s     *Server
	r     *http.Request
	steps int
	cur   string // the running attempt's file, looked up once a second
	path  string // the file f is
	f     *os.File
	off   int64
}

func (o *outputFollower) close() {
	if o.f != nil {
		o.f.Close()
	}
}

// step is the message to send now: its event ("" for none) and data.
func (o *outputFollower) step() (event string, text []byte, err error) {
	first := o.steps == 0
	if o.steps%4 == 0 {
		o.cur = o.s.agentOutputPath(o.r) // under the board's lock: once a second, not at each look
	}
	o.steps++
	size := int64(-1)
	if o.f != nil {
		if st, err := o.f.Stat(); err == nil {
			size = st.Size()
		}
	}
	again := first || o.cur != o.path || size >= 0 && size < o.off
	if !again && o.f == nil && o.cur != "" {
		// The attempt's file did not exist (or was no regular file) yet.
		if o.f = openRegular(o.cur); o.f != nil {
			again = true
		}
	}
	if again {
		// Another attempt, the file there at last, or truncated: start
		// again, from one open file (its end and the offset after it read
		// from the same file).
		if o.f != nil && (o.cur != o.path || size >= 0 && size < o.off) {
			o.f.Close()
			o.f = nil
		}
		if o.f == nil && o.cur != "" {
			o.f = openRegular(o.cur)
		}
		o.path, o.off = o.cur, 0
		tail := []byte{}
		if o.f != nil {
			tail, o.off = endOf(o.f)
		}
		return "reset", tail, nil
	}
	if o.f == nil || size <= o.off {
		return "", nil, nil
	}
	buf := make([]byte, min(size-o.off, outputChunk))
	n, err := o.f.ReadAt(buf, o.off)
	if err != nil && err != io.EOF {
		return "", nil, err
	}
	buf = wholeRunes(buf[:n])
	o.off += int64(len(buf))
	if len(buf) == 0 {
		return "", nil, nil
	}
	return "append", buf, nil
}

// outputMessage is one of outputFollower's messages on the wire: its data
// a JSON string.
func outputMessage(event string, text []byte) []byte {
	data, _ := json.Marshal(string(text))
	return fmt.Appendf(nil, "event: %s\ndata: %s\n\n", event, data)
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
