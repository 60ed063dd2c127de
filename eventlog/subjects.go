package eventlog

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/table"
)

// The subject index is where each subject's lines are in the writer
// files' parts that the last save read (KnownStarts), so that About reads
// a task's ten lines there instead of searching a 290 MB file for them. It
// is a cache, written by IndexSubjects and read by About: a file it no
// longer holds (replaced, or cut before the part's last line) is searched
// as before, and one that does not read as written is not used at all.
//
// It is a table (internal/table) with a summary: one record per subject,
// the places of its lines; the summary names each writer file's indexed
// part, so a lookup reads the summary, one group of ids and one record.
const subjectsMagic = "spool subjects 1\n"

// indexed is a writer file's part the index covers: [0, end.Offset).
type indexed struct {
	n     int    // the file's number in the records
	inode uint64 // the file it was
	end   Start  // its last line: Offset, Len, CRC
}

// linePos is where a line is: in file n, [off, off+len).
type linePos struct {
	n        int
	off, len int64
}

type subjectIndex struct {
	f     *os.File
	sum   *table.Summary
	files map[string]indexed // by writer
	size  int64
}

// openSubjects opens the index at path; nil when there is none, or it
// does not read (a cache: it is written again).
func openSubjects(path string) *subjectIndex {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	x, err := readSubjects(f)
	if err != nil {
		f.Close()
		return nil
	}
	return x
}

func readSubjects(f *os.File) (*subjectIndex, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	sum, err := table.OpenSummary(f, st.Size(), subjectsMagic)
	if err != nil {
		return nil, err
	}
	x := &subjectIndex{f: f, sum: sum, files: map[string]indexed{}, size: st.Size()}
	n := sum.Count()
	for i := range n {
		w := sum.Str()
		ix := indexed{n: i, inode: sum.Uint(), end: Start{Offset: sum.Int(), Len: sum.Int(), CRC: uint32(sum.Uint())}}
		if _, dup := x.files[w]; dup || ix.end.Offset < 0 || ix.end.Len < 0 || ix.end.Len > ix.end.Offset {
			return nil, table.ErrDamaged
		}
		x.files[w] = ix
	}
	if err := sum.End(); err != nil {
		return nil, err
	}
	return x, nil
}

// lookup opens the index at path and finds subject's lines in it: nil
// when there is none, it does not read, or the subject is "" (the index
// keeps no lines without a subject).
func lookup(path, subject string) (*subjectIndex, map[int][]linePos) {
	if subject == "" {
		return nil, nil
	}
	x := openSubjects(path)
	if x == nil {
		return nil, nil
	}
	hits, ok := x.find(subject)
	if !ok {
		x.close()
		return nil, nil
	}
	return x, hits
}

func (x *subjectIndex) close() {
	if x != nil {
		x.f.Close()
	}
}

