package jobs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/config"
)

// Configuration keys (docs/configuration.md).
func init() {
	config.Register(
		config.Key{Name: "scheduler.admins", Kind: config.Strings, Default: []string{}, Check: config.CheckActors,
			Help: "admins of the scheduler only, besides the repository's (admins): they may reorder, set quotas, submit urgent work past scheduler.urgent_limit, and act on any job"},
		config.Key{Name: "scheduler.urgent_limit", Kind: config.Int, Default: 1, Min: config.Min(0), Max: config.Max(SlotLimit),
			Help: "how many urgent jobs not yet ended a user who is not an admin may have (submitted or raised to urgent); 0: urgent is for admins only"},
		config.Key{Name: "scheduler.fairness", Kind: config.Enum, Default: FairShare, Enum: []string{FairShare, FIFO},
			Help: "fair: within a tier the next job goes to the user with the least recent slot time; fifo: strict order"},
		config.Key{Name: "scheduler.fair_share_half_life", Kind: config.Duration, Default: 24 * time.Hour, Min: config.Min(60),
			Help: "how fast past slot time stops counting for fair share"},
		config.Key{Name: "scheduler.timezone", Kind: config.String, Default: "UTC", Check: checkZone,
			Help: "IANA time zone of quota windows (local midnight, Monday 00:00) and of the off-peak window"},
		config.Key{Name: "scheduler.off_peak", Kind: config.String, Default: "", Check: checkWindow,
			Help: "the off-peak window, e.g. 22:00-08:00 (may wrap midnight); empty: off-peak jobs never dispatch"},
		config.Key{Name: "scheduler.cancel_grace", Kind: config.Duration, Default: DefaultCancelGrace, Min: config.Min(0),
			Help: "how long a cancelled running job's current segment may go on before SIGTERM (2s: with the worker's 1s poll and 2s from SIGTERM to SIGKILL, a cancelled job has ended within 5 s)"},
		config.Key{Name: "scheduler.lease", Kind: config.Duration, Default: 5 * time.Minute, Min: config.Min(1),
			Help: "a worker's hold on a job; renewed while it runs, recovered when it runs out"},
		config.Key{Name: "scheduler.default_segment_time", Kind: config.Duration, Default: 10 * time.Minute, Min: config.Min(1),
			Help: "a segment's expected time for estimates, until jobs of that name have finished segments"},
		config.Key{Name: "scheduler.slots", Kind: config.Int, Default: 1, Min: config.Min(1), Max: config.Max(SlotLimit),
			Help: "slots assumed for estimates and --gpus checks while no worker has announced its own"},
	)
}

// DefaultCancelGrace is scheduler.cancel_grace's default: how long a
// cancelled running job's segment may go on before its worker sends
// SIGTERM. With the worker's poll (service.DefaultPoll) and its SIGTERM to
// SIGKILL (service.DefaultKillGrace), a cancelled job has ended within
// 5 seconds, the most a cancel may take.
const DefaultCancelGrace = 2 * time.Second

// Fairness policies.
const (
	FairShare = "fair"
	FIFO      = "fifo"
)

// Policy is the scheduler's configuration, read once per command.
type Policy struct {
	Admins         []string
	UrgentLimit    int // urgent jobs not ended a user who is not an admin may have; 0: admins only
	Fair           bool
	HalfLife       time.Duration
	Zone           *time.Location
	OffPeak        Window
	CancelGrace    time.Duration
	Lease          time.Duration
	DefaultSegment time.Duration
	Slots          int
}

// PolicyFrom reads the scheduler's keys.
func PolicyFrom(cfg *config.Config) Policy {
	zone, err := time.LoadLocation(cfg.String("scheduler.timezone"))
	if err != nil {
		zone = time.UTC // refused by checkZone; a file from elsewhere falls back
	}
	w, _ := ParseWindow(cfg.String("scheduler.off_peak"))
	return Policy{Admins: slices.Concat(config.SettingsFrom(cfg).Admins, cfg.Strings("scheduler.admins")), UrgentLimit: cfg.Int("scheduler.urgent_limit"), Fair: cfg.String("scheduler.fairness") == FairShare,
		HalfLife: cfg.Duration("scheduler.fair_share_half_life"), Zone: zone, OffPeak: w,
		CancelGrace: cfg.Duration("scheduler.cancel_grace"), Lease: cfg.Duration("scheduler.lease"),
		DefaultSegment: cfg.Duration("scheduler.default_segment_time"), Slots: cfg.Int("scheduler.slots")}
}

// zone is the scheduler's time zone, UTC for a Policy built without one.
func (p Policy) zone() *time.Location {
	if p.Zone == nil {
		return time.UTC
	}
	return p.Zone
}

// Admin reports whether actor is an admin.
func (p Policy) Admin(actor string) bool {
	for _, a := range p.Admins {
		if a == actor {
			return true
		}
	}
	return false
}

func checkZone(v any) error {
	if _, err := time.LoadLocation(v.(string)); err != nil {
		return fmt.Errorf("%q is not an IANA time zone (e.g. Europe/Paris)", v)
	}
	return nil
}

func checkWindow(v any) error {
	_, err := ParseWindow(v.(string))
	return err
}

// Window is a daily window of local time, [From, To) in minutes after
// midnight; From > To wraps midnight. The zero Window is none.
type Window struct {
	From, To int
	Set      bool
}

// ParseWindow reads "HH:MM-HH:MM"; "" is no window.
func ParseWindow(s string) (Window, error) {
	if s == "" {
		return Window{}, nil
	}
	a, b, ok := strings.Cut(s, "-")
	from, err1 := clock(a)
	to, err2 := clock(b)
	if !ok || err1 != nil || err2 != nil || from == to {
		return Window{}, fmt.Errorf("%q is not a window such as 22:00-08:00", s)
	}
	return Window{From: from, To: to, Set: true}, nil
}

func clock(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || len(m) != 2 {
		return 0, fmt.Errorf("bad time of day %q", s)
	}
	return hh*60 + mm, nil
}

// Contains reports whether t (in zone) is inside the window.
func (w Window) Contains(t time.Time, zone *time.Location) bool {
	if !w.Set {
		return false
	}
	lt := t.In(zone)
	m := lt.Hour()*60 + lt.Minute()
	if w.From < w.To {
		return m >= w.From && m < w.To
	}
	return m >= w.From || m < w.To
}

// Next is the next time at or after t when the window opens (t itself when
// it is open); the zero time when there is no window.
func (w Window) Next(t time.Time, zone *time.Location) time.Time {
	if !w.Set {
		return time.Time{}
	}
	if w.Contains(t, zone) {
		return t
	}
	lt := t.In(zone)
	open := time.Date(lt.Year(), lt.Month(), lt.Day(), w.From/60, w.From%60, 0, 0, zone)
	if !open.After(lt) {
		open = time.Date(lt.Year(), lt.Month(), lt.Day()+1, w.From/60, w.From%60, 0, 0, zone)
	}
	return open
}

func (w Window) String() string {
	if !w.Set {
		return ""
	}
	return fmt.Sprintf("%02d:%02d-%02d:%02d", w.From/60, w.From%60, w.To/60, w.To%60)
}
