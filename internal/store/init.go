package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/git"
)

const (
	gitattributesLine = ".spool/events/*.jsonl merge=spool"
	spoolGitignore    = "# derived by spool; rebuild with spool replay\nstate/\nruns/\n# job outputs (spool job worker)\njobs/\n"
)

// Initialized is what Init made (paths relative to the root); empty when
// the repository was initialized already.
type Initialized struct {
	Root    string   `json:"root"`
	Writer  string   `json:"writer"`
	Created []string `json:"created"`
}

// Init makes .spool/ in the repository containing dir: the events
// directory, config.json, a .gitignore for derived state, the merge driver's
// line in .gitattributes and the driver in git config. It is idempotent.
func Init(ctx context.Context, dir string, warn func(string)) (*Initialized, error) {
	r, err := git.Discover(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := &Initialized{Root: r.Root, Created: []string{}}
	note := func(path string) {
		rel, _ := filepath.Rel(r.Root, path)
		out.Created = append(out.Created, rel)
	}
	for _, d := range []string{r.SpoolDir(), EventsDir(r)} {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
			note(d)
		}
	}
	for _, f := range []struct{ path, content string }{
		{ConfigPath(r), "{}\n"},
		{filepath.Join(r.SpoolDir(), ".gitignore"), spoolGitignore},
		{filepath.Join(EventsDir(r), ".gitkeep"), ""},
	} {
		created, err := durable.CreateNew(f.path, []byte(f.content), 0o644)
		if err != nil {
			return nil, err
		}
		if created {
			note(f.path)
		}
	}
	attrs := filepath.Join(r.Root, ".gitattributes")
	if added, err := ensureLine(attrs, gitattributesLine); err != nil {
		return nil, err
	} else if added {
		note(attrs)
	}
	if registered, err := git.EnsureMergeDriver(ctx, r); err != nil {
		return nil, err
	} else if registered {
		out.Created = append(out.Created, "git config merge.spool.driver")
	}
	st, err := OpenRepo(r, warn)
	if err != nil {
		return nil, err
	}
	if out.Writer, err = st.Log.WriterID(); err != nil {
		return nil, err
	}
	return out, nil
}

// ensureLine adds line to path unless some line already equals it.
// IgnoreJobOutputs adds jobs/ to .spool/.gitignore in a repository
// initialized before job outputs existed.
func IgnoreJobOutputs(r *git.Repo) error {
	_, err := ensureLine(filepath.Join(r.SpoolDir(), ".gitignore"), "jobs/")
	return err
}

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
	return true, durable.WriteFile(path, b, 0o644)
}
