package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"time"
)

// Filter selects events as spool log's flags do: types (path.Match
// patterns, any of them), a subject, an actor, and a time from which on.
// The zero Filter takes every event.
type Filter struct {
	Types          []string
	Subject, Actor string
	Since          time.Time
}

// ErrFilter is a filter's value that cannot be used: a type pattern that
// is not one, a since that is neither a time nor a duration.
var ErrFilter = errors.New("invalid filter")

// ParseFilter checks patterns and reads since: an RFC 3339 time, or a
// duration back from now (2h). The error names what is wrong.
func ParseFilter(types []string, subject, actor, since string, now time.Time) (Filter, error) {
	f := Filter{Types: types, Subject: subject, Actor: actor}
	for _, t := range types {
		if _, err := path.Match(t, ""); err != nil {
			return f, fmt.Errorf("%w: type %q is not a valid pattern", ErrFilter, t)
		}
	}
	if since != "" {
		if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
			f.Since = t
		} else if d, err := time.ParseDuration(since); err == nil && d >= 0 {
			f.Since = now.Add(-d)
		} else {
			return f, fmt.Errorf("%w: since %q is neither an RFC 3339 time nor a duration such as 2h", ErrFilter, since)
		}
	}
	return f, nil
}

// Match says whether f takes e.
func (f Filter) Match(e *Event) bool {
	if f.Subject != "" && e.Subject != f.Subject || f.Actor != "" && e.Actor != f.Actor || !f.Since.IsZero() && e.At.Before(f.Since) {
		return false
	}
	if len(f.Types) == 0 {
		return true
	}
	for _, t := range f.Types {
		if ok, _ := path.Match(t, e.Type); ok {
			return true
		}
	}
	return false
}

// Latest reads the whole log and returns the last n events match takes
// (every one with n 0), in replay order.
func Latest(ctx context.Context, l *Log, n int, match func(*Event) bool) ([]*Event, error) {
	r, err := l.Read(nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var ring []*Event
	first := 0
	for i := 1; ; i++ {
		e, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case !match(e):
		case n > 0 && len(ring) == n:
			ring[first] = e
			first = (first + 1) % n
		default:
			ring = append(ring, e)
		}
	}
	return slices.Concat(ring[first:], ring[:first]), nil
}

// About returns the events about subject that match also takes, in replay
// order, and where each file's reading ended (to go on from, as Last's).
// A file's lines before its known place (a checkpoint's mark, which the
// caller checked the file still holds: TailStart's known) were checked
// when they were folded, as a catch-up trusts them: of those, only a line
// whose bytes could name the subject (they hold it, or an escape) is
// decoded. The rest of each file is read as every read is, each line
// checked. spool log -s read a million events to find a task's ten.
func (l *Log) About(subject string, match func(*Event) bool, known map[string]Start) ([]*Event, map[string]Start, error) {
	files, err := l.Files()
	if err != nil {
		return nil, nil, err
	}
	var out []*Event
	from := map[string]Start{}
	for _, path := range files {
		w := WriterOf(path)
		k := known[w]
		if k.Offset == 0 {
			continue
		}
		got, err := aboutBefore(path, k.Offset, subject, match)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, got...)
		from[w] = k
	}
	r, err := l.Read(from)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for {
		e, pos, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		from[pos.Writer] = pos.Start()
		if e.Subject == subject && match(e) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b *Event) int {
		if a.Before(b) {
			return -1
		}
		if b.Before(a) {
			return 1
		}
		return 0
	})
	return out, from, nil
}

