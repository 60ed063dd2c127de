package fleet

import (
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/refname"
	"github.com/spoolhq/spool/internal/store"
)

// Configuration keys (docs/configuration.md).
func init() {
	config.Register(
		config.Key{Name: "sync.remote", Kind: config.String, Default: "", Check: func(v any) error { return refname.CheckRemote(v.(string)) },
			Help: "the git remote the log is shared through (\"\": merge.remote's, when git has it)"},
		config.Key{Name: "sync.claims", Kind: config.Enum, Default: ClaimsAuto, Enum: []string{ClaimsAuto, ClaimsRemote, ClaimsLocal},
			Help: "how next, the merge train, job dispatch and PRD promotion claim: auto is through the remote's sync branch when the clone has a remote (two machines never hold one claim), locally otherwise; remote requires one; local never asks it"},
		config.Key{Name: "sync.offline_claims", Kind: config.Enum, Default: OfflineRefuse, Enum: []string{OfflineRefuse, OfflineLocal},
			Help: "with sync.claims = remote and the remote unreachable: refuse the claim (exit 4), or claim locally with a warning"},
		config.Key{Name: "sync.interval", Kind: config.Duration, Default: 10 * time.Second, Min: config.Min(1), Max: config.Max(86400),
			Help: "how often spool watch syncs (and soon after this clone's appends)"},
	)
}

// Settings are the keys sync and claims read, loaded once where they start:
// code reads these fields, never a key by name.
type Settings struct {
	LockTimeout   time.Duration // lock.timeout
	Branch        string        // sync.branch
	Remote        string        // sync.remote ("": MergeRemote's, when git has it)
	MergeRemote   string        // merge.remote
	Claims        string        // sync.claims: ClaimsAuto, ClaimsRemote or ClaimsLocal
	OfflineClaims string        // sync.offline_claims: OfflineRefuse or OfflineLocal
	Interval      time.Duration // sync.interval: how often spool watch syncs
}

// SettingsFrom reads the keys of sync and claims.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{
		LockTimeout:   config.SettingsFrom(cfg).LockTimeout,
		Branch:        store.SettingsFrom(cfg).SyncBranch,
		Remote:        cfg.String("sync.remote"),
		MergeRemote:   mergequeue.SettingsFrom(cfg).Remote,
		Claims:        cfg.String("sync.claims"),
		OfflineClaims: cfg.String("sync.offline_claims"),
		Interval:      cfg.Duration("sync.interval"),
	}
}
