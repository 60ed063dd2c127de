package eventlog

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
)

// ReceiveFrom is Receive for a copy that write streams (a large blob read
// out of git), for the case a fresh clone meets: a writer file this log
// does not have yet. The copy goes to a file beside the log, is checked as
// it is written (read back and checked again only when it ends in an
// unfinished batch or breaks a rule), and is moved into place whole; it is
// never held in memory. Anything else (a local file to compare it with, a
// copy to put in order or to quarantine, a batch longer than the tail
// Whole looks at) is Receive's, on the file's bytes.
func (s *Session) ReceiveFrom(name string, write func(io.Writer) error, source string) (Received, error) {
	writer, ok := cutWriter(name)
	if !ok {
		return Received{}, fmt.Errorf("%w: %q from %s is not a writer file's name", ErrCorrupt, name, source)
	}
	if fi, err := os.Stat(filepath.Join(s.log.opt.Dir, name)); err == nil && fi.Size() > 0 {
		return s.receiveOnto(name, writer, fi.Size(), Known{}, write, write, source)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Received{}, err
	}
	if err := os.MkdirAll(s.log.tmpDir(), 0o755); err != nil {
		return Received{}, err
	}
	// A copy left by a ReceiveFrom that was killed: only one runs at a
	// time, under the log's lock, which this session holds.
	if stale, err := filepath.Glob(filepath.Join(s.log.tmpDir(), "*"+receivingSuffix)); err == nil {
		for _, p := range stale {
			os.Remove(p)
		}
	}
	f, err := os.CreateTemp(s.log.tmpDir(), writer+"-*"+receivingSuffix)
	if err != nil {
		return Received{}, err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone once renamed: harmless
	defer f.Close()
	path := filepath.Join(s.log.opt.Dir, name)
	streamed, err := writeChecked(f, path, write)
	if err != nil {
		return Received{}, err
	}
	inMemory := func() (Received, error) {
		theirs, err := os.ReadFile(tmp)
		if err != nil {
			return Received{}, err
		}
		return s.Receive(name, theirs, source)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return Received{}, err
	}
	whole, ok, err := wholeSize(f, size)
	if err != nil {
		return Received{}, err
	}
	if !ok {
		return inMemory()
	}
	res := Received{Writer: writer}
	if whole == 0 {
		return res, nil
	}
	rep := streamed
	if rep == nil || whole != size || len(rep.Problems) > 0 {
		// What was checked is not what is kept (an unfinished batch at
		// the end), or a rule is broken: judged again on what is kept.
		rep = &CheckReport{}
		if err := checkLines(io.NewSectionReader(f, 0, whole), path, rep); err != nil {
			return res, err
		}
	}
	if len(rep.Problems) > 0 {
		return inMemory() // repaired, or quarantined, as Receive does
	}
	if err := f.Truncate(whole); err != nil {
		return res, err
	}
	if err := f.Sync(); err != nil {
		return res, err
	}
	if err := os.MkdirAll(s.log.opt.Dir, 0o755); err != nil {
		return res, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return res, err
	}
	if err := durable.SyncDir(s.log.opt.Dir); err != nil {
		return res, err
	}
	res.Added, res.Same = rep.Events, whole == size
	res.Held = res.Same
	return res, s.Reload()
}

// writeChecked runs write into f and checks the lines it writes as they
// come, on another core: the check of a fresh clone's copy of a million
// events (2 s) used to start once the copy was whole. The report is nil
// when the check could not read the stream to its end.
func writeChecked(f *os.File, path string, write func(io.Writer) error) (*CheckReport, error) {
	pr, pw := io.Pipe()
	rep := &CheckReport{}
	checked := make(chan error, 1)
	go func() {
		defer fault.Recover() // lines from another machine: a panic exits as one in main does
		err := checkLines(pr, path, rep)
		pr.CloseWithError(cmp.Or(err, io.ErrClosedPipe)) // a writer still writing stops waiting
		checked <- err
	}()
	err := write(io.MultiWriter(f, pw))
	pw.CloseWithError(err) // nil: the check reads to io.EOF
	if cerr := <-checked; cerr != nil {
		rep = nil
	}
	return rep, err
}

// Known is what a caller knows of a copy of a writer file: its first Size
// bytes are the local file's first Size bytes, which hold Lines lines.
type Known struct {
	Size  int64
	Lines int
}

// ReceiveFromKnown is ReceiveFrom for a copy that begins as the local file
// does for known.Size bytes (a file stored in parts, whose parts this log
// holds already, but the last): rest writes the copy from there on, and
// whole writes it all, for what is read whole (a copy that differs, or
// breaks a rule). A sync of one event added to a file of a million no
// longer streams the 290 MB it shares with the local file.
func (s *Session) ReceiveFromKnown(name string, known Known, rest, whole func(io.Writer) error, source string) (Received, error) {
	writer, ok := cutWriter(name)
	if !ok {
		return Received{}, fmt.Errorf("%w: %q from %s is not a writer file's name", ErrCorrupt, name, source)
	}
	fi, err := os.Stat(filepath.Join(s.log.opt.Dir, name))
	if err != nil || known.Size <= 0 || fi.Size() < known.Size {
		return s.ReceiveFrom(name, whole, source)
	}
	return s.receiveOnto(name, writer, fi.Size(), known, rest, whole, source)
}

// receivingSuffix ends the name of a copy ReceiveFrom is receiving.
const receivingSuffix = ".receiving"

// receiveOnto is ReceiveFrom for a writer file this log has, in the case
// a sync meets most: another machine appended to it. The copy is compared
// with the local file as it streams, and only what it adds is kept, checked
// from the local file's last line on (the lines before are the local
// file's own), and appended. Reading the copy whole and checking every
// line took 10 s and 600 MiB for one event added to a file of a million.
// Anything else (a copy that differs from the local file, a local file
// that does not end a batch, lines that break the rules) is Receive's, on
// the copy streamed again into memory. The lines the local file has are
// not judged again: a local file that breaks the rules (verify and doctor
// say so) does not get the copy quarantined, as Receive would.
func (s *Session) receiveOnto(name, writer string, size int64, known Known, rest, whole func(io.Writer) error, source string) (Received, error) {
	inMemory := func() (Received, error) {
		var b bytes.Buffer
		if err := whole(&b); err != nil {
			return Received{}, err
		}
		return s.Receive(name, b.Bytes(), source)
	}
	path := filepath.Join(s.log.opt.Dir, name)
	f, err := os.Open(path)
	if err != nil {
		return Received{}, err
	}
	defer f.Close()
	last, ok, err := lastBatchEnd(f, size)
	if err != nil {
		return Received{}, err
	}
	if !ok {
		return inMemory()
	}
	pw := &prefixWriter{ours: bufio.NewReaderSize(io.NewSectionReader(f, known.Size, size-known.Size), 256<<10), left: size - known.Size,
		lines: known.Lines, buf: make([]byte, 256<<10)}
	if err := rest(pw); errors.Is(err, errDiverged) {
		return inMemory()
	} else if err != nil {
		return Received{}, err
	}
	res := Received{Writer: writer, Same: pw.left == 0 && pw.suffix.Len() == 0, Held: pw.suffix.Len() == 0}
	added := Whole(pw.suffix.Bytes())
	if pw.left > 0 || len(added) == 0 {
		return res, nil // the copy is the local file or a prefix of it
	}
	rep := &CheckReport{}
	r := newRules(writer)
	r.accept(last, pw.lines)
	if err := checkLinesFrom(bytes.NewReader(added), path, rep, r, pw.lines+1); err != nil {
		return res, err
	}
	if len(rep.Problems) > 0 {
		return inMemory() // repaired, or quarantined, with the whole copy's line numbers
	}
	if err := appendLines(path, s.log.opt.Dir, added); err != nil {
		return res, err
	}
	res.Added, res.Same = rep.Events, len(added) == pw.suffix.Len()
	res.Held = res.Same
	return res, s.Reload()
}

// LineCounter counts the bytes and lines (newlines) written through it to
// W: a copy's, as ReceiveFrom streams it.
type LineCounter struct {
	W            io.Writer
	Lines, Bytes int
}

func (c *LineCounter) Write(b []byte) (int, error) {
	n, err := c.W.Write(b)
	c.Lines += bytes.Count(b[:n], newline)
	c.Bytes += n
	return n, err
}

// errDiverged stops a copy that differs from the local file.
var errDiverged = errors.New("the copy differs from the local file")

// prefixWriter compares what is written with the local file, then keeps
// what follows it.
type prefixWriter struct {
	ours   io.Reader // the local file
	left   int64     // its bytes not compared yet
	lines  int       // lines compared
	buf    []byte
	suffix bytes.Buffer
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && w.left > 0 {
		k := int(min(int64(len(p)), w.left, int64(len(w.buf))))
		if _, err := io.ReadFull(w.ours, w.buf[:k]); err != nil {
			return 0, err
		}
		if !bytes.Equal(w.buf[:k], p[:k]) {
			return 0, errDiverged
		}
		w.lines += bytes.Count(p[:k], newline)
		w.left -= int64(k)
		p = p[k:]
	}
	w.suffix.Write(p)
	return n, nil
}

// lastBatchEnd is the last line of the writer file f, of size bytes, when
// it ends a line and a batch, and its rules go on from it alone: it has a
// prev (a chained file, as every line after it must be), or it is the
// only line. Otherwise ok is false.
func lastBatchEnd(f io.ReaderAt, size int64) (e *Event, ok bool, err error) {
	start := max(0, size-MaxLine-1)
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	if len(tail) == 0 || tail[len(tail)-1] != '\n' {
		return nil, false, nil
	}
	i := bytes.LastIndexByte(tail[:len(tail)-1], '\n')
	if i < 0 && start > 0 {
		return nil, false, nil // longer than a line may be
	}
	e, err = Decode(tail[i+1:])
	if err != nil || e.More || e.Prev == "" && (i >= 0 || start > 0) {
		return nil, false, nil
	}
	return e, true, nil
}

// wholeTail is how much of a copy's end wholeSize reads: Whole looks back
// from the end only over the lines of an unfinished batch. A variable for
// the tests.
var wholeTail int64 = 1 << 20

// wholeSize is len(Whole(content)) for the file f of size bytes, from its
// last wholeTail bytes; ok is false when Whole would look further back.
func wholeSize(f io.ReaderAt, size int64) (n int64, ok bool, err error) {
	start := max(0, size-wholeTail)
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil && !errors.Is(err, io.EOF) {
		return 0, false, err
	}
	if start > 0 {
		i := bytes.IndexByte(tail, '\n')
		if i < 0 {
			return 0, false, nil
		}
		start, tail = start+int64(i)+1, tail[i+1:]
	}
	w := Whole(tail)
	if len(w) == 0 && start > 0 {
		return 0, false, nil // the unfinished batch may start before the tail
	}
	return start + int64(len(w)), true, nil
}
