package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// ExportCmd writes every task as beads' JSONL, for bd import.
type ExportCmd struct {
	Output string `short:"o" placeholder:"FILE" help:"Write to FILE (atomically) rather than stdout."`
	Prefix string `help:"Give every id this prefix, as bd import wants its own (sp-4mx5 becomes bd-4mx5)."`
}

func (c *ExportCmd) Run(e *env) error { return exportTasks(e, c.Output, c.Prefix) }

// ImportCmd reads beads' JSONL (bd export) into spool's tracker.
type ImportCmd struct {
	File   string `arg:"" placeholder:"FILE" help:"A bd JSONL export; - reads stdin."`
	Prefix string `help:"Give every id this prefix (bd-4mx5 becomes sp-4mx5)."`
}

func (c *ImportCmd) Run(e *env) error { return importTasks(e, c.File, c.Prefix) }

func exportTasks(e *env, output, prefix string) error {
	longRunning() // streams every task: keep memory bounded
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	st, err := q.Read(e.ctx, wqservice.Tracker)
	if err != nil {
		return err
	}
	n := 0
	write := func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return st.ExportEach(prefix, func(r workqueue.TaskJSON) error {
			n++
			return enc.Encode(r)
		})
	}
	if output == "" {
		return write(e.stdout)
	}
	if err := writeOutput(output, write); err != nil {
		if fe := (*fault.Error)(nil); errors.As(err, &fe) {
			return err // a bad prefix
		}
		return fault.New(fault.CodeStorage, err, fmt.Sprintf("cannot write %s: %v", output, err), "file", output)
	}
	if !e.JSON {
		fmt.Fprintf(e.stderr, "exported %d tasks to %s\n", n, filepath.Clean(output))
	}
	return nil
}

// writeOutput writes a file a user names (-o FILE) with write: a new or
// regular file is replaced atomically, a symlink's target rather than the
// link; anything else, a device or a pipe (-o /dev/stdout), is written in
// place: a file renamed over /dev/null would replace it.
func writeOutput(path string, write func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(f, 64<<10)
		err = write(bw)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	b := durable.NewBatch("")
	if err := b.WriteStream(path, 0o644, write, nil); err != nil {
		return err
	}
	return b.Done()
}

func importTasks(e *env, file, prefix string) error {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fault.New(fault.CodeUsage, err, fmt.Sprintf("cannot read %s: %v", file, err), "file", file)
		}
		defer f.Close()
		r = f
	}
	n, total, err := importFrom(e, r, prefix)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]int{"imported": n, "unchanged": total - n})
	}
	fmt.Fprintf(e.stdout, "imported %d tasks (%d unchanged)\n", n, total-n)
	return nil
}

// importFrom records the issues of a bd JSONL stream that differ from the
// tracker's, warning of what it leaves out; it returns how many it
// recorded, and how many the stream had.
func importFrom(e *env, r io.Reader, prefix string) (int, int, error) {
	recs, rep, err := workqueue.ParseJSONL(r)
	if err != nil {
		return 0, 0, err
	}
	if prefix != "" {
		if err := workqueue.RenamePrefix(recs, prefix); err != nil {
			return 0, 0, err
		}
	}
	q, err := e.workqueue()
	if err != nil {
		return 0, 0, err
	}
	if len(rep.Dropped) > 0 {
		e.warn(fmt.Sprintf("spool keeps no %s: those fields are not imported", strings.Join(rep.Dropped, ", ")))
	}
	if rep.Tombstones > 0 {
		e.warn(fmt.Sprintf("skipped %d deleted issues (bd's tombstones)", rep.Tombstones))
	}
	if len(rep.AsOpen) > 0 {
		e.warn(fmt.Sprintf("imported %s as open: spool has no pinned or hooked status", strings.Join(rep.AsOpen, ", ")))
	}
	n, err := q.Import(e.ctx, recs)
	return n, len(recs), err
}
