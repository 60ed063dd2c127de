package cliout

import (
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Columns prints rows of cells aligned as text/tabwriter aligns them for
// spool's tables (tabwriter.NewWriter(w, 0, 4, 2, ' ', 0): every cell but
// a row's last padded with spaces to its column's widest, and two more),
// for output too long to hold whole: spool log's million lines took 25 s
// and 580 MiB through tabwriter, which keeps every cell until its Flush.
// The first rows are held and written through tabwriter; after them a
// row is written as it comes, each cell but its last padded to the widest
// of its column so far, and two more.
type Columns struct {
	w         io.Writer
	hold      int // rows held before the first is written
	held      [][]string
	streaming bool  // the held rows are written
	width     []int // in runes, padding included
	buf       []byte
	err       error
}

// ColumnsHeld is how many rows Columns holds before it writes the first.
const ColumnsHeld = 1000

// NewColumns writes to w, holding the first hold rows.
func NewColumns(w io.Writer, hold int) *Columns { return &Columns{w: w, hold: hold} }

// Row adds a row. Its trailing empty cells are left out, as row-joining
// for a tabwriter leaves them out: a row does not end in spaces.
func (c *Columns) Row(cells ...string) error {
	n := len(cells)
	for n > 0 && cells[n-1] == "" {
		n--
	}
	cells = cells[:n]
	if !c.streaming && len(c.held) == c.hold {
		if err := c.Flush(); err != nil {
			return err
		}
	}
	for i := range max(n-1, 0) {
		if len(c.width) == i {
			c.width = append(c.width, 0)
		}
		c.width[i] = max(c.width[i], utf8.RuneCountInString(cells[i])+2)
	}
	if !c.streaming {
		c.held = append(c.held, cells)
		return nil
	}
	return c.write(cells)
}

// Flush writes the rows held; from then on rows are written as they come,
// and the widths stay.
func (c *Columns) Flush() error {
	if c.streaming {
		return c.err
	}
	c.streaming = true
	tw := tabwriter.NewWriter(c.w, 0, 4, 2, ' ', 0)
	for _, r := range c.held {
		if _, err := io.WriteString(tw, strings.Join(r, "\t")+"\n"); err != nil {
			c.err = err
			return err
		}
	}
	c.held = nil
	c.err = tw.Flush()
	return c.err
}

func (c *Columns) write(cells []string) error {
	if c.err != nil {
		return c.err
	}
	b := c.buf[:0]
	for i, s := range cells {
		b = append(b, s...)
		if i < len(cells)-1 {
			for range c.width[i] - utf8.RuneCountInString(s) {
				b = append(b, ' ')
			}
		}
	}
	b = append(b, '\n')
	_, c.err = c.w.Write(b)
	c.buf = b
	return c.err
}