// aboutBefore is About's part of path before end: the events about subject
// that match takes, of the lines that can name it; a copy of the line
// before is passed over, as a read drops it. The file is searched a chunk
// at a time for the subject's bytes and for escapes, and only the lines
// around them are looked at.
func aboutBefore(path string, end int64, subject string, match func(*Event) bool) ([]*Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := newDecoder(WriterOf(path))
	needle := []byte(subject)
	var out []*Event
	var prev []byte // the last line of the chunk before
	rare := -1      // the needle's byte rarest in the first chunk
	buf := make([]byte, min(end+1, aboutBuf))
	for off, kept := int64(0), 0; off < end; {
		want := min(int64(len(buf)-kept), end-off)
		n, err := f.ReadAt(buf[kept:int64(kept)+want], off)
		if err == io.EOF && int64(n) < want {
			return nil, aboutChanged(f, path, off+int64(n)) // cut short
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		off += int64(n)
		chunk := buf[:kept+n]
		last := bytes.LastIndexByte(chunk, '\n') + 1 // the chunk's whole lines end there
		if last == 0 && off < end && len(chunk) < len(buf) {
			kept = len(chunk)
			continue
		}
		if last == 0 || off == end && last != len(chunk) {
			return nil, aboutChanged(f, path, off-int64(len(chunk)))
		}
		whole := chunk[:last]
		if rare < 0 {
			rare = rarest(needle, whole)
		}
		for i := 0; i < len(whole); {
			j := nextCandidate(whole[i:], needle, rare)
			if j < 0 {
				break
			}
			from := bytes.LastIndexByte(whole[:i+j], '\n') + 1
			to := i + j + bytes.IndexByte(whole[i+j:], '\n') + 1
			before := prev
			if from > 0 {
				before = whole[bytes.LastIndexByte(whole[:from-1], '\n')+1 : from]
			}
			if line := whole[from:to]; !bytes.Equal(line, before) {
				e, _, err := dec.decode(slices.Clone(line)) // the event may keep the line's bytes
				if err != nil {
					return nil, &LineError{Path: path, Line: linesBefore(f, off-int64(len(chunk))+int64(from)) + 1, Err: err, Hint: hintFor(err)}
				}
				if e.Subject == subject && match(e) {
					out = append(out, e)
				}
			}
			i = to
		}
		prev = append(prev[:0], whole[bytes.LastIndexByte(whole[:len(whole)-1], '\n')+1:]...)
		kept = copy(buf, chunk[last:])
	}
	return out, nil
}

// aboutBuf is the size of About's reads: a chunk and the longest line. A
// variable for tests.
var aboutBuf = int64(4<<20 + MaxLine)

// nextCandidate is where in b the next line that can name the subject
// shows: its bytes, or an escape (which can spell them otherwise); -1 for
// none. The needle is looked for from its byte at rare: bytes.Index goes
// from its first byte, and an id's first letter is everywhere in JSON.
func nextCandidate(b, needle []byte, rare int) int {
	j := -1
	for from := rare; from < len(b); {
		k := bytes.Index(b[from:], needle[rare:])
		if k < 0 {
			break
		}
		if at := from + k - rare; bytes.HasPrefix(b[at:], needle) {
			j = at
			break
		}
		from += k + 1
	}
	if k := bytes.IndexByte(b, '\\'); j < 0 || k >= 0 && k < j {
		return k
	}
	return j
}

// rarest is the place in needle of its byte that sample holds the fewest of.
func rarest(needle, sample []byte) int {
	if len(needle) == 0 {
		return 0
	}
	var count [256]int
	for _, c := range sample[:min(len(sample), 64<<10)] {
		count[c]++
	}
	best := 0
	for i, c := range needle {
		if count[c] < count[needle[best]] {
			best = i
		}
	}
	return best
}

// aboutChanged is About's error for a file that no longer holds whole
// lines up to its known place.
func aboutChanged(f *os.File, path string, at int64) error {
	return &LineError{Path: path, Line: linesBefore(f, at) + 1, Err: fmt.Errorf("%w: the file changed before the place its last save read to", ErrCorrupt), Hint: CorruptHint}
}

// linesBefore counts f's lines before offset at, for an error's line
// number.
func linesBefore(f *os.File, at int64) int {
	n := 0
	buf := make([]byte, 1<<20)
	for off := int64(0); off < at; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), at-off)], off)
		n += bytes.Count(buf[:k], newline)
		off += int64(k)
		if err != nil {
			break
		}
	}
	return n
}
