package fleet

import (
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/refname"
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
