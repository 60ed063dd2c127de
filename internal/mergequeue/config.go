package mergequeue

import (
	"errors"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/refname"
)

func init() {
	config.Register(
		config.Key{Name: "merge.target", Kind: config.String, Default: "main", Check: checkBranch, Help: "branch the merge train moves"},
		config.Key{Name: "merge.remote", Kind: config.String, Default: "origin", Check: checkRemote,
			Help: `remote branches are pushed to; "" for none (a remote that does not exist is skipped, with a note)`},
		config.Key{Name: "merge.test_command", Kind: config.Strings, Default: []string{}, Check: checkArgv,
			Help: `argv the train runs in the rebased worktree, e.g. ["go","test","./..."]; the train refuses to run until this or merge.untested is set`},
		config.Key{Name: "merge.untested", Kind: config.Bool, Default: false,
			Help: "true: the train merges without testing (no merge.test_command); the entry's testing step says so"},
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

// The train merges untested only when told to: an empty test command is
// not a choice anyone made, so both unset is refused where the train
// starts (TestPlan), and both set here.
func init() {
	config.RegisterRule(func(c *config.Config) error {
		if c.Bool("merge.untested") && len(c.Strings("merge.test_command")) > 0 {
			return errors.New("merge.untested is true and merge.test_command is set: choose one (spool config unset merge.untested, or spool config unset merge.test_command)")
		}
		return nil
	})
}

// UntestedReason is the testing step's reason when the train merges
// without a test (merge.untested).
const UntestedReason = "untested: merge.untested is true"

// CodeNoTestCommand is a train started with neither merge.test_command nor
// merge.untested set.
var CodeNoTestCommand = fault.Register(fault.Usage, "no_test_command")

// TestPlan is what the train runs to test an entry: the test command's
// argv, or nothing when merge.untested says so. Neither set is refused:
// the train does not start, and claims nothing.
func TestPlan(cfg *config.Config) (argv []string, untested bool, err error) {
	return SettingsFrom(cfg).TestPlan()
}

// TestPlan is TestPlan of these settings.
func (s Settings) TestPlan() (argv []string, untested bool, err error) {
	argv, untested = s.TestCommand, s.Untested
	if len(argv) == 0 && !untested {
		return nil, false, fault.New(CodeNoTestCommand, nil,
			`the merge train needs to know how to test an entry: spool config set merge.test_command '["go","test","./..."]' (your test command), `+
				"or spool config set merge.untested true to merge without testing")
	}
	return argv, untested, nil
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

// Settings are the merge queue's configuration, read when a command or a
// train's claim starts (the train reads them again for every claim: spool
// watch rereads the file): code reads these fields, never a key by name.
type Settings struct {
	Policy      Policy        // what the deciders apply
	Remote      string        // merge.remote ("": none)
	TestCommand []string      // merge.test_command
	Untested    bool          // merge.untested
	TestTimeout time.Duration // merge.test_timeout
	Offline     bool          // merge.offline: an unreachable remote queues the submission
}

// SettingsFrom reads the merge queue's keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{
		Policy:      PolicyFrom(cfg),
		Remote:      cfg.String("merge.remote"),
		TestCommand: cfg.Strings("merge.test_command"),
		Untested:    cfg.Bool("merge.untested"),
		TestTimeout: cfg.Duration("merge.test_timeout"),
		Offline:     cfg.Bool("merge.offline"),
	}
}

// PolicyFrom reads the deciders' policy from configuration.
func PolicyFrom(cfg *config.Config) Policy {
	return Policy{
		MaxAttempts: cfg.Int("merge.max_attempts"),
		Capacity:    cfg.Int("merge.capacity"),
		Lease:       cfg.Duration("merge.lease"),
		Admins:      config.SettingsFrom(cfg).Admins,
		Target:      cfg.String("merge.target"),
		Aging:       cfg.Duration("merge.aging"),
	}
}
