package orchestrator

import (
	"time"

	"github.com/spoolhq/spool/internal/config"
)

// Configuration keys (docs/configuration.md).
func init() {
	config.Register(
		config.Key{Name: "orchestrator.agent_command", Kind: config.Strings, Default: []string{},
			Help: "the agent's argv (never a shell string), run for the most urgent ready task in its own worktree; empty: no orchestrator"},
		config.Key{Name: "orchestrator.watchdog_interval", Kind: config.Duration, Default: 5 * time.Minute, Min: config.Min(1),
			Help: "how often the watchdog starts an agent for ready work and looks for a stalled one"},
		config.Key{Name: "orchestrator.stall_timeout", Kind: config.Duration, Default: 5 * time.Minute, Min: config.Min(1),
			Help: "an agent that prints nothing for this long is stopped and its attempt failed (stalled)"},
		config.Key{Name: "orchestrator.kill_grace", Kind: config.Duration, Default: 10 * time.Second, Min: config.Min(0),
			Help: "how long a stopped agent has between SIGTERM and SIGKILL"},
		config.Key{Name: "orchestrator.submit_merge", Kind: config.Bool, Default: false,
			Help: "after an agent succeeds, submit its branch spool/<task-id> to the merge queue"},
		config.Key{Name: "orchestrator.label", Kind: config.String, Default: "",
			Help: "the orchestrator only takes tasks with this label (empty: any ready task)"},
		config.Key{Name: "orchestrator.breaker_quick_exits", Kind: config.Int, Default: 3, Min: config.Min(0),
			Help: "the orchestrator pauses after this many runs in a row that exit within a second without changing anything (0: never); each is released, not counted"},
		config.Key{Name: "orchestrator.breaker_same_error", Kind: config.Int, Default: 3, Min: config.Min(0),
			Help: "the orchestrator pauses when this many different tasks in a row fail with the same error (0: never)"},
		config.Key{Name: "orchestrator.epics", Kind: config.Bool, Default: false,
			Help: "hand epics (issue type epic: a PRD's queue handle, a plan's epic) to the agent too; off, an epic is never agent work"},
	)
}

// Worker is the worker name of the orchestrator's claims.
const Worker = "orchestrator"

// Policy is the orchestrator's configuration, read once per pass.
type Policy struct {
	Agent        []string
	Watchdog     time.Duration
	Stall        time.Duration
	Grace        time.Duration
	SubmitMerge  bool
	Label        string
	Epics        bool          // epics are agent work too (orchestrator.epics)
	QuickExits   int           // the breaker: runs in a row not the task's
	SameErrors   int           // the breaker: different tasks in a row with the same error
	OutputRecord time.Duration // how often output activity is recorded, at most
}

// PolicyFrom reads the orchestrator's keys.
func PolicyFrom(cfg *config.Config) Policy {
	return Policy{
		Agent:        cfg.Strings("orchestrator.agent_command"),
		Watchdog:     cfg.Duration("orchestrator.watchdog_interval"),
		Stall:        cfg.Duration("orchestrator.stall_timeout"),
		Grace:        cfg.Duration("orchestrator.kill_grace"),
		SubmitMerge:  cfg.Bool("orchestrator.submit_merge"),
		Label:        cfg.String("orchestrator.label"),
		Epics:        cfg.Bool("orchestrator.epics"),
		QuickExits:   cfg.Int("orchestrator.breaker_quick_exits"),
		SameErrors:   cfg.Int("orchestrator.breaker_same_error"),
		OutputRecord: time.Minute,
	}
}

// Enabled reports whether an agent command is configured.
func (p Policy) Enabled() bool { return len(p.Agent) > 0 }
