package orchestrator

import "time"

// The orchestrator's events (docs/events.md). The subject of each
// agent event is the task it works on.
const (
	TypeClaimed       = "orchestrator.claimed"        // ClaimedData: in the append that claims the task
	TypeAgentStarted  = "orchestrator.agent_started"  // StartedData: the supervisor runs
	TypeAgentOutput   = "orchestrator.agent_output"   // OutputData: output seen, at most once a minute
	TypeStopping      = "orchestrator.stopping"       // StoppingData: spool asked the agent to end
	TypeAgentExited   = "orchestrator.agent_exited"   // ExitedData: how the agent ended
	TypeFinished      = "orchestrator.finished"       // FinishedData: in the append that settles the task
	TypeWatchdogRan   = "orchestrator.watchdog_ran"   // {}: last_watchdog_run
	TypePaused        = "orchestrator.paused"         // PausedData: the breaker tripped; no agent starts
	TypeResumed       = "orchestrator.resumed"        // ResumedData: agents start again
	TypeMergeRejected = "orchestrator.merge_rejected" // MergeRejectedData: the train refused a done attempt's branch
)

// ClaimedData is an attempt the orchestrator took on: where it works.
type ClaimedData struct {
	Attempt  int    `json:"attempt"`
	Branch   string `json:"branch"`
	Worktree string `json:"worktree"`
	RunDir   string `json:"run_dir"`
	// FailureContext is the last failure, handed to an immediate retry.
	FailureContext string `json:"failure_context,omitempty"`
}

// Process identifies the supervisor's process group (internal/proc.Record).
type Process struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot,omitempty"`
}

// StartedData is the agent's supervisor, started.
type StartedData struct {
	Attempt int     `json:"attempt"`
	Process Process `json:"process"`
	Log     string  `json:"log"`
	Base    string  `json:"base"` // the commit the attempt starts from; a revert returns here
}

// OutputData is the last time the agent printed something.
type OutputData struct {
	At time.Time `json:"at"`
}

// Why spool stops an agent, and how an attempt ends without a result.
const (
	ReasonStalled  = "stalled"       // no output for orchestrator.stall_timeout
	ReasonStopped  = "watch_stopped" // spool watch was stopped
	ReasonLost     = "agent_lost"    // the supervisor died without recording an exit
	ReasonNotStart = "not_started"   // spool died before the agent started
	ReasonNoLaunch = "launch_failed" // spool could not set the agent up or start it
)

// StoppingData is a stop spool asked for.
type StoppingData struct {
	Reason string `json:"reason"`
}

// ExitedData is how the agent ended. Reason is set when it did not end by
// itself (stalled, watch_stopped, agent_lost, not_started).
type ExitedData struct {
	Attempt  int    `json:"attempt"`
	ExitCode int    `json:"exit_code"` // -1: a signal, or unknown
	Signal   string `json:"signal,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Tail     string `json:"tail,omitempty"` // the output's last lines
	// RanMS is how long the agent ran, as its supervisor timed it (0:
	// unknown); Untouched, that its worktree was as the attempt started
	// (no commit, nothing changed). Both are what the breaker reads.
	RanMS     int64 `json:"ran_ms,omitempty"`
	Untouched bool  `json:"untouched,omitempty"`
}

// Outcomes of an attempt.
const (
	OutcomeDone     = "done"     // exit 0: the task is done
	OutcomeFailed   = "failed"   // a failed attempt under the queue's policy
	OutcomeReleased = "released" // given back uncounted, its changes reverted
	OutcomeDropped  = "dropped"  // the claim was no longer ours; nothing recorded on the task
)

// FinishedData settles the active task.
type FinishedData struct {
	Attempt    int    `json:"attempt"`
	Outcome    string `json:"outcome"`
	MergeEntry string `json:"merge_entry,omitempty"`
	// Breaker is the kind of run that was not the task's (cannot_start,
	// quick_exit), released uncounted; Signature names a failed run's
	// error, the same for the same error on any task. The breaker's
	// streaks are folded from them.
	Breaker   string `json:"breaker,omitempty"`
	Signature string `json:"signature,omitempty"`
}

// Kinds of runs that are not the task's, and of the breaker's trips.
const (
	BreakCannotStart = "cannot_start" // the agent could not start (exit 126, 127; spool could not launch it)
	BreakQuickExit   = "quick_exit"   // it exited at once (under QuickExit) with its worktree untouched
	BreakSameError   = "same_error"   // different tasks failed in a row with the same error
)

// PausedData is the breaker tripping: no agent starts until the
// orchestrator is resumed (spool orchestrator resume), or the agent
// command changes.
type PausedData struct {
	Kind   string   `json:"kind"`
	Reason string   `json:"reason"`        // what happened and what to do, for people
	Tasks  []string `json:"tasks"`         // the tasks whose runs tripped it
	Agent  []string `json:"agent_command"` // the command it tripped with
}

// ResumedData lifts a pause.
type ResumedData struct {
	Reason string `json:"reason"`
}

// MergeRejectedData settles a done attempt whose branch the merge train
// refused for good (failed_terminal): with Outcome failed, the task was
// reopened and the attempt counted as failed (workqueue.Rejected), in the
// same append; dropped, the task was no longer that done (reopened by hand
// meanwhile) and is left alone.
type MergeRejectedData struct {
	Attempt    int    `json:"attempt"`
	MergeEntry string `json:"merge_entry"`
	Reason     string `json:"reason"`
	Outcome    string `json:"outcome"`
}
