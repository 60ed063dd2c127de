package eventlog

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"io"
	"os"
)

// Hashed is an event with where it is and its content hash (what its
// signature covers).
type Hashed struct {
	Event *Event
	Path  string
	Line  int
	Hash  [sha256.Size]byte
}

// EachHashed calls fn with every event of every writer file, file by file in
// line order. Lines that do not decode or whose id is not their hash are
// skipped: Check reports them. An error from fn stops the walk.
func (l *Log) EachHashed(fn func(Hashed) error) error {
	files, err := l.Files()
	if err != nil {
		return err
	}
	for _, path := range files {
		if err := eachHashed(path, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachHashed(path string, fn func(Hashed) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	r := newRules(WriterOf(path))
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // a torn tail was never acknowledged
		}
		if err != nil {
			return err
		}
		e, sp, err := decode(line)
		if err != nil {
			continue
		}
		sum, ok := r.contentHash(line, e, sp)
		if !ok {
			continue
		}
		h := Hashed{Event: e, Path: path, Line: n}
		copy(h.Hash[:], sum)
		if err := fn(h); err != nil {
			return err
		}
	}
}
