package fleet

import (
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
	)
}
