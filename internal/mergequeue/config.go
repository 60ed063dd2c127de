package mergequeue

import (
	"errors"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/refname"
)

func init() {
	config.Register(
		config.Key{Name: "merge.target", Kind: config.String, Default: "main", Check: checkBranch, Help: "branch the merge train moves"},
		config.Key{Name: "merge.remote", Kind: config.String, Default: "origin", Check: checkRemote,
			Help: `remote branches are pushed to; "" for none (a remote that does not exist is skipped, with a note)`},
		config.Key{Name: "merge.test_command", Kind: config.Strings, Default: []string{}, Check: checkArgv,
			Help: `argv the train runs in the rebased worktree, e.g. ["go","test","./..."]; empty runs no test`},
		config.Key{Name: "merge.test_timeout", Kind: config.Duration, Default: 30 * time.Minute, Min: config.Min(1), Help: "the test command is killed after this long"},
		config.Key{Name: "merge.max_attempts", Kind: config.Int, Default: 3, Min: config.Min(1), Help: "attempts (claims) before a failing entry becomes failed_terminal"},
		config.Key{Name: "merge.lease", Kind: config.Duration, Default: 5 * time.Minute, Min: config.Min(1), Help: "a runner's hold on an entry; renewed while it works, recovered when it expires"},
		config.Key{Name: "merge.offline", Kind: config.Bool, Default: true,
			Help: "an unreachable merge.remote queues a submission as pending_push, pushed by the train when the remote answers; false refuses it (remote_unreachable)"},
		config.Key{Name: "merge.aging", Kind: config.Duration, Default: 24 * time.Hour, Min: config.Min(0),
			Help: "a pending entry's priority improves one level (toward 0) per this much waiting, so low priorities never starve; 0 turns aging off"},
		config.Key{Name: "merge.capacity", Kind: config.Int, Default: 0, Min: config.Min(0), Help: "most active entries in the merge queue; 0 is unlimited"},
	)
}

func checkBranch(v any) error { return refname.CheckBranch(v.(string)) }

// checkRemote accepts "" (no remote) or a name git could have configured.
func checkRemote(v any) error { return refname.CheckRemote(v.(string)) }

func checkArgv(v any) error {
	if argv := v.([]string); len(argv) > 0 && strings.TrimSpace(argv[0]) == "" {
		return errors.New("the program (the first word) is empty")
	}
	return nil
}

// PolicyFrom reads the deciders' policy from configuration.
func PolicyFrom(cfg *config.Config) Policy {
	return Policy{
		MaxAttempts: cfg.Int("merge.max_attempts"),
		Capacity:    cfg.Int("merge.capacity"),
		Lease:       cfg.Duration("merge.lease"),
		Admins:      cfg.Strings("admins"),
		Target:      cfg.String("merge.target"),
		Aging:       cfg.Duration("merge.aging"),
	}
}
