package eventlog

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync"
)

// TailStart is where a Reader starts to read path's last n lines: just
// after the line before them, which the reader decodes to go on from (as a
// resume does), or the file's beginning when it has no more than n. The
// lines before are counted and checksummed, not decoded or checked: a
// damaged line there is for a whole read to find (verify, doctor), not a
// reader of the end. known, when its Offset is not 0, is a place in the
// file whose count and checksum are known (a checkpoint's mark, which the
// caller checked the file still holds): they are counted from there.
func TailStart(path string, n int, known Start) (Start, error) {
	if n >= wholeTailLines {
		return Start{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Start{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Start{}, err
	}
	// The (n+1)th newline from the end ends the line before the tail, the
	// (n+2)th the one before that (a torn last line has none of its own).
	ends, err := lastNewlines(f, st.Size(), n+2)
	if err != nil || len(ends) < n+1 {
		return Start{}, err
	}
	s := Start{Offset: ends[n] + 1}
	lineStart := int64(0)
	if len(ends) > n+1 {
		lineStart = ends[n+1] + 1
	}
	s.Len = s.Offset - lineStart
	if s.Len > MaxLine {
		return Start{}, nil // a line no reader takes: read from the beginning, which says so
	}
	line := make([]byte, s.Len)
	if _, err := f.ReadAt(line, lineStart); err != nil {
		return Start{}, err
	}
	s.CRC = LineCRC(line)
	if known.Offset > s.Offset && known.Offset-s.Offset <= 4<<20 { // the CRC runs back at about 150 MB/s
		// Counted back from a place past the tail's start, as a
		// checkpoint of a log up to date is: the bytes between taken
		// off the count and the checksum.
		b := make([]byte, known.Offset-s.Offset)
		if _, err := f.ReadAt(b, s.Offset); err != nil {
			return Start{}, err
		}
		s.Line, s.Prefix = known.Line-bytes.Count(b, newline), unappendCRC(known.Prefix, b)
		return s, nil
	}
	if known.Offset > 0 && known.Offset <= s.Offset {
		s.Prefix, s.Line, err = scanPrefix(f, known.Offset, s.Offset, known.Prefix, known.Line)
	} else {
		s.Prefix, s.Line, err = scanPrefix(f, 0, s.Offset, 0, 0)
	}
	if err != nil {
		return Start{}, err
	}
	return s, nil
}

// scanPrefix goes on from crc and lines, the checksum and line count of
// f's bytes before from, to those of its bytes before to.
func scanPrefix(f io.ReaderAt, from, to int64, crc uint32, lines int) (uint32, int, error) {
	buf := make([]byte, min(1<<20, to-from+1))
	for off := from; off < to; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:k])
		lines += bytes.Count(buf[:k], newline)
		off += int64(k)
		if err != nil && off < to {
			return crc, lines, err
		}
	}
	return crc, lines, nil
}

// unappendCRC is the CRC-32 (IEEE) of a prefix of some bytes, given the
// CRC of the whole and the bytes that follow the prefix: the CRC run
// backwards, a byte at a time. Each step of the reflected CRC shifts the
// register right by a byte and XORs in a table entry chosen by the byte
// shifted out; the entries' top bytes all differ, so the top byte of the
// result names the entry, and the entry gives back the byte shifted out.
func unappendCRC(crc uint32, b []byte) uint32 {
	top := crcTopIndex()
	r := ^crc
	for i := len(b) - 1; i >= 0; i-- {
		j := top[r>>24]
		r = (r^crc32.IEEETable[j])<<8 | uint32(j^b[i])
	}
	return ^r
}

// crcTopIndex is the IEEE table's index by its entries' top bytes, made
// when first needed (not at every command's start).
var crcTopIndex = sync.OnceValue(func() *[256]byte {
	var x [256]byte
	for i, v := range crc32.IEEETable {
		x[v>>24] = byte(i)
	}
	return &x
})

// wholeTailLines is a tail so long that the whole file is read.
const wholeTailLines = math.MaxInt / 8

// lastNewlines returns the offsets of f's last k newlines, the last first.
func lastNewlines(f io.ReaderAt, size int64, k int) ([]int64, error) {
	var out []int64
	buf := make([]byte, 64<<10)
	for end := size; end > 0 && len(out) < k; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return nil, err
		}
		for i := len(b); len(out) < k; {
			j := bytes.LastIndexByte(b[:i], '\n')
			if j < 0 {
				break
			}
			out = append(out, start+int64(j))
			i = j
		}
		end = start
	}
	return out, nil
}

// Last returns the last n events match passes, in replay order, and where
// each writer file's reading ended (to go on from, as spool log -f does).
// It reads the files' ends, not the whole log: the last max(n, 64) lines
// of each first, then four times as many, while events of a file before
// the part read could still be among the last n. A damaged line is
// reported only where it reads (see TailStart); a file that changed under
// a pass (an append that cut an unfinished batch, a repair) is read whole.
// known is TailStart's, by writer (nil: none).
func (l *Log) Last(ctx context.Context, n int, match func(*Event) bool, known map[string]Start) ([]*Event, map[string]Start, error) {
	for k := max(n, 64); ; k = min(k, wholeTailLines/4) * 4 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		last, from, done, err := l.lastPass(ctx, n, k, match, known)
		if err != nil && k < wholeTailLines && ctx.Err() == nil {
			last, from, done, err = l.lastPass(ctx, n, wholeTailLines, match, known)
		}
		if err != nil || done {
			return last, from, err
		}
	}
}

// lastPass is one of Last's passes, with the last k lines of each file;
// done says whether they were enough.
func (l *Log) lastPass(ctx context.Context, n, k int, match func(*Event) bool, known map[string]Start) (last []*Event, from map[string]Start, done bool, err error) {
	files, err := l.Files()
	if err != nil {
		return nil, nil, false, err
	}
	from = map[string]Start{}
	partial := map[string]bool{} // files read from after their beginning
	for _, path := range files {
		w := WriterOf(path)
		if from[w], err = TailStart(path, k, known[w]); err != nil {
			return nil, nil, false, err
		}
		partial[w] = from[w].Offset > 0
	}
	var warned []string // said by the pass that is enough, once
	r, err := l.read(from, func(msg string) { warned = append(warned, msg) })
	if err != nil {
		return nil, nil, false, err
	}
	defer r.Close()
	first := map[string]*Event{}
	for i := 1; ; i++ {
		if i%4096 == 0 && ctx.Err() != nil { // a filter that rarely matches reads ever longer tails
			return nil, nil, false, ctx.Err()
		}
		e, pos, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, false, err
		}
		from[pos.Writer] = pos.Start()
		if first[pos.Writer] == nil {
			first[pos.Writer] = e
		}
		if !match(e) {
			continue
		}
		if len(last) == n {
			last = last[1:]
		}
		last = append(last, e)
	}
	for w, p := range partial {
		// An event of w before the part read sorts before w's first event
		// read: it cannot be among the last n when that one sorts before
		// the n-th last match.
		if p && (len(last) < n || first[w] == nil || last[0].Before(first[w])) {
			return nil, nil, false, nil
		}
	}
	for _, msg := range warned {
		l.warnText(msg)
	}
	return last, from, true, nil
}
