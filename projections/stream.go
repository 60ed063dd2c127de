package projections

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/spoolhq/spool/internal/fault"
)

// StateWriter is a Projection that can write its state as a stream, the
// same bytes MarshalState returns: Save and Verify then never hold the
// encoded state whole, only the state itself.
type StateWriter interface {
	WriteState(w io.Writer) error
}

// Scratcher is a StateWriter that gathers part of its state in a file of
// its own as it writes: the engine names the directory (the state's .tmp,
// which Save empties of what a crashed save left) before each WriteState.
type Scratcher interface {
	ScratchIn(dir string)
}

// FileWriter is a Projection that can write its public files as streams,
// the same files, in the same order, with the same bytes as Files returns:
// Save and Verify then never hold a file whole. WriteFiles calls emit once
// per file; emit calls write at most once, with where the bytes go.
type FileWriter interface {
	WriteFiles(emit func(path string, workTree bool, write func(w io.Writer) error) error) error
}

// Freezer is a Projection whose state Freeze makes safe to read from two
// goroutines at once (nothing is decoded on first use afterwards): Save then
// writes its files and its snapshot side by side. Freeze reports whether
// the state is large (Engine.OnLargeSave).
type Freezer interface {
	Freeze() (large bool)
}

// alongside starts files on a second goroutine when p is a Freezer (frozen
// first) and returns what waits for its result; otherwise files runs here,
// before alongside returns. onLarge is Engine.OnLargeSave.
func alongside(onLarge func() (done func()), p Projection, files func() error) (wait func() error) {
	f, ok := p.(Freezer)
	if !ok {
		err := files()
		return func() error { return err }
	}
	var thaw func()
	if f.Freeze() && onLarge != nil {
		thaw = onLarge()
	}
	done := make(chan error, 1)
	fault.Go(func() {
		// A record found damaged here (a table is read as it is written)
		// is the command's error, as it is on the first goroutine.
		defer func() {
			if p := recover(); p != nil {
				fe, ok := p.(*fault.Error) // a typed error, as guarded in cmd/spool takes it
				if !ok {
					panic(p)
				}
				done <- fe
			}
		}()
		done <- files()
	})
	return sync.OnceValue(func() error {
		err := <-done
		if thaw != nil {
			thaw()
		}
		return err
	})
}

// RecordChecker is an Opener whose snapshot is canonical: its bytes are
// what encoding the state they hold writes. Verify hashes an up-to-date
// one's bytes instead of decoding and encoding it again, once CheckRecords
// (which panics as a read of a damaged record does) found every record whole.
type RecordChecker interface {
	Opener
	CheckRecords()
}

