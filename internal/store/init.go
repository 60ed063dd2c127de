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

// Initialized is what Init made (paths relative to the root); empty when
// the repository was initialized already.
type Initialized struct {
	Root    string   `json:"root"`
	Writer  string   `json:"writer"`
	Created []string `json:"created"`
}

// Init sets spool up in the repository containing dir: .spool/config.json
// in the primary worktree, to be committed, and this clone's log under the
// git common dir. It is idempotent.
func Init(ctx context.Context, dir string, warn func(string), opts ...Option) (*Initialized, error) {
	r, err := git.Discover(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := &Initialized{Root: r.Root, Created: []string{}}
	if err := os.MkdirAll(r.SpoolDir(), 0o755); err != nil {
		return nil, err
	}
	created, err := durable.CreateNew(ConfigPath(r), []byte("{}\n"), 0o644)
	if err != nil {
		return nil, err
	}
	if created {
		out.Created = append(out.Created, filepath.Join(".spool", "config.json"))
	}
	st, err := OpenRepo(r, warn, opts...)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(EventsDir(r)); errors.Is(err, fs.ErrNotExist) {
		// The first receive makes the log's directory, bringing in the
		// events of a repository that had them in the old layout.
		if err := st.Receive(ctx, true); err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(r.Root, EventsDir(r))
		if err != nil || !filepath.IsLocal(rel) {
			rel = EventsDir(r) // a git dir outside the work tree
		}
		out.Created = append(out.Created, rel)
	}
	if legacyAttributes(r) {
		if registered, err := git.EnsureMergeDriver(ctx, r); err != nil {
			return nil, err
		} else if registered {
			out.Created = append(out.Created, "git config merge.spool.driver")
		}
	}
	if out.Writer, err = st.Log.WriterID(); err != nil {
		return nil, err
	}
	return out, nil
}

// ensureLine adds line to path unless some line already equals it.
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

// workTreeFiles are the files spool writes in the work tree (the PRD queue's
// manifests, where planning tools look for them): views of the log, for people
// and tools to read, that git must neither list nor merge.
var workTreeFiles = []string{"/docs/prd/_queue/*.json"}

// exclude adds patterns to the clone's .git/info/exclude (git's own,
// never committed) unless they are there. It reads one small file when
// they are.
func exclude(r *git.Repo, patterns []string) error {
	path := filepath.Join(r.CommonDir, "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	for _, p := range patterns {
		if _, err := ensureLine(path, p); err != nil {
			return err
		}
	}
	return nil
}

// legacyAttributes says whether the work tree's .gitattributes names
// spool's merge driver, as spool init wrote it before the log left the
// work tree.
func legacyAttributes(r *git.Repo) bool {
	b, err := os.ReadFile(filepath.Join(r.Root, ".gitattributes"))
	return err == nil && bytes.Contains(b, []byte("merge=spool"))
}
