package fleet

import (
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/refname"
)

// Configuration keys (README: Configuration).
func init() {
	config.Register(
		config.Key{Name: "sync.remote", Kind: config.String, Default: "", Check: func(v any) error { return refname.CheckRemote(v.(string)) },
			Help: "the git remote spool sync shares the log through (\"\": merge.remote's)"},
		config.Key{Name: "sync.branch", Kind: config.String, Default: "spool", Check: func(v any) error { return refname.CheckBranch(v.(string)) },
			Help: "the branch spool sync keeps the writer files on; nobody checks it out"},
		config.Key{Name: "sync.claims", Kind: config.Enum, Default: ClaimsLocal, Enum: []string{ClaimsLocal, ClaimsRemote},
			Help: "remote: next, the merge train, job dispatch and PRD promotion claim through the sync branch, so two machines never hold one claim"},
		config.Key{Name: "sync.offline_claims", Kind: config.Enum, Default: OfflineRefuse, Enum: []string{OfflineRefuse, OfflineLocal},
			Help: "with sync.claims = remote and the remote unreachable: refuse the claim (exit 4), or claim locally with a warning"},
		config.Key{Name: "sync.mode", Kind: config.Enum, Default: ModeBranch, Enum: []string{ModeBranch, ModeInline},
			Help: "branch: the log on a branch of its own (sync.branch); inline: .spool/events committed on the current branch"},
		config.Key{Name: "sync.interval", Kind: config.Duration, Default: 30 * time.Second, Min: config.Min(1), Max: config.Max(86400),
			Help: "how often spool watch syncs when sync.remote is set (and right after its own appends)"},
	)
}