// holds is the part of path's file the index covers, if the file still
// holds it: the same file (inode), its last line in place, and not past
// known, the part the caller trusts.
func (x *subjectIndex) holds(path string, known Start) (indexed, bool) {
	if x == nil {
		return indexed{}, false
	}
	ix, ok := x.files[WriterOf(path)]
	if !ok || ix.end.Offset > known.Offset {
		return indexed{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return indexed{}, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || durable.Inode(st) != ix.inode || !LineAt(f, ix.end) {
		return indexed{}, false
	}
	return ix, true
}

// find is the places of subject's lines, by file number; false when the
// record does not read.
func (x *subjectIndex) find(subject string) (map[int][]linePos, bool) {
	i, from, to, err := x.sum.Find(subject)
	if err != nil {
		return nil, false
	}
	out := map[int][]linePos{}
	if i < 0 {
		return out, true
	}
	d, err := x.sum.Record(from, to)
	if err != nil {
		return nil, false
	}
	for range d.Count() {
		p := linePos{n: int(d.Uint()), off: int64(d.Uint()), len: int64(d.Uint())}
		out[p.n] = append(out[p.n], p)
	}
	return out, d.End() == nil
}

// read is the events of the lines at ps in path's file (ix's part), about
// subject and taken by match; false when one of them does not decode, is
// not about subject or not within the part (the file was replaced since
// holds looked, or the index is not what it says): the file is searched
// instead.
func (x *subjectIndex) read(path string, ix indexed, ps []linePos, subject string, match func(*Event) bool) ([]*Event, bool, error) {
	if len(ps) == 0 {
		return nil, true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	dec := newDecoder(WriterOf(path))
	var out []*Event
	for _, p := range ps {
		if p.len <= 0 || p.len > MaxLine+1 || p.off < 0 || p.off+p.len > ix.end.Offset {
			return nil, false, nil
		}
		line := make([]byte, p.len)
		if _, err := f.ReadAt(line, p.off); err != nil || line[len(line)-1] != '\n' {
			return nil, false, nil
		}
		e, _, err := dec.decode(line)
		if err != nil || e.Subject != subject {
			return nil, false, nil // the search says what is wrong, if anything is
		}
		if match(e) {
			out = append(out, e)
		}
	}
	return out, true, nil
}

// IndexSubjects brings the subject index at path up to the parts of the
// files known trusts (KnownStarts), when more than slack bytes of them are
// not in it; it says whether it wrote the index. The part already indexed
// is kept; the rest is read a line at a time, every line decoded (its
// subject as About's decoding sees it), a copy of the line before passed
// over as a read does.
func (l *Log) IndexSubjects(ctx context.Context, path string, known map[string]Start, slack int64) (bool, error) {
	files, err := l.Files()
	if err != nil {
		return false, err
	}
	old := openSubjects(path)
	defer old.close()
	type part struct {
		path string
		from Start // where the index ends now (zero: nothing of it indexed)
		to   Start
		kept indexed
		held bool
	}
	var parts []part
	var gap int64
	for _, p := range files {
		k := known[WriterOf(p)]
		if k.Offset == 0 {
			continue
		}
		pt := part{path: p, to: k}
		if pt.kept, pt.held = old.holds(p, k); pt.held {
			pt.from = pt.kept.end
		}
		gap += k.Offset - pt.from.Offset
		parts = append(parts, pt)
	}
	if gap <= slack || len(parts) == 0 {
		return false, nil
	}
	subjects := map[string][]linePos{}
	if old != nil {
		renumber := map[int]int{}
		for i, pt := range parts {
			if pt.held {
				renumber[pt.kept.n] = i
			}
		}
		if err := old.each(func(subject string, ps []linePos) {
			for _, p := range ps {
				if n, ok := renumber[p.n]; ok {
					p.n = n
					subjects[subject] = append(subjects[subject], p)
				}
			}
		}); err != nil {
			clear(subjects) // it does not read: index every part whole
			for i := range parts {
				parts[i].from, parts[i].held = Start{}, false
			}
		}
	}
	// Where it goes first: a directory spool cannot write to costs no
	// reading, at every log -s.
	sweepIndexTemps(path, time.Now())
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name()) // once renamed, nothing
	defer tmp.Close()
	var inodes []uint64
	for i, pt := range parts {
		inode, err := indexPart(ctx, pt.path, i, pt.from, pt.to, subjects)
		if err != nil {
			return false, err
		}
		inodes = append(inodes, inode)
	}
	buf := bufio.NewWriterSize(tmp, 256<<10)
	t := table.NewWriter(buf, subjectsMagic, len(subjects))
	for _, s := range slices.Sorted(maps.Keys(subjects)) {
		t.Record(s, func(w *table.Enc) {
			ps := subjects[s]
			slices.SortFunc(ps, func(a, b linePos) int { return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.off, b.off)) })
			w.Uint(uint64(len(ps)))
			for _, p := range ps {
				w.Uint(uint64(p.n))
				w.Uint(uint64(p.off))
				w.Uint(uint64(p.len))
			}
		})
	}
	if err := t.FinishSummary(nil, func(w *table.Enc) {
		w.Uint(uint64(len(parts)))
		for i, pt := range parts {
			w.Str(WriterOf(pt.path))
			w.Uint(inodes[i])
			w.Int(pt.to.Offset)
			w.Int(pt.to.Len)
			w.Uint(uint64(pt.to.CRC))
		}
	}); err != nil {
		return false, err
	}
	if err := buf.Flush(); err != nil {
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil { // a cache: not synced
		return false, err
	}
	return true, nil
}

// each calls fn with every subject's places, in the index's order.
func (x *subjectIndex) each(fn func(subject string, ps []linePos)) error {
	t, err := table.Open(x.f, x.size, subjectsMagic, func(d *table.Dec, n int) error { table.SkipSummary(d); return nil })
	if err != nil {
		return err
	}
	recs, err := t.ReadRange(0, t.Len())
	if err != nil {
		return err
	}
	var ps []linePos
	for i, d := range recs {
		ps = ps[:0]
		for range d.Count() {
			ps = append(ps, linePos{n: int(d.Uint()), off: int64(d.Uint()), len: int64(d.Uint())})
		}
		if err := d.End(); err != nil {
			return err
		}
		fn(t.IDs[i], ps)
	}
	return nil
}

// indexPart adds the subjects of path's lines in [from, to) to subjects,
// as file n, and returns the file's inode. The lines were checked when
// they were folded; one that no longer decodes fails the index.
func indexPart(ctx context.Context, path string, n int, from, to Start, subjects map[string][]linePos) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !LineAt(f, to) || !LineAt(f, from) {
		return 0, errIndexMoved
	}
	dec := newDecoder(WriterOf(path))
	var prev *Event // the line before's, which a copy of it repeats
	if from.Offset > 0 {
		line := make([]byte, from.Len)
		if _, err := f.ReadAt(line, from.Offset-from.Len); err != nil {
			return 0, err
		}
		if prev, _, err = dec.decode(line); err != nil {
			return 0, errIndexMoved
		}
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, from.Offset, to.Offset-from.Offset), int(min(MaxLine+1, to.Offset-from.Offset+1)))
	for i, off := 0, from.Offset; off < to.Offset; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, errIndexMoved // cut short, or a line past MaxLine: not as it was folded
		}
		e, _, err := dec.decode(line)
		if err != nil {
			return 0, errIndexMoved // changed in place since it was folded
		}
		// A copy of the line before (as a read drops it: the same seq, lc
		// and id) is not indexed.
		if e.Subject != "" && (prev == nil || e.Seq != prev.Seq || e.LC != prev.LC || e.ID != prev.ID) {
			subjects[e.Subject] = append(subjects[e.Subject], linePos{n: n, off: off, len: int64(len(line))})
		}
		prev = e
		off += int64(len(line))
	}
	return durable.Inode(st), nil
}

// errIndexMoved is a file that changed under IndexSubjects.
var errIndexMoved = errors.New("the log changed while its subjects were indexed")

// sweepIndexTemps removes what a killed IndexSubjects left (WriteCache's
// temporary files) once an hour old.
func sweepIndexTemps(path string, now time.Time) {
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*"))
	for _, p := range left {
		if st, err := os.Stat(p); err == nil && now.Sub(st.ModTime()) > time.Hour {
			os.Remove(p)
		}
	}
}
