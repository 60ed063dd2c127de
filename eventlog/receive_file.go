package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spoolhq/spool/internal/durable"
)

// ReceiveFrom is Receive for a copy that write streams (a large blob read
// out of git), for the case a fresh clone meets: a writer file this log
// does not have yet. The copy goes to a file beside the log, is checked as
// it is read back, and is moved into place whole; it is never held in
// memory. Anything else (a local file to compare it with, a copy to put in
// order or to quarantine, a batch longer than the tail Whole looks at) is
// Receive's, on the file's bytes.
func (s *Session) ReceiveFrom(name string, write func(io.Writer) error, source string) (Received, error) {
	writer, ok := cutWriter(name)
	if !ok {
		return Received{}, fmt.Errorf("%w: %q from %s is not a writer file's name", ErrCorrupt, name, source)
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
	if err := write(f); err != nil {
		return Received{}, err
	}
	path := filepath.Join(s.log.opt.Dir, name)
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Received{}, err
	}
	inMemory := func() (Received, error) {
		theirs, err := os.ReadFile(tmp)
		if err != nil {
			return Received{}, err
		}
		return s.Receive(name, theirs, source)
	}
	if err == nil && fi.Size() > 0 {
		return inMemory()
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
	rep := &CheckReport{}
	if err := checkLines(io.NewSectionReader(f, 0, whole), path, rep); err != nil {
		return res, err
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
	res.Added = rep.Events
	return res, s.Reload()
}

// receivingSuffix ends the name of a copy ReceiveFrom is receiving.
const receivingSuffix = ".receiving"

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
