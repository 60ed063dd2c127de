package fleet

import (
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/store"
)

// Sync modes (sync.mode).
const (
	ModeBranch = "branch" // the writer files on a branch of their own (sync.branch)
	ModeInline = "inline" // .spool/events committed on the current branch
)

// Configuration keys of inline sync and of spool watch's syncing
// (README: Configuration).
func init() {
	config.Register(
		config.Key{Name: "sync.mode", Kind: config.Enum, Default: ModeBranch, Enum: []string{ModeBranch, ModeInline},
			Help: "branch: the log on a branch of its own (sync.branch); inline: .spool/events committed on the current branch"},
		config.Key{Name: "sync.interval", Kind: config.Duration, Default: 30 * time.Second, Min: config.Min(1), Max: config.Max(86400),
			Help: "how often spool watch syncs when sync.remote is set (and right after its own appends)"},
	)
}

// WatchOptions are the options spool watch syncs with, and whether it
// syncs at all: only when sync.remote is set, so a watch nobody configured
// for it never touches the network.
func WatchOptions(st *store.Store) (Options, time.Duration, bool) {
	if st.Config.String("sync.remote") == "" {
		return Options{}, 0, false
	}
	return OptionsFrom(st, ""), st.Config.Duration("sync.interval"), true
}
