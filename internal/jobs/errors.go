package jobs

import (
	"fmt"
	"strings"

	"github.com/spoolhq/spool/internal/fault"
)

// Error codes of the scheduler (not_found, unauthorized and
// invalid_state_transition are fault's).
var (
	CodeInvalidTier     = fault.Register(fault.Usage, "invalid_tier")
	CodeInvalidGPUs     = fault.Register(fault.Usage, "invalid_gpus")
	CodeInvalidSegments = fault.Register(fault.Usage, "invalid_segments")
	CodeEmptyArgv       = fault.Register(fault.Usage, "empty_argv")
	CodeInvalidTime     = fault.Register(fault.Usage, "invalid_time")
	CodeInvalidSchedule = fault.Register(fault.Usage, "invalid_schedule")
	CodeInvalidQuota    = fault.Register(fault.Usage, "invalid_quota")
	CodeInvalidMove     = fault.Register(fault.Usage, "invalid_move")
	CodeNothingToEdit   = fault.Register(fault.Usage, "nothing_to_edit")
	CodeInvalidStatus   = fault.Register(fault.Usage, "invalid_status")
	CodeNotRunning      = fault.Register(fault.Rejected, "not_running")
	CodeUrgentLimit     = fault.Register(fault.Rejected, "urgent_limit_reached")
)

func invalidTransition(j *Job, to Status) error {
	return fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
		fmt.Sprintf("job %s is %s; it cannot become %s", j.ID, j.Status, to),
		"job_id", j.ID, "current_state", string(j.Status), "target_state", string(to))
}

func unauthorized(j *Job, actor, what string) error {
	return fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
		fmt.Sprintf("%s may not %s job %s (owned by %s): only its owner or an admin (admins, or scheduler.admins) may", actor, what, j.ID, j.Owner),
		"job_id", j.ID, "owner", j.Owner, "actor", actor)
}

func adminOnly(actor, what string) error {
	return fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
		fmt.Sprintf("%s may not %s: only admins (admins, or scheduler.admins) may", actor, what), "actor", actor)
}

func notYours(j *Job, worker string) error {
	return fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
		fmt.Sprintf("job %s is held by worker %q, not %q", j.ID, j.Worker, worker), "job_id", j.ID, "worker", j.Worker)
}

// InvalidGPUs refuses a slot count; most is the largest worker's, or 0 when
// only the bounds were checked (1 to SlotLimit).
func InvalidGPUs(n, most int) error {
	if most > 0 {
		return fault.New(CodeInvalidGPUs, nil, fmt.Sprintf("--gpus must be 1 to %d (the most slots a worker offers), got %d; until a worker with more has run, scheduler.slots sets it (spool config set scheduler.slots N)", most, n), "gpus", n, "max", most)
	}
	return fault.New(CodeInvalidGPUs, nil, fmt.Sprintf("--gpus must be 1 to %d, got %d", SlotLimit, n), "gpus", n, "max", SlotLimit)
}

// InvalidSegments refuses a segment count.
func InvalidSegments(n int) error {
	return fault.New(CodeInvalidSegments, nil, fmt.Sprintf("--segments must be 1 to %d, got %d", SegmentLimit, n), "segments", n, "max", SegmentLimit)
}

// mayUrgent is the rule on urgent work (meant for review re-renders and
// interactive requests, so it is capped): admins always; anyone else while
// they have fewer than scheduler.urgent_limit urgent jobs not ended (except,
// for edit, the job being raised); with a limit of 0, admins only.
func (s *State) mayUrgent(p Policy, actor, except, what string) error {
	if p.Admin(actor) {
		return nil
	}
	if p.UrgentLimit <= 0 {
		return fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
			fmt.Sprintf("%s may not %s: scheduler.urgent_limit is 0, so only admins (admins, or scheduler.admins) may", actor, what), "actor", actor)
	}
	var mine []string
	for _, j := range s.Sorted() {
		if j.Owner == actor && j.Tier == Urgent && !j.Status.Terminal() && j.ID != except {
			mine = append(mine, j.ID)
		}
	}
	if len(mine) < p.UrgentLimit {
		return nil
	}
	return fault.New(CodeUrgentLimit, nil,
		fmt.Sprintf("%s may not %s: %s has %d urgent %s not ended (%s) and scheduler.urgent_limit is %d; wait for one to end, or ask an admin",
			actor, what, actor, len(mine), plural(len(mine), "job", "jobs"), strings.Join(mine, ", "), p.UrgentLimit),
		"actor", actor, "limit", p.UrgentLimit, "urgent_jobs", mine)
}
