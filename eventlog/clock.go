package eventlog

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"time"
)

// Backwards is a writer whose events' times go back: an event dated
// before the one before it in the writer's file (audit trails, such as the
// merge queue's, need each writer's times never to decrease).
// Session.Append never writes one (it holds a writer's times, as a hybrid
// logical clock); a file written before it did, or by hand, may hold some.
// It breaks no rule of the log: verify reports it, and every read takes
// the events as they are.
type Backwards struct {
	Writer string    `json:"writer"`
	File   string    `json:"file"`
	Count  int       `json:"count"` // events dated before the one before them
	Line   int       `json:"line"`  // the first of them
	At     time.Time `json:"at"`    // its time
	After  time.Time `json:"after"` // the time of the event before it
}

// ClockBackwards lists the writers whose events' times go back, by file.
// It reads only each line's time, not the whole event.
func (l *Log) ClockBackwards() ([]Backwards, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	var out []Backwards
	for _, path := range files {
		b, err := clockOf(path)
		if err != nil {
			return nil, err
		}
		if b.Count > 0 {
			out = append(out, b)
		}
	}
	return out, nil
}

var atField = []byte(`"at":"`)

func clockOf(path string) (Backwards, error) {
	b := Backwards{Writer: WriterOf(path), File: filepath.Base(path)}
	f, err := os.Open(path)
	if err != nil {
		return b, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLine+1)
	var last time.Time
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		i := bytes.Index(line, atField) // the envelope's: the fields before it hold no such text
		if i < 0 {
			continue
		}
		rest := line[i+len(atField):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
		if err != nil {
			continue // the log's rules report it
		}
		if at.Before(last) {
			if b.Count == 0 {
				b.Line, b.At, b.After = n, at, last
			}
			b.Count++
			continue // later events are compared with the latest time seen
		}
		last = at
	}
	return b, sc.Err()
}
