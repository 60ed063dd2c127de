package eventlog

import (
	"bufio"
	"bytes"
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

// Check reads every writer file on its own and reports every broken rule:
// lines that do not parse, a torn tail, and what the readers' rules refuse
// (a foreign writer, seq not contiguous from 1, (lc, id) not increasing, an
// id that is not the content's hash).
func (l *Log) Check() (*CheckReport, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{Files: len(files), Problems: []Problem{}}
	for _, path := range files {
		if err := checkFile(path, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// CheckCopy reports what a copy of a writer file (named by its path, its
// content given) breaks of the log's rules, as Check would.
func CheckCopy(path string, content []byte) []Problem {
	rep := &CheckReport{Problems: []Problem{}}
	checkLines(bytes.NewReader(content), path, rep) // a reader of bytes does not fail
	return rep.Problems
}

// WholeLength is how much of the writer file at path holds whole batches:
// what Whole would keep of it, found from its end.
func WholeLength(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end, _, err := tornTail(f, st.Size())
	if err != nil {
		return 0, err
	}
	return unfinishedBatch(f, end)
}

// RepairHint is what the log's messages say about a problem spool doctor
// --repair can fix.
const RepairHint = "spool doctor --repair fixes it, keeping a backup"

func checkFile(path string, rep *CheckReport) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return checkLines(f, path, rep)
}

// checkLines judges the lines of the writer file named path, read from f.
func checkLines(f io.Reader, path string, rep *CheckReport) error {
	return checkLinesFrom(f, path, rep, newRules(WriterOf(path)), 1)
}

// checkLinesFrom judges the lines read from f as lines first, … of the
// writer file named path, after those r accepted (which ended a batch).
func checkLinesFrom(f io.Reader, path string, rep *CheckReport, r *rules, first int) error {
	add := func(line int, format string, args ...any) {
		rep.Problems = append(rep.Problems, Problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	br := bufio.NewReaderSize(f, 64<<10)
	// One decoder and the reader's buffer for every line (an event holds
	// no bytes of its line): a fresh clone checks a million.
	dec := newDecoder(r.writer)
	var long []byte // a line longer than the buffer, gathered
	batchFrom := 0  // first line of a batch still waiting for its last event
	for n := first; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if errors.Is(err, io.EOF) {
			if batchFrom > 0 {
				add(batchFrom, "unfinished batch: lines %d to %d belong to an append that never finished and was never acknowledged (%s)", batchFrom, n-1, RepairHint)
			}
			if len(line) > 0 {
				add(n, "torn tail: %d bytes without a newline, never acknowledged (%s)", len(line), RepairHint)
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
		e, sp, err := dec.decode(line)
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
		if b := r.check(line, e, sp, n); b != nil {
			if b.dup {
				rep.Events--
				add(n, "%s (%s)", b.msg, RepairHint)
				continue
			}
			add(n, "%s", b.msg)
			r.accept(e, n) // judge the next lines against this one
		}
	}
}
