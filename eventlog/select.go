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
// caller checked the file holds as a catch-up trusts it: TailStart's
// known) were checked when they were folded: of those, only a line whose
// bytes could name the subject (they hold it, or an escape) is decoded.
// The rest of each file is read as every read is, each line checked. spool
// log -s read a million events to find a task's ten. With a subject index
// (index, a path: IndexSubjects), the part of a file it covers is not
// searched: the subject's lines are read where it says they are.
func (l *Log) About(ctx context.Context, subject string, match func(*Event) bool, known map[string]Start, index string) ([]*Event, map[string]Start, error) {
	files, err := l.Files()
	if err != nil {
		return nil, nil, err
	}
	x, hits := lookup(index, subject)
	defer x.close()
	var out []*Event
	from := map[string]Start{}
	sc := &aboutScan{needle: []byte(subject), subject: subject, match: match, rare: -1}
	for _, path := range files {
		k := known[WriterOf(path)]
		if k.Offset == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		var listed []*Event
		ix, ok := x.holds(path, k)
		if ok {
			listed, ok, err = x.read(path, ix, hits[ix.n], subject, match)
			if err != nil {
				return nil, nil, err
			}
		}
		if !ok {
			ix = indexed{} // search the file from its start
		}
		got, trusted, err := sc.file(path, ix.end, k)
		if err != nil {
			return nil, nil, err
		}
		if trusted {
			out = append(out, listed...)
			out = append(out, got...)
			from[WriterOf(path)] = k
		}
	}
	r, err := l.Read(from)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for i := 1; ; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
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

// aboutScan is About's search of the files' parts before their known
// places, a read at a time, for the lines that can name the subject.
type aboutScan struct {
	subject string
	needle  []byte
	match   func(*Event) bool
	rare    int    // the needle's byte rarest in the first read, once known
	buf     []byte // the reads', shared by the files
}

// file is the events about the subject that match takes of path's part
// from the end of after's line to k's, of the lines that can name it; a
// copy of the line before is passed over, as a read drops it. trusted is
// false, with no events, when the file opened no longer ends that part
// with k's line (replaced since the caller looked): the file is then read
// whole.
func (sc *aboutScan) file(path string, after, k Start) (out []*Event, trusted bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if k.Offset == 0 || after.Offset > k.Offset || !LineAt(f, k) {
		return nil, false, nil
	}
	end := k.Offset
	if need := min(end-after.Offset+1, aboutBuf); int64(len(sc.buf)) < need {
		sc.buf = make([]byte, need) // a file's part, or a chunk and the longest line
	}
	buf := sc.buf
	dec := newDecoder(WriterOf(path))
	var prev []byte // the last line of the read before
	if after.Offset > 0 {
		prev = make([]byte, after.Len)
		if _, err := f.ReadAt(prev, after.Offset-after.Len); err != nil {
			return nil, false, err
		}
	}
	for off, kept := after.Offset, 0; off < end; {
		want := min(int64(len(buf)-kept), end-off)
		n, err := f.ReadAt(buf[kept:int64(kept)+want], off)
		if err == io.EOF && int64(n) < want {
			return nil, false, aboutChanged(f, path, off+int64(n)) // cut short
		}
		if err != nil && err != io.EOF {
			return nil, false, err
		}
		start := off - int64(kept) // where in the file buf starts
		off += int64(n)
		chunk := buf[:kept+n]
		last := bytes.LastIndexByte(chunk, '\n') + 1 // the read's whole lines end there
		if last == 0 && off < end && len(chunk) < len(buf) {
			kept = len(chunk)
			continue
		}
		if last == 0 || off == end && last != len(chunk) {
			return nil, false, aboutChanged(f, path, start+int64(last))
		}
		whole := chunk[:last]
		if sc.rare < 0 {
			sc.rare = rarest(sc.needle, whole)
		}
		at, esc := -1, -1 // the next places of the needle and of an escape, once looked for
		for i := 0; i < len(whole); {
			if at < i {
				at = indexFrom(whole, i, func(b []byte) int { return indexRare(b, sc.needle, sc.rare) })
			}
			if esc < i {
				esc = indexFrom(whole, i, func(b []byte) int { return bytes.IndexByte(b, '\\') })
			}
			j := min(at, esc) // the next line that can name the subject: its bytes, or an escape (which can spell them otherwise)
			if j == len(whole) {
				break
			}
			from := bytes.LastIndexByte(whole[:j], '\n') + 1
			to := j + bytes.IndexByte(whole[j:], '\n') + 1
			before := prev
			if from > 0 {
				before = whole[bytes.LastIndexByte(whole[:from-1], '\n')+1 : from]
			}
			if line := whole[from:to]; !bytes.Equal(line, before) {
				e, _, err := dec.decode(line)
				if err != nil {
					return nil, false, &LineError{Path: path, Line: linesBefore(f, start+int64(from)) + 1, Err: err, Hint: hintFor(err)}
				}
				if e.Subject == sc.subject && sc.match(e) && !copyOf(dec, e, before) {
					out = append(out, e)
				}
			}
			i = to
		}
		prev = append(prev[:0], whole[bytes.LastIndexByte(whole[:len(whole)-1], '\n')+1:]...)
		kept = copy(buf, chunk[last:])
	}
	return out, true, nil
}

// copyOf says whether e is a copy of the event on line before (nil: none),
// which a read drops: the same seq, lc and id, in other bytes (a line
// copied in place, its whitespace or signature changed; the lines before a
// known place were checked, so its id is its content's).
func copyOf(dec *decoder, e *Event, before []byte) bool {
	if before == nil {
		return false
	}
	b, _, err := dec.decode(before)
	return err == nil && b.Seq == e.Seq && b.LC == e.LC && b.ID == e.ID
}

// aboutBuf is the size of About's reads: a chunk and the longest line. A
// variable for tests.
var aboutBuf = int64(4<<20 + MaxLine)

// indexFrom is where in b, from i on, index finds what it looks for;
// len(b) for nowhere (not looked for again in b).
func indexFrom(b []byte, i int, index func([]byte) int) int {
	if k := index(b[i:]); k >= 0 {
		return i + k
	}
	return len(b)
}

// indexRare is bytes.Index(b, needle), looked for from the needle's byte
// at rare: bytes.Index goes from its first byte, and an id's first letter
// is everywhere in JSON.
func indexRare(b, needle []byte, rare int) int {
	for from := rare; from < len(b); {
		k := bytes.Index(b[from:], needle[rare:])
		if k < 0 {
			return -1
		}
		if at := from + k - rare; bytes.HasPrefix(b[at:], needle) {
			return at
		}
		from += k + 1
	}
	return -1
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
// lines up to its known place, at offset at.
func aboutChanged(f *os.File, path string, at int64) error {
	return &LineError{Path: path, Line: linesBefore(f, at) + 1, Err: fmt.Errorf("%w: the file changed before the place its last save read to", ErrCorrupt), Hint: CorruptHint}
}

// linesBefore counts f's lines before offset at, for an error's line
// number.
func linesBefore(f *os.File, at int64) int {
	_, n, _ := scanPrefix(f, 0, at, 0, 0)
	return n
}
