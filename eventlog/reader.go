package eventlog

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/spoolhq/spool/internal/fault"
)

// MaxLine bounds one event line; a longer line is corruption, not an event.
const MaxLine = 4 << 20

// Pos says where an event was read: enough to resume after it and to check
// later that the file still holds the same line there.
type Pos struct {
	Path   string
	Writer string
	Offset int64  // offset just after the line
	Line   int    // line number of the event
	Len    int64  // length of the line, newline included
	CRC    uint32 // crc32 of the line
	Prefix uint32 // crc32 of the file up to Offset
}

// Start is where to resume reading after the event at p.
func (p Pos) Start() Start {
	return Start{Offset: p.Offset, Line: p.Line, Len: p.Len, CRC: p.CRC, Prefix: p.Prefix}
}

// Start is where to begin reading one writer file: just after a line that
// was read before, which the rules resume from. Resuming checks that this
// line is still there, byte for byte (its CRC).
type Start struct {
	Offset int64
	Line   int    // lines before Offset
	Len    int64  // length of the line that ends at Offset
	CRC    uint32 // crc32 of that line
	Prefix uint32 // crc32 of the file up to Offset
}

// Reader streams events of all writer files merged into replay order. Each
// file is read and decoded ahead by its own goroutine, in batches, so decoding
// uses every core while the caller folds events one at a time.
type Reader struct {
	cursors cursorHeap
	all     []*cursor
	torn    []string
	dropped int // copies of the line before, dropped with a warning
	done    chan struct{}
	err     error // a bad line met while looking ahead, returned by the next call
	warn    func(string)
}

// batchSize trades channel overhead against memory held per file.
const batchSize = 512

// Read opens every writer file, starting each at from[writer] (zero value: the beginning).
func (l *Log) Read(from map[string]Start) (*Reader, error) { return l.read(from, l.warnText) }

// ReadQuiet is Read without the warning for each copy of a line dropped,
// for a caller that reports them itself (Dropped, then Check: verify).
func (l *Log) ReadQuiet(from map[string]Start) (*Reader, error) { return l.read(from, func(string) {}) }

func (l *Log) read(from map[string]Start, warn func(string)) (*Reader, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	r := &Reader{done: make(chan struct{}), warn: warn}
	for _, path := range files {
		p, err := newProducer(path, from[WriterOf(path)])
		if err != nil {
			r.Close()
			return nil, err
		}
		c := &cursor{path: path, writer: p.writer, batches: make(chan []decoded, 2), free: make(chan []decoded, 4), warn: r.warn, dropped: &r.dropped}
		r.all = append(r.all, c)
		go p.run(c.batches, c.free, r.done)
	}
	for _, c := range r.all {
		if err := c.advance(); err != nil {
			r.Close()
			return nil, err
		}
		if c.next != nil {
			r.cursors = append(r.cursors, c)
		} else if c.torn {
			r.torn = append(r.torn, c.path)
		}
	}
	heap.Init(&r.cursors)
	return r, nil
}

// Next returns the next event in replay order, or io.EOF.
func (r *Reader) Next() (*Event, Pos, error) {
	if r.err != nil {
		return nil, Pos{}, r.err
	}
	if len(r.cursors) == 0 {
		return nil, Pos{}, io.EOF
	}
	c := r.cursors[0]
	e, pos := c.next, c.pos
	if err := c.advance(); err != nil {
		// e itself is good: return it, and the error after it.
		r.err = err
		return e, pos, nil
	}
	if c.next == nil {
		if c.torn {
			r.torn = append(r.torn, c.path)
		}
		heap.Pop(&r.cursors)
	} else {
		heap.Fix(&r.cursors, 0)
	}
	return e, pos, nil
}

// Torn lists files that ended in a line without '\n' or in an unfinished
// batch (left unread), once read to their end.
func (r *Reader) Torn() []string { return r.torn }

// Dropped is how many lines were dropped so far as copies of the line
// before them (each with a warning).
func (r *Reader) Dropped() int { return r.dropped }

// Files is how many writer files the reader reads.
func (r *Reader) Files() int { return len(r.all) }

// Close stops the read-ahead goroutines and closes the files.
func (r *Reader) Close() error {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	return nil
}

