package workqueue

import (
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
		config.Key{Name: "workqueue.label", Kind: config.String, Default: "",
			Help: "next only hands out tasks with this label (race-free gating)"},
		config.Key{Name: "workqueue.exclude_labels", Kind: config.Strings, Default: []string{},
			Help: "next never hands out tasks with any of these labels"},
		config.Key{Name: "workqueue.lease", Kind: config.Duration, Default: time.Hour, Min: config.Min(1),
			Help: "how long a claim lasts without a heartbeat; an expired claim is a failed attempt"},
		config.Key{Name: "workqueue.policy", Kind: config.Enum, Default: Exponential, Enum: []string{Exponential, Progressive},
			Help: "what a failure does: exponential backoff and abandonment, or progressive demotion and Blocked"},
		config.Key{Name: "backoff.initial", Kind: config.Duration, Default: time.Minute,
			Help: "exponential: the wait after the second attempt fails"},
		config.Key{Name: "backoff.max", Kind: config.Duration, Default: time.Hour,
			Help: "exponential: the longest wait"},
		config.Key{Name: "backoff.multiplier", Kind: config.Float, Default: 2.0, Min: config.Min(1),
			Help: "exponential: each further failure multiplies the wait by this"},
		config.Key{Name: "backoff.max_failures", Kind: config.Int, Default: 5, Min: config.Min(0),
			Help: "exponential: abandon a task after this many attempts (0: never)"},
		config.Key{Name: "ids.prefix", Kind: config.String, Default: "sp",
			Help: "prefix of new task ids, such as sp in sp-a3f8"},
	)
}

// PolicyFrom reads the queue's configuration.
func PolicyFrom(cfg *config.Config) Policy {
	return Policy{
		Kind:          cfg.String("workqueue.policy"),
		Initial:       cfg.Duration("backoff.initial"),
		Max:           cfg.Duration("backoff.max"),
		Multiplier:    cfg.Float("backoff.multiplier"),
		MaxFailures:   cfg.Int("backoff.max_failures"),
		Lease:         cfg.Duration("workqueue.lease"),
		Label:         cfg.String("workqueue.label"),
		ExcludeLabels: cfg.Strings("workqueue.exclude_labels"),
	}
}
