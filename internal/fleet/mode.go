package fleet

import (
	"context"
	"time"

	"github.com/spoolhq/spool/internal/store"
)

// WatchOptions are the options spool watch syncs with, every interval: the
// remote's sync branch when the clone has a remote (OptionsFrom), the local
// branch alone otherwise.
func WatchOptions(ctx context.Context, st *store.Store) (Options, time.Duration, error) {
	o, err := OptionsFrom(ctx, st, "")
	return o, SettingsFrom(st.Config).Interval, err
}