// decoded is one line as the producer saw it: an event and where it is
// (Pos but the file's path and writer, which the cursor knows), an error, a
// warning, or the marker that the file ends in a torn tail.
type decoded struct {
	e      *Event
	offset int64
	line   int
	len    int64
	crc    uint32
	prefix uint32
	err    error
	warn   string // a copy of the line before, dropped
	torn   bool
}

type cursor struct {
	path, writer string
	batches      chan []decoded
	free         chan []decoded // batches read, for the producer to fill again
	batch        []decoded      // the batch cur is the rest of
	cur          []decoded
	next         *Event
	pos          Pos
	torn         bool
	warn         func(string)
	dropped      *int
}

// advance moves to the next decoded event (c.next is nil at the end).
func (c *cursor) advance() error {
	c.next = nil
	for {
		for len(c.cur) == 0 {
			if c.batch != nil {
				// Read to the end: hand it back, cleared so that it holds no
				// event the caller may since have let go of.
				clear(c.batch)
				select {
				case c.free <- c.batch[:0]:
				default:
				}
				c.batch = nil
			}
			b, ok := <-c.batches
			if !ok {
				return nil
			}
			c.batch, c.cur = b, b
		}
		d := c.cur[0]
		c.cur = c.cur[1:]
		switch {
		case d.warn != "":
			*c.dropped++
			c.warn(d.warn) // warnings are given by the reading goroutine, in order
			continue
		case d.err != nil:
			return d.err
		case d.torn:
			c.torn = true
		default:
			c.next = d.e
			c.pos = Pos{Path: c.path, Writer: c.writer, Offset: d.offset, Line: d.line, Len: d.len, CRC: d.crc, Prefix: d.prefix}
		}
		return nil
	}
}

// producer reads and decodes one writer file, and holds it to the rules.
type producer struct {
	path, writer string
	f            *os.File
	br           *bufio.Reader
	offset       int64
	line         int
	prefix       uint32
	rules        *rules
	dec          *decoder
	buf          []byte
	d            decoded // what decodeNext returns, reused
}

