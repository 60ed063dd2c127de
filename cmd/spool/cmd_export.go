package main

import (
	"bufio"
	"context"
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
	if err := writeOutput(e.ctx, output, e.stdout, write); err != nil {
		if fe := (*fault.Error)(nil); errors.As(err, &fe) || errors.Is(err, context.Canceled) {
			return err // a bad prefix, an interrupt
		}
		return fault.New(fault.CodeStorage, err, fmt.Sprintf("cannot write %s: %v", output, err), "file", output)
	}
	if !e.JSON {
		fmt.Fprintf(e.stderr, "exported %d tasks to %s\n", n, filepath.Clean(output))
	}
	return nil
}

// writeOutput writes a file a user names (-o FILE) with write. Our own
// stdout (-o /dev/stdout, whatever it is) is written as stdout; a device
// or a pipe is written in place (a file renamed over /dev/null would
// replace it), giving up on an interrupt while a pipe has no reader; a
// file is replaced atomically, and through a symlink, its target, not the
// link. A file replaced keeps its mode; a new one is 0644, less the umask.
func writeOutput(ctx context.Context, path string, stdout io.Writer, write func(io.Writer) error) error {
	fi, err := os.Stat(path)
	if err != nil {
		if path, err = linkTarget(path); err != nil { // a symlink to a file not made yet
			return err
		}
	} else {
		if own, err := os.Stdout.Stat(); err == nil && os.SameFile(fi, own) {
			return write(stdout)
		}
		switch {
		case fi.IsDir():
			return errors.New("it is a directory")
		case !fi.Mode().IsRegular() || namesDescriptor(path):
			return writeInPlace(ctx, path, write)
		}
		if path, err = filepath.EvalSymlinks(path); err != nil {
			return err
		}
	}
	b := durable.NewBatch("")
	if err := b.WriteStream(path, 0o644, write, nil); err != nil {
		return err
	}
	return b.Done()
}

// writeInPlace writes a device, a pipe or a descriptor's file through a
// buffer, appending. Opening a pipe waits for a reader: an interrupt (ctx)
// ends the wait.
func writeInPlace(ctx context.Context, path string, write func(io.Writer) error) error {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		// Appending: a file behind a descriptor (-o /dev/stderr 2>>log) is
		// written where its holder writes, not over its start.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		ch <- opened{f, err}
	}()
	var o opened
	select {
	case o = <-ch:
	case <-ctx.Done():
		return fmt.Errorf("nothing read it before the interrupt: %w", ctx.Err())
	}
	if o.err != nil {
		return o.err
	}
	bw := bufio.NewWriterSize(o.f, 64<<10)
	err := write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// namesDescriptor says whether path names an open file descriptor
// (/dev/stderr, /dev/fd/3, /proc/self/fd/3): the file behind it, if a
// regular one, is written in place, not replaced.
func namesDescriptor(path string) bool {
	p := filepath.Clean(path)
	return p == "/dev/stdout" || p == "/dev/stderr" || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

// linkTarget is the path path's symlinks lead to, the last of them naming
// nothing yet; path itself when it is no symlink.
func linkTarget(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			// From the directory the link is in, as the kernel reads it:
			// its .. is the parent of where a symlinked directory leads.
			dir, err := filepath.EvalSymlinks(filepath.Dir(path))
			if err != nil {
				return "", err
			}
			to = filepath.Join(dir, to)
		}
		path = to
	}
	return "", errors.New("too many levels of symbolic links")
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
