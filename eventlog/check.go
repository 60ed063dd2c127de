package eventlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// Problem is one rule the log breaks.
type Problem struct {
	Path    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

// CheckReport is what Check found.
type CheckReport struct {
	Events   int       `json:"events"`
	Files    int       `json:"files"`
	Problems []Problem `json:"problems"`
}

// Check reads every writer file on its own and reports broken rules: lines
// that do not parse, a torn tail, a writer field that is not the file's,
// seq not contiguous from 1, lc going backwards, ids duplicated or not
// matching the content.
func (l *Log) Check() (*CheckReport, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{Files: len(files), Problems: []Problem{}}
	ids := map[string]string{} // id → where first seen
	for _, path := range files {
		if err := checkFile(path, rep, ids); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

func checkFile(path string, rep *CheckReport, ids map[string]string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	writer := WriterOf(path)
	add := func(line int, format string, args ...any) {
		rep.Problems = append(rep.Problems, Problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var seq, lc uint64
	batchFrom := 0 // first line of a batch still waiting for its last event
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if batchFrom > 0 {
				add(batchFrom, "unfinished batch: lines %d to %d belong to an append that never finished (spool replay, or any command that appends, removes them)", batchFrom, n-1)
			}
			if len(line) > 0 {
				add(n, "torn tail: %d bytes without a newline (spool replay, or any command that appends, repairs it)", len(line))
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(line) > MaxLine {
			// Readers refuse it; Check must not call the log clean.
			add(n, "line of %d bytes, longer than %d", len(line), MaxLine)
			continue
		}
		e, err := Decode(line)
		if err != nil {
			add(n, "%v", err)
			continue
		}
		rep.Events++
		switch {
		case e.More && batchFrom == 0:
			batchFrom = n
		case !e.More:
			batchFrom = 0
		}
		if e.Writer != writer {
			add(n, "writer %q in the file of writer %q", e.Writer, writer)
		}
		if e.Seq != seq+1 {
			add(n, "seq %d follows %d (want %d)", e.Seq, seq, seq+1)
		}
		if e.LC < lc {
			add(n, "lc %d goes back from %d", e.LC, lc)
		}
		seq, lc = e.Seq, e.LC
		if want, err := e.computeID(); err == nil && want != e.ID {
			add(n, "id %s does not match the content (want %s): the line was edited", e.ID, want)
		}
		where := fmt.Sprintf("%s:%d", path, n)
		if first, dup := ids[e.ID]; dup {
			add(n, "id %s already used at %s", e.ID, first)
		} else {
			ids[e.ID] = where
		}
	}
}
