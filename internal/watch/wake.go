package watch

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
)

// PingFile is the file git hooks write to wake a running watcher.
func PingFile(r *git.Repo) string { return filepath.Join(r.PrivateDir(), "watch.ping") }

// Ping wakes the watcher. The file is a signal, not data anyone reads back,
// so a plain write does: no fsync on the commit's path.
func Ping(r *git.Repo) error {
	return os.WriteFile(PingFile(r), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// Wakes returns a channel that receives when something may need a pass: a
// writer file of the log, a branch or a remote-tracking branch (loose or
// packed: git fetch and git pull bring other clones' events), the ping
// file or the configuration (a setting takes effect at once) changed. Where the file system cannot be watched it ticks every poll
// instead, after saying why through warn. It stops when ctx ends.
func Wakes(ctx context.Context, r *git.Repo, poll time.Duration, warn func(string)) <-chan struct{} {
	return wakes(ctx, r, poll, warn, watchRepo, func(name string) bool { return wanted(r, name) })
}

// LogWakes is Wakes for the log alone: it receives when a writer file of
// the log changed (an append here, or events another clone's sync or a
// fetch brought in). What a command does that appends nothing (a read, a
// claim through the remote that fetched its branch) does not wake it, so a
// command that waits for the log to change and then looks again never
// wakes itself (spool next --wait).
func LogWakes(ctx context.Context, r *git.Repo, poll time.Duration, warn func(string)) <-chan struct{} {
	dir := store.EventsDir(r)
	return wakes(ctx, r, poll, warn, func(*git.Repo) (*fsnotify.Watcher, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		w, err := fsnotify.NewWatcher()
		if err == nil {
			if err = w.Add(dir); err != nil {
				w.Close()
			}
		}
		return w, err
	}, func(name string) bool { return filepath.Dir(name) == dir && !strings.HasSuffix(name, ".lock") })
}

func wakes(ctx context.Context, r *git.Repo, poll time.Duration, warn func(string), open func(*git.Repo) (*fsnotify.Watcher, error), wanted func(string) bool) <-chan struct{} {
	ch := make(chan struct{}, 1)
	wake := func() {
		select {
		case ch <- struct{}{}:
		default: // one pending wake is as good as many
		}
	}
	w, err := open(r)
	if err != nil {
		warn(fmt.Sprintf("cannot watch the repository for changes (%v); polling every %s", err, poll))
		fault.Go(func() {
			t := time.NewTicker(poll)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					wake()
				}
			}
		})
		return ch
	}
	fault.Go(func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) && underRefs(r, ev.Name) {
					addTree(w, ev.Name) // a new branch directory (feature/…, a new remote)
				}
				if wanted(ev.Name) {
					wake()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				wake() // an overflow may have dropped what mattered
			}
		}
	})
	return ch
}

// watchRepo watches the log's directory, the branches and the two files
// of interest in git's directories.
func watchRepo(r *git.Repo) (*fsnotify.Watcher, error) {
	if err := os.MkdirAll(r.PrivateDir(), 0o755); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{store.EventsDir(r), r.CommonDir, r.PrivateDir(), r.SpoolDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			w.Close()
			return nil, err
		}
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, err
		}
	}
	for _, dir := range watchedRefs(r) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			w.Close()
			return nil, err
		}
		if err := addTree(w, dir); err != nil {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

// addTree watches dir and the directories under it.
func addTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return w.Add(p)
	})
}

// wanted filters out what changes in git's directories on every command
// (the index, lock files, logs): only the log, branches, packed-refs and
// the ping wake the watcher.
func wanted(r *git.Repo, name string) bool {
	if strings.HasSuffix(name, ".lock") {
		return false
	}
	switch filepath.Dir(name) {
	case store.EventsDir(r):
		return true
	case r.CommonDir:
		return filepath.Base(name) == "packed-refs"
	case r.PrivateDir():
		return name == PingFile(r)
	case r.SpoolDir():
		return name == store.ConfigPath(r)
	}
	return underRefs(r, name)
}

// watchedRefs are the ref directories whose changes wake the watcher.
func watchedRefs(r *git.Repo) []string {
	return []string{filepath.Join(r.CommonDir, "refs", "heads"), filepath.Join(r.CommonDir, "refs", "remotes")}
}

func underRefs(r *git.Repo, name string) bool {
	for _, dir := range watchedRefs(r) {
		if strings.HasPrefix(name, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
