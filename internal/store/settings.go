package store

import "github.com/spoolhq/spool/internal/config"

// Settings are the keys the store registers (sync.branch), read once by
// whoever needs them.
type Settings struct {
	SyncBranch string // sync.branch: the branch the log is shared on
}

// SettingsFrom reads the store's keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{SyncBranch: cfg.String("sync.branch")}
}
