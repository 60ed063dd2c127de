package workqueue

import (
	"errors"
	"fmt"
	"time"

	"github.com/spoolhq/spool/internal/config"
)

// Sources of ready work.
const (
	SourceNative = "native"
	SourceBD     = "bd"
	SourceBR     = "br"
)

func init() {
	config.Register(
		config.Key{Name: "workqueue.source", Kind: config.Enum, Default: SourceNative, Enum: []string{SourceNative, SourceBD, SourceBR},
			Help: "where ready work comes from: spool's own tasks, or bd/br ready --json"},
		config.Key{Name: "workqueue.source_bin", Kind: config.String, Default: "",
			Help: "path of the bd/br binary (default: found on PATH)"},
		config.Key{Name: "workqueue.poll_interval", Kind: config.Duration, Default: 10 * time.Second, Min: config.Min(0.1), Max: config.Max(3600),
			Help: "with a bd/br source: how often spool watch's orchestrator and spool next --wait ask it for ready work"},
		config.Key{Name: "workqueue.label", Kind: config.String, Default: "", Check: checkLabels,
			Help: "next only hands out tasks with this label (race-free gating)"},
		config.Key{Name: "workqueue.exclude_labels", Kind: config.Strings, Default: []string{}, Check: checkLabels,
			Help: "next never hands out tasks with any of these labels"},
		config.Key{Name: "workqueue.lease", Kind: config.Duration, Default: time.Hour, Min: config.Min(1),
			Help: "how long a claim lasts without a heartbeat; an expired claim is a failed attempt"},
		config.Key{Name: "workqueue.policy", Kind: config.Enum, Default: Exponential, Enum: []string{Exponential, Progressive},
			Help:    "what a failure does: exponential backoff and abandonment, or progressive demotion and Blocked (unset: progressive when orchestrator.agent_command is set)",
			Derived: derivedPolicy},
		config.Key{Name: "backoff.initial", Kind: config.Duration, Default: time.Minute,
			Help: "exponential: the wait after the second attempt fails"},
		config.Key{Name: "backoff.max", Kind: config.Duration, Default: time.Hour,
			Help: "exponential: the longest wait"},
		config.Key{Name: "backoff.multiplier", Kind: config.Float, Default: 2.0, Min: config.Min(1),
			Help: "exponential: each further failure multiplies the wait by this"},
		config.Key{Name: "backoff.max_failures", Kind: config.Int, Default: 5, Min: config.Min(0),
			Help: "exponential: abandon a task after this many attempts (0: never)"},
		config.Key{Name: HookKey(HookAbandoned), Kind: config.Strings, Default: []string{},
			Help: "argv run once after a task is abandoned, with the task.abandoned event as JSON on stdin (empty: none)"},
		config.Key{Name: HookKey(HookBlocked), Kind: config.Strings, Default: []string{},
			Help: "argv run once after a task is Blocked, with the task.blocked event as JSON on stdin (empty: none)"},
		config.Key{Name: "workqueue.hook_timeout", Kind: config.Duration, Default: time.Minute, Min: config.Min(1), Max: config.Max(3600),
			Help: "a notification hook still running after this long is stopped (its outcome says so)"},
		config.Key{Name: KeyPrefix, Kind: config.String, Default: "sp", Check: checkPrefix,
			Help: "prefix of new task ids, such as sp in sp-a3f8"},
	)
	config.RegisterRule(func(c *config.Config) error {
		if lo, hi := c.Duration("backoff.initial"), c.Duration("backoff.max"); lo > hi {
			return fmt.Errorf("backoff.initial (%s) must not be longer than backoff.max (%s)", lo, hi)
		}
		return nil
	})
}

func checkPrefix(v any) error {
	if p := v.(string); !ValidPrefix(p) {
		return fmt.Errorf("%q must be 1-16 lowercase letters and digits, starting with a letter", p)
	}
	return nil
}

// checkLabels accepts "" (no label) or labels ValidateLabel accepts.
func checkLabels(v any) error {
	labels, _ := v.([]string)
	if s, ok := v.(string); ok && s != "" {
		labels = []string{s}
	}
	for _, l := range labels {
		if err := ValidateLabel(l); err != nil {
			return errors.New(err.Error())
		}
	}
	return nil
}

// Settings are the work queue's configuration, read once when a command
// opens the queue (SettingsFrom): code reads these fields, never a key by
// name, so that a misspelt key is a compile error.
type Settings struct {
	Core         config.Settings // the repository's: lock.timeout, admins
	Policy       Policy          // what decide applies
	Hooks        Hooks           // the notification hooks configured
	Source       string          // workqueue.source: SourceNative, SourceBD or SourceBR
	SourceBin    string          // workqueue.source_bin ("": found on PATH)
	PollInterval time.Duration   // workqueue.poll_interval
	HookTimeout  time.Duration   // workqueue.hook_timeout
	Prefix       string          // ids.prefix: of new task ids
}

// SettingsFrom reads the work queue's keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{
		Core:         config.SettingsFrom(cfg),
		Policy:       PolicyFrom(cfg),
		Hooks:        HooksFrom(cfg),
		Source:       cfg.String("workqueue.source"),
		SourceBin:    cfg.String("workqueue.source_bin"),
		PollInterval: cfg.Duration("workqueue.poll_interval"),
		HookTimeout:  cfg.Duration("workqueue.hook_timeout"),
		Prefix:       PrefixFrom(cfg),
	}
}

// KeyPrefix is the key of new task ids' prefix, for what sets it (bd init).
const KeyPrefix = "ids.prefix"

// PrefixFrom reads ids.prefix alone, for the commands that need no more.
func PrefixFrom(cfg *config.Config) string { return cfg.String(KeyPrefix) }

// PolicyFrom reads the queue's configuration.
func PolicyFrom(cfg *config.Config) Policy {
	return Policy{
		Kind:          policyKind(cfg),
		Initial:       cfg.Duration("backoff.initial"),
		Max:           cfg.Duration("backoff.max"),
		Multiplier:    cfg.Float("backoff.multiplier"),
		MaxFailures:   cfg.Int("backoff.max_failures"),
		Lease:         cfg.Duration("workqueue.lease"),
		Label:         cfg.String("workqueue.label"),
		ExcludeLabels: cfg.Strings("workqueue.exclude_labels"),
	}
}

// policyKind is workqueue.policy (derivedPolicy when unset).
func policyKind(cfg *config.Config) string { return cfg.String("workqueue.policy") }

// derivedPolicy is workqueue.policy unset: progressive when an orchestrator
// runs agents (their failures demote rather than back off), exponential
// otherwise.
func derivedPolicy(cfg *config.Config) (any, string) {
	if v, _, err := cfg.Value("orchestrator.agent_command"); err == nil {
		if argv, _ := v.([]string); len(argv) > 0 {
			return Progressive, "orchestrator.agent_command is set"
		}
	}
	return Exponential, ""
}
