package workqueue

import (
	"bufio"
	"iter"
	"os"
	"slices"
)

// Every task's listing is saved twice: first in its record, which a
// command about the task reads, and again in a section of its own in
// list order (taskLess), which task list --json and ready -n 0 --json
// read front to back. Read in list order out of the records, 100,000
// listings cost a TLB miss and a page walk each in a 157 MB file: task
// list --json took 107–117 ms, against 63–66 ms reading the same records
// in file order (docs/performance.md).
//
// The save writes the records in id order and learns the list order at
// the end, so it gathers the listings in an unlinked file as it goes (a
// fresh clone's first command stays within its memory), then copies them
// out in list order.

// listingSpool gathers the listings of a save, by position.
type listingSpool struct {
	f    *os.File // nil: gathered in buf
	w    *bufio.Writer
	buf  []byte
	ends []int64 // by position: where its listing ends
	err  error   // the first write or read error
}

// newListingSpool gathers n listings in an unlinked file in dir, or in
// memory when dir is "" or no file can be made there (verify of a
// read-only repository: a save would fail anyway, writing its own files).
func newListingSpool(dir string, n int) *listingSpool {
	l := &listingSpool{ends: make([]int64, 0, n)}
	if dir == "" {
		return l
	}
	if f, err := tempFile(dir, "listings-*"); err == nil {
		l.f, l.w = f, bufio.NewWriterSize(f, 256<<10)
	}
	return l
}

// scratchDir is where a save gathers the listings: the spill's directory
// for a rebuild, the engine's (ScratchIn) otherwise.
func (p *TasksProjection) scratchDir() string {
	if sp := p.s.trk.spill; sp != nil {
		return sp.dir
	}
	return p.scratch
}

// ScratchIn is projections.Scratcher's.
func (p *TasksProjection) ScratchIn(dir string) { p.scratch = dir }

// add gathers the next position's listing.
func (l *listingSpool) add(b []byte) {
	var end int64
	if k := len(l.ends); k > 0 {
		end = l.ends[k-1]
	}
	l.ends = append(l.ends, end+int64(len(b)))
	if l.f == nil {
		l.buf = append(l.buf, b...)
	} else if l.err == nil {
		_, l.err = l.w.Write(b)
	}
}

// inOrder yields the listings of order's positions, in that order, each
// valid until the next; an error reading them back stops it, and is l.err.
// The file's listings are read one by one rather than mapped: a mapping's
// pages count as the process's memory once read, 68 MB at 100,000 tasks.
func (l *listingSpool) inOrder(order []uint32) (iter.Seq[[]byte], error) {
	if l.f != nil {
		if l.err == nil {
			l.err = l.w.Flush()
		}
		if l.err != nil {
			return nil, l.err
		}
	}
	return func(yield func([]byte) bool) {
		var buf []byte
		for _, i := range order {
			var from int64
			if i > 0 {
				from = l.ends[i-1]
			}
			b := l.buf[min(from, int64(len(l.buf))):min(l.ends[i], int64(len(l.buf)))]
			if l.f != nil {
				buf = slices.Grow(buf[:0], int(l.ends[i]-from))[:l.ends[i]-from]
				if _, err := l.f.ReadAt(buf, from); err != nil {
					l.err = err
					return
				}
				b = buf
			}
			if !yield(b) {
				return
			}
		}
	}, nil
}

// close closes the spool's file.
func (l *listingSpool) close() {
	if l.f != nil {
		l.f.Close()
	}
}