// newProducer opens path at st. Resuming after a line, it reads that line
// again, to check it is the one read before and so the rules know the seq,
// lc and id the next line must follow.
func newProducer(path string, st Start) (*producer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	p := &producer{path: path, writer: WriterOf(path), f: f, offset: st.Offset, line: st.Line, prefix: st.Prefix}
	p.rules = newRules(p.writer)
	p.dec = newDecoder(p.writer)
	if st.Offset > 0 {
		if err := p.resume(st); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(st.Offset, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	p.br = bufio.NewReaderSize(f, 256<<10)
	return p, nil
}

func (p *producer) resume(st Start) error {
	if st.Len <= 0 || st.Len > st.Offset || st.Len > MaxLine {
		return fmt.Errorf("%w: no line ends at offset %d of %s", ErrCorrupt, st.Offset, p.path)
	}
	line := make([]byte, st.Len)
	if _, err := p.f.ReadAt(line, st.Offset-st.Len); err != nil {
		return err
	}
	// The same length and still an event is not enough: an edit in place
	// that kept the length would pass for the line read before.
	e, _, err := p.dec.decode(line)
	if err != nil || line[len(line)-1] != '\n' || LineCRC(line) != st.CRC {
		return &LineError{Path: p.path, Line: st.Line, Err: fmt.Errorf("%w: the line read before is no longer there", ErrCorrupt)}
	}
	p.rules.accept(e, st.Line)
	return nil
}

func (p *producer) run(out chan<- []decoded, free <-chan []decoded, done <-chan struct{}) {
	defer fault.Recover() // a panic here exits 1, as JSON under --json, like one in main
	defer close(out)
	defer p.f.Close()
	batch := make([]decoded, 0, batchSize)
	send := func() bool {
		select {
		case out <- batch:
		case <-done:
			return false
		}
		select {
		case batch = <-free: // one the cursor has read
		default:
			batch = make([]decoded, 0, batchSize)
		}
		return true
	}
	var held []decoded // events of a multi-event append, until its last one
	for {
		d, end := p.decodeNext()
		switch {
		case d != nil && d.warn != "":
			batch = append(batch, *d)
		case d == nil || d.torn:
			// End of file. Inside a batch, the batch never finished (the next
			// append drops it): readers see none of it, as with a torn line.
			if d != nil || len(held) > 0 {
				batch = append(batch, decoded{torn: true})
			}
			held = nil
		case d.err != nil:
			batch, held = append(batch, *d), nil
		case d.e.More:
			held = append(held, *d)
		default:
			batch = append(append(batch, held...), *d)
			clear(held)
			held = held[:0]
		}
		if end {
			if len(batch) > 0 {
				send()
			}
			return
		}
		if len(batch) >= batchSize && !send() {
			return
		}
	}
}

// decodeNext reads one line; end is true at the end of the file. The
// decoded it returns is the producer's, until the next call.
func (p *producer) decodeNext() (*decoded, bool) {
	line, torn, err := p.readLine()
	if err != nil {
		return p.set(decoded{err: err}), true
	}
	if torn {
		return p.set(decoded{torn: true}), true
	}
	if line == nil {
		return nil, true
	}
	p.line++
	p.offset += int64(len(line))
	p.prefix = crc32.Update(p.prefix, crc32.IEEETable, line)
	e, sp, err := p.dec.decode(line)
	if err != nil {
		return p.set(decoded{err: &LineError{Path: p.path, Line: p.line, Err: err, Hint: hintFor(err)}}), true
	}
	if b := p.rules.check(line, e, sp, p.line); b != nil {
		if b.dup {
			return p.set(decoded{warn: fmt.Sprintf("%s:%d: dropped a copy of line %d (%s)", p.path, p.line, p.rules.line, RepairHint)}), false
		}
		return p.set(decoded{err: &LineError{Path: p.path, Line: p.line, Err: fmt.Errorf("%w: %s", ErrCorrupt, b.msg), Hint: CorruptHint}}), true
	}
	return p.set(decoded{e: e, offset: p.offset, line: p.line, len: int64(len(line)), crc: LineCRC(line), prefix: p.prefix}), false
}

func (p *producer) set(d decoded) *decoded {
	p.d = d
	return &p.d
}

// hintFor is the repair hint for a line that does not decode: none for an
// event of a newer spool (upgrading is the fix).
func hintFor(err error) string {
	if errors.Is(err, ErrNewerVersion) {
		return ""
	}
	return CorruptHint
}

// CorruptHint says how to get past a line that breaks the log's rules.
const CorruptHint = "spool verify lists every problem; spool doctor --repair fixes duplicated and reordered lines, " +
	"keeping a backup; an edited or missing line must be restored from git (git log -p -- FILE)"

// readLine returns the next line with its '\n'; nil at EOF; torn when the
// file ends in bytes without a newline. A line longer than MaxLine (newline
// included: Append never writes one, and a resume after it is refused) is
// corrupt; its bytes are skipped, not held, to find where it ends.
func (p *producer) readLine() (line []byte, torn bool, err error) {
	p.buf = p.buf[:0]
	size := 0
	for {
		chunk, err := p.br.ReadSlice('\n')
		if err == nil && size == 0 {
			return chunk, false, nil
		}
		size += len(chunk)
		if size <= MaxLine {
			p.buf = append(p.buf, chunk...)
		}
		switch {
		case err == nil && size > MaxLine:
			return nil, false, &LineError{Path: p.path, Line: p.line + 1, Err: fmt.Errorf("%w: line of %d bytes, longer than %d", ErrCorrupt, size, MaxLine),
				Hint: CorruptHint}
		case err == nil:
			return p.buf, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			return nil, size > 0, nil
		default:
			return nil, false, err
		}
	}
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// PrefixCRC is the crc32 of the first n bytes of f (Pos.Prefix's checksum).
func PrefixCRC(f io.ReaderAt, n int64) (uint32, error) {
	buf := make([]byte, min(n, 1<<20))
	var crc uint32
	for off := int64(0); off < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:k])
		off += int64(k)
		if err != nil && off < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return crc, err
		}
	}
	return crc, nil
}

// LineCRC is the checksum projections keep of the last line they applied.
func LineCRC(line []byte) uint32 { return crc32.ChecksumIEEE(line) }

// LineAt says whether f's line ending at s.Offset is still s's (its length
// and CRC): the place a checkpoint or an index knows is where it was. The
// start of a file (Offset 0) always is.
func LineAt(f io.ReaderAt, s Start) bool {
	if s.Offset == 0 {
		return true
	}
	if s.Len <= 0 || s.Len > s.Offset || s.Len > MaxLine {
		return false
	}
	line := make([]byte, s.Len)
	_, err := f.ReadAt(line, s.Offset-s.Len)
	return err == nil && line[len(line)-1] == '\n' && LineCRC(line) == s.CRC
}
