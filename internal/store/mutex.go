package store

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// Mutex takes the clone's lock called name (.git/spool/<name>.lock): the
// side effects a command runs after its append (bd requests, epics) take
// turns on it, so that two commands never run the same one. It waits up to
// wait (0: not at all); ok is false when another process held it
// throughout. It is not the log's lock: appends go on meanwhile.
func (s *Store) Mutex(ctx context.Context, name string, wait time.Duration) (unlock func(), ok bool, err error) {
	dir := s.Repo.PrivateDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	lock := flock.New(filepath.Join(dir, name+".lock"))
	if wait <= 0 {
		ok, err = lock.TryLock()
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		ok, err = lock.TryLockContext(wctx, 20*time.Millisecond)
		if !ok && ctx.Err() == nil {
			err = nil // waited long enough: held by another process
		}
	}
	if !ok {
		return nil, false, err
	}
	return func() { _ = lock.Unlock() }, true, nil
}

// MutexPath is where the lock Mutex(name) takes lives, for messages.
func (s *Store) MutexPath(name string) string {
	return filepath.Join(s.Repo.PrivateDir(), name+".lock")
}
