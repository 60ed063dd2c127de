package watch

import (
	"time"

	"github.com/spoolhq/spool/internal/config"
)

// Configuration keys (docs/configuration.md). spool watch reads them when
// it starts.
func init() {
	config.Register(
		config.Key{Name: "watch.poll", Kind: config.Duration, Default: 2 * time.Second, Min: config.Min(0.05), Max: config.Max(3600),
			Help: "how often spool watch looks for changes where the file system cannot tell it"},
		config.Key{Name: "watch.merge_train", Kind: config.Bool, Default: false,
			Help: "spool watch runs the merge train (as spool merge run does)"},
		config.Key{Name: "watch.job_slots", Kind: config.Int, Default: 0, Min: config.Min(0),
			Help: "slots of the job worker spool watch runs (0: none)"},
	)
}

// Settings are spool watch's keys, read once when it starts.
type Settings struct {
	Poll       time.Duration // watch.poll
	MergeTrain bool          // watch.merge_train
	JobSlots   int           // watch.job_slots (0: no worker)
}

// SettingsFrom reads spool watch's keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{Poll: cfg.Duration("watch.poll"), MergeTrain: cfg.Bool("watch.merge_train"), JobSlots: cfg.Int("watch.job_slots")}
}
