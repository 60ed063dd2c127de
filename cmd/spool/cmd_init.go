package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
)

// InitCmd creates .spool/ and registers the merge driver.
type InitCmd struct{}

// initNext tells a new user what to commit, once and from then on.
const initNext = `next:
  commit spool's files once:  git add .spool .gitattributes && git commit -m "spool: init"
  then commit .spool/events/ with your work: each clone appends only to its own
  file there (.spool/events/<writer>.jsonl), so clones never conflict
  optional: spool hooks install
`

const (
	gitattributesLine = ".spool/events/*.jsonl merge=spool"
	spoolGitignore    = "# derived by spool; rebuild with spool replay\nstate/\nruns/\n"
)

func (c *InitCmd) Run(e *env) error {
	r, err := git.Discover(e.ctx, e.dir())
	if err != nil {
		return err
	}
	var created []string
	note := func(path string) { rel, _ := filepath.Rel(r.Root, path); created = append(created, rel) }
	for _, dir := range []string{r.SpoolDir(), store.EventsDir(r)} {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			note(dir)
		}
	}
	files := []struct{ path, content string }{
		{store.ConfigPath(r), "{}\n"},
		{filepath.Join(r.SpoolDir(), ".gitignore"), spoolGitignore},
		{filepath.Join(store.EventsDir(r), ".gitkeep"), ""},
	}
	for _, f := range files {
		ok, err := writeIfMissing(f.path, f.content)
		if err != nil {
			return err
		}
		if ok {
			note(f.path)
		}
	}
	attrs := filepath.Join(r.Root, ".gitattributes")
	if ok, err := ensureLine(attrs, gitattributesLine); err != nil {
		return err
	} else if ok {
		note(attrs)
	}
	if ok, err := git.EnsureMergeDriver(e.ctx, r); err != nil {
		return err
	} else if ok {
		created = append(created, "git config merge.spool.driver")
	}
	st, err := store.OpenRepo(r, e.warn)
	if err != nil {
		return err
	}
	writer, err := st.Log.WriterID()
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"root": r.Root, "writer": writer, "created": nonNil(created)})
	}
	if len(created) == 0 {
		fmt.Fprintf(e.stdout, "spool already initialized in %s\n", r.Root)
		return nil
	}
	fmt.Fprintf(e.stdout, "initialized spool in %s (writer %s)\n", r.Root, writer)
	for _, p := range created {
		fmt.Fprintf(e.stdout, "  created %s\n", p)
	}
	fmt.Fprint(e.stdout, initNext)
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeIfMissing(path, content string) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.WriteString(content)
	return true, err
}

// ensureLine appends line to path unless some line already equals it.
func ensureLine(path, line string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if string(bytes.TrimSpace(l)) == line {
			return false, nil
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, line+"\n"...)
	return true, os.WriteFile(path, b, 0o644)
}