// eachFile calls fn with each public file of p: streamed when p is a
// FileWriter, else from Files. An error of p's is wrapped as a render error.
func eachFile(name string, p Projection, fn func(path string, workTree bool, write func(w io.Writer) error) error) error {
	var fnErr error // an error of fn's is returned as it is
	call := func(path string, workTree bool, write func(w io.Writer) error) error {
		fnErr = fn(path, workTree, write)
		return fnErr
	}
	var err error
	if fw, ok := p.(FileWriter); ok {
		err = fw.WriteFiles(call)
	} else {
		var files []File
		if files, err = p.Files(); err == nil {
			for _, f := range files {
				data := f.Data
				if err = call(f.Path, f.WorkTree, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
					break
				}
			}
		}
	}
	if err != nil && (fnErr == nil || !errors.Is(err, fnErr)) {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return err
}

// writeState writes p's state to w: streamed when p is a StateWriter, a
// Scratcher's scratch files in scratch.
func writeState(name string, p Projection, w io.Writer, scratch string) error {
	if sc, ok := p.(Scratcher); ok {
		sc.ScratchIn(scratch)
	}
	if sw, ok := p.(StateWriter); ok {
		if err := sw.WriteState(w); err != nil {
			return fmt.Errorf("marshal %s: %w", name, err)
		}
		return nil
	}
	b, err := p.MarshalState()
	if err != nil {
		return fmt.Errorf("marshal %s: %w", name, err)
	}
	_, err = w.Write(b)
	return err
}

// stateDigest is the SHA-256 of p's encoded state.
func stateDigest(name string, p Projection, scratch string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h := sha256.New()
	bw := bufio.NewWriterSize(h, 64<<10)
	if err := writeState(name, p, bw, scratch); err != nil {
		return sum, err
	}
	if err := bw.Flush(); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// The checkpoint's sum is a CRC-32 (IEEE, which amd64 computes with
// carry-less multiplication and needs no large table made at start): the
// snapshot is a file spool derives and keeps, not a trust boundary, and a
// CRC notices damage or an edit at a tenth of SHA-256's cost (1 ms of
// every read of 2.3 MB of jobs).
const sumPrefix = "crc32:"

// bodySum is the checkpoint's sum of a state.
func bodySum(body []byte) string {
	return fmt.Sprintf("%s%08x", sumPrefix, crc32.ChecksumIEEE(body))
}

// streamSum is bodySum of p's encoded state, written without holding it.
func streamSum(name string, p Projection, scratch string) (string, error) {
	h := crc32.NewIEEE()
	bw := bufio.NewWriterSize(h, 64<<10)
	if err := writeState(name, p, bw, scratch); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%08x", sumPrefix, h.Sum32()), nil
}

// sumMatches says whether body is the state a checkpoint's sum is of.
func sumMatches(sum string, body []byte) bool { return sum == bodySum(body) }

// fileDigest is the SHA-256 of path's bytes from off on.
func fileDigest(path string, off int64) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, off, 1<<62)); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// sameFile compares the bytes written to it with a file on disk, reading the
// file as they come: neither side is held whole.
type sameFile struct {
	f       *os.File // nil when the file does not exist
	r       *bufio.Reader
	buf     []byte
	n       int64 // bytes written
	diff    int64 // offset of the first difference, -1 while none
	lines   int   // newlines before diff (or before n, while none)
	readErr error // other than the file being shorter
}

// compareWith opens path for a comparison; a missing file compares as
// missing, not as an error.
func compareWith(path string) (*sameFile, error) {
	s := &sameFile{diff: -1}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	s.f, s.r, s.buf = f, bufio.NewReaderSize(f, 256<<10), make([]byte, 64<<10)
	return s, nil
}

func (s *sameFile) Write(p []byte) (int, error) {
	written := len(p)
	for s.f != nil && s.diff < 0 && len(p) > 0 {
		k := min(len(p), len(s.buf))
		m, err := io.ReadFull(s.r, s.buf[:k])
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			s.readErr = err
			return 0, err
		}
		i := mismatch(p[:m], s.buf[:m])
		if i < 0 && m < k {
			i = m // the file ends first
		}
		if i >= 0 {
			s.diff = s.n + int64(i)
			s.lines += bytes.Count(p[:i], []byte{'\n'})
			break
		}
		s.lines += bytes.Count(p[:k], []byte{'\n'})
		s.n += int64(k)
		p = p[k:]
	}
	if s.diff >= 0 || s.f == nil {
		s.n += int64(len(p))
	}
	return written, nil
}

// mismatch is the index of the first byte where a and b differ, -1 if none.
func mismatch(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// result says, once everything is written, whether the file is missing or
// equal, and otherwise where it first differs.
func (s *sameFile) result() (missing, equal bool, where string, err error) {
	if s.f == nil {
		return true, false, "", nil
	}
	if s.readErr != nil {
		return false, false, "", s.readErr
	}
	if s.diff < 0 {
		// Everything written matched: equal if the file ends there too.
		if _, err := s.r.ReadByte(); errors.Is(err, io.EOF) {
			return false, true, "", nil
		} else if err != nil {
			return false, false, "", err
		}
		s.diff = s.n
	}
	return false, false, fmt.Sprintf("first at line %d (byte %d)", s.lines+1, s.diff), nil
}

func (s *sameFile) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// capped keeps what is written to it while it stays within max bytes.
type capped struct {
	b    []byte
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if !c.over {
		if len(c.b)+len(p) > c.max {
			c.over, c.b = true, nil
		} else {
			c.b = append(c.b, p...)
		}
	}
	return len(p), nil
}
