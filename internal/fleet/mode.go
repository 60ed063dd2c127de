package fleet

import (
	"time"

	"github.com/spoolhq/spool/internal/store"
)

// Sync modes (sync.mode).
const (
	ModeBranch = "branch" // the writer files on a branch of their own (sync.branch)
	ModeInline = "inline" // .spool/events committed on the current branch
)

// WatchOptions are the options spool watch syncs with, and whether it
// syncs at all: only when sync.remote is set, so a watch nobody configured
// for it never touches the network.
func WatchOptions(st *store.Store) (Options, time.Duration, bool) {
	if st.Config.String("sync.remote") == "" {
		return Options{}, 0, false
	}
	return OptionsFrom(st, ""), st.Config.Duration("sync.interval"), true
}
