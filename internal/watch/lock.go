package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
)

// lockName is the clone's watch lock (.git/spool/watch.lock): one watcher
// a clone. The kernel drops it with its process, kill -9 included.
const lockName = "watch"

func pidFile(st *store.Store) string { return filepath.Join(st.Repo.PrivateDir(), "watch.pid") }

// Lock takes the clone's watch lock and records this process's pid next to
// it; a second watcher gets already_running with the first one's pid.
func Lock(ctx context.Context, st *store.Store) (func(), error) {
	release, ok, err := st.Mutex(ctx, lockName, 0)
	if err != nil {
		return nil, err
	}
	if !ok {
		pid := holder(st)
		who := "another process"
		if pid > 0 {
			who = "pid " + strconv.Itoa(pid)
		}
		return nil, fault.New(fault.CodeAlreadyRunning, nil,
			fmt.Sprintf("spool watch already runs in this clone (%s holds %s)", who, st.MutexPath(lockName)), "pid", pid)
	}
	if err := durable.WriteFile(pidFile(st), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		release()
		return nil, err
	}
	return func() {
		os.Remove(pidFile(st)) // before the lock goes: the next holder writes its own
		release()
	}, nil
}

// holder is the pid the running watcher recorded, 0 when unknown. It was
// written just after the lock was taken: a watcher starting this instant
// gets a moment to write it.
func holder(st *store.Store) int {
	for range 10 {
		b, err := os.ReadFile(pidFile(st))
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

// Running reports whether a watcher holds the clone's lock.
func Running(ctx context.Context, st *store.Store) (bool, error) {
	unlock, ok, err := st.Mutex(ctx, lockName, 0)
	if err != nil || !ok {
		return err == nil, err
	}
	unlock()
	return false, nil
}
