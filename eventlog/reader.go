package eventlog

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// MaxLine bounds one event line; a longer line is corruption, not an event.
const MaxLine = 4 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Pos says where an event was read: enough to resume after it and to check
// later that the file still holds the same line there.
type Pos struct {
	Path   string
	Writer string
	Offset int64  // offset just after the line
	Line   int    // line number of the event
	Len    int64  // length of the line, newline included
	CRC    uint32 // crc32c of the line
}

// Start is where to begin reading one writer file.
type Start struct {
	Offset int64
	Line   int // lines before Offset
}

// Reader streams events of all writer files merged into replay order.
type Reader struct {
	cursors cursorHeap
	files   []*os.File
	torn    []string
}

// Read opens every writer file, starting each at from[writer] (zero value: the beginning).
func (l *Log) Read(from map[string]Start) (*Reader, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	r := &Reader{}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		r.files = append(r.files, f)
		st := from[WriterOf(path)]
		if _, err := f.Seek(st.Offset, io.SeekStart); err != nil {
			r.Close()
			return nil, err
		}
		c := &cursor{path: path, writer: WriterOf(path), br: bufio.NewReaderSize(f, 64<<10), offset: st.Offset, line: st.Line}
		if err := c.advance(); err != nil {
			r.Close()
			return nil, err
		}
		if c.next != nil {
			r.cursors = append(r.cursors, c)
		} else if c.torn {
			r.torn = append(r.torn, path)
		}
	}
	heap.Init(&r.cursors)
	return r, nil
}

// Next returns the next event in replay order, or io.EOF.
func (r *Reader) Next() (*Event, Pos, error) {
	if len(r.cursors) == 0 {
		return nil, Pos{}, io.EOF
	}
	c := r.cursors[0]
	e, pos := c.next, c.pos
	if err := c.advance(); err != nil {
		return nil, Pos{}, err
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

// Torn lists files that ended in a line without '\n' (left unread).
func (r *Reader) Torn() []string { return r.torn }

// Close closes the files.
func (r *Reader) Close() error {
	for _, f := range r.files {
		f.Close()
	}
	r.files = nil
	return nil
}

type cursor struct {
	path, writer string
	br           *bufio.Reader
	offset       int64
	line         int
	next         *Event
	pos          Pos
	torn         bool
	buf          []byte
}

// advance decodes the next complete line into c.next (nil at the end).
func (c *cursor) advance() error {
	c.next = nil
	line, err := c.readLine()
	if err != nil || line == nil {
		return err
	}
	c.line++
	c.offset += int64(len(line))
	e, err := Decode(line)
	if err != nil {
		return &LineError{Path: c.path, Line: c.line, Err: err}
	}
	if e.Writer != c.writer {
		return &LineError{Path: c.path, Line: c.line, Err: fmt.Errorf("%w: writer %q in the file of writer %q", ErrCorrupt, e.Writer, c.writer)}
	}
	c.next = e
	c.pos = Pos{Path: c.path, Writer: c.writer, Offset: c.offset, Line: c.line, Len: int64(len(line)), CRC: LineCRC(line)}
	return nil
}

// readLine returns the next line with its '\n', or nil at EOF or before a torn tail.
func (c *cursor) readLine() ([]byte, error) {
	c.buf = c.buf[:0]
	for {
		chunk, err := c.br.ReadSlice('\n')
		if err == nil && len(c.buf) == 0 {
			return chunk, nil
		}
		c.buf = append(c.buf, chunk...)
		switch {
		case err == nil:
			return c.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(c.buf) > MaxLine {
				return nil, &LineError{Path: c.path, Line: c.line + 1, Err: fmt.Errorf("%w: line longer than %d bytes", ErrCorrupt, MaxLine)}
			}
		case err == io.EOF:
			c.torn = len(c.buf) > 0
			return nil, nil
		default:
			return nil, fmt.Errorf("read %s: %w", c.path, err)
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

// LineCRC is the checksum projections keep of the last line they applied.
func LineCRC(line []byte) uint32 { return crc32.Checksum(line, castagnoli) }
