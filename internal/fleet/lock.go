package fleet

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/store"
)

// remoteMutex is the clone's lock for syncing (.git/spool/remote.lock):
// syncs of one clone (spool watch's, a command's) take turns, and spool's
// refs under refs/spool/sync are written only while it is held.
const remoteMutex = "remote"

// lockRemote takes the clone's sync lock, then removes the lock files git
// left on spool's tracking refs when it was killed mid-update (kill -9 of
// a sync and its git): no live process can own one now, and left there
// they would fail every later fetch.
func lockRemote(ctx context.Context, st *store.Store) (func(), error) {
	unlock, ok, err := st.Mutex(ctx, remoteMutex, st.Config.Duration("lock.timeout"))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("another spool sync holds %s: %w", st.MutexPath(remoteMutex), eventlog.ErrLockTimeout)
	}
	root := filepath.Join(st.Repo.CommonDir, "refs", "spool", "sync")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".lock") {
			os.Remove(path)
		}
		return nil
	})
	return unlock, nil
}
