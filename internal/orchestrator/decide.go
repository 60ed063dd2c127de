package orchestrator

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// ExitRecord is what the supervisor writes when the agent ends.
type ExitRecord struct {
	ExitCode int       `json:"exit_code"` // -1: ended by a signal
	Signal   string    `json:"signal,omitempty"`
	EndedAt  time.Time `json:"ended_at"`
}

// Observation is what the run directory and the process table say about
// the active task's agent; the service gathers it, Monitor decides on it.
type Observation struct {
	Supervisor *Process    // the supervisor's record in the run directory (nil: it never started)
	Base       string      // where the attempt started, as the supervisor recorded it
	Alive      bool        // the supervisor's group still runs and is ours
	Exit       *ExitRecord // the agent's end, as the supervisor recorded it
	LastOutput time.Time   // when the agent's log last grew
	Tail       string      // the log's last lines
}

// Step is what to do next about the active task.
type Step struct {
	Kind  StepKind
	Draft eventlog.Draft // the event to append (all kinds but Signal and None)
}

// StepKind is the kind of a step.
type StepKind int

const (
	StepNone   StepKind = iota // nothing changed: look again later
	StepRecord                 // append Draft (started, output, exited)
	StepStop                   // append Draft (stopping), then signal the supervisor
	StepSignal                 // signal again: SIGTERM before the grace ends, SIGKILL after
	StepSettle                 // settle the task by Outcome, then append finished
)

// Monitor decides the next step for the active task a.
func Monitor(a *Active, o Observation, p Policy, now time.Time) Step {
	switch a.Phase {
	case PhaseStarting:
		// Only found at recovery: spool died while it set the agent up.
		if o.Supervisor != nil {
			return record(a, TypeAgentStarted, StartedData{Attempt: a.Attempt, Process: *o.Supervisor, Log: LogPath(a.RunDir, a.Attempt), Base: o.Base})
		}
		return record(a, TypeAgentExited, ExitedData{Attempt: a.Attempt, ExitCode: -1, Reason: ReasonNotStart})
	case PhaseRunning, PhaseStopping:
		if o.Exit != nil {
			return record(a, TypeAgentExited, ExitedData{Attempt: a.Attempt, ExitCode: o.Exit.ExitCode, Signal: o.Exit.Signal, Reason: a.StopReason, Tail: o.Tail})
		}
		if !o.Alive {
			reason := a.StopReason
			if reason == "" {
				reason = ReasonLost
			}
			return record(a, TypeAgentExited, ExitedData{Attempt: a.Attempt, ExitCode: -1, Reason: reason, Tail: o.Tail})
		}
		if a.Phase == PhaseStopping {
			return Step{Kind: StepSignal}
		}
		last := a.LastOutputAt
		if o.LastOutput.After(last) {
			last = o.LastOutput
		}
		if now.Sub(last) >= p.Stall {
			return Step{Kind: StepStop, Draft: eventlog.Draft{Type: TypeStopping, Subject: a.TaskID, Data: StoppingData{Reason: ReasonStalled}}}
		}
		if o.LastOutput.After(a.LastOutputAt) && now.Sub(a.LastOutputAt) >= p.OutputRecord {
			return record(a, TypeAgentOutput, OutputData{At: o.LastOutput.UTC()})
		}
		return Step{}
	case PhaseFinishing:
		return Step{Kind: StepSettle}
	}
	return Step{}
}

func record(a *Active, typ string, data any) Step {
	return Step{Kind: StepRecord, Draft: eventlog.Draft{Type: typ, Subject: a.TaskID, Data: data}}
}

// Stop is the event that asks the agent to end for reason.
func Stop(a *Active, reason string) eventlog.Draft {
	return eventlog.Draft{Type: TypeStopping, Subject: a.TaskID, Data: StoppingData{Reason: reason}}
}

// Outcome is how an ended attempt settles: exit 0 is done whatever asked it
// to stop; a failure or a stall is a failed attempt under the queue's
// policy; an agent spool lost or never started, or one stopped because watch
// stopped, is given back uncounted.
func Outcome(x ExitedData) string {
	if x.ExitCode == 0 && x.Signal == "" {
		return OutcomeDone
	}
	switch x.Reason {
	case "", ReasonStalled:
		return OutcomeFailed
	}
	return OutcomeReleased
}

// FailureMessage is the error a failed attempt records.
func FailureMessage(x ExitedData, p Policy) string {
	var msg string
	switch {
	case x.Reason == ReasonStalled:
		msg = fmt.Sprintf("stalled: no output for %s", p.Stall)
	case x.Signal != "":
		msg = "agent ended by " + x.Signal
	default:
		msg = fmt.Sprintf("agent exited with status %d", x.ExitCode)
	}
	if t := strings.TrimSpace(x.Tail); t != "" {
		msg += ":\n" + t
	}
	return msg
}

// ReleaseComment is the comment a released attempt leaves on its task.
func ReleaseComment(x ExitedData) string {
	why := map[string]string{
		ReasonStopped:  "spool watch stopped while the agent ran",
		ReasonLost:     "the agent's supervisor died without recording how the agent ended",
		ReasonNotStart: "spool stopped before the agent started",
	}[x.Reason]
	if why == "" {
		why = x.Reason
	}
	return fmt.Sprintf("orchestrator: attempt %d reverted and the task reopened: %s", x.Attempt, why)
}

// Finished settles the active task.
func Finished(a *Active, outcome, mergeEntry string) eventlog.Draft {
	return eventlog.Draft{Type: TypeFinished, Subject: a.TaskID, Data: FinishedData{Attempt: a.Attempt, Outcome: outcome, MergeEntry: mergeEntry}}
}

// Claimed is the event recorded with the claim of task id.
func Claimed(id string, d ClaimedData) eventlog.Draft {
	return eventlog.Draft{Type: TypeClaimed, Subject: id, Data: d}
}

// WatchdogDue reports whether the watchdog's interval has passed.
func WatchdogDue(s *State, p Policy, now time.Time) bool {
	return s.LastWatchdogRun == nil || now.Sub(*s.LastWatchdogRun) >= p.Watchdog
}

// WatchdogRan records a watchdog run.
func WatchdogRan() eventlog.Draft {
	return eventlog.Draft{Type: TypeWatchdogRan, Subject: Worker, Data: struct{}{}}
}

// Branch is the branch an agent works on for task id.
func Branch(id string) string { return "spool/" + id }

// Run directory layout: .git/spool/runs/task-<id>/attempt-<n>.{log,exit.json,supervisor.json,task.json}.
func RunDir(runs, id string) string { return filepath.Join(runs, "task-"+id) }

func attemptFile(dir string, n int, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("attempt-%d%s", n, suffix))
}

// LogPath is the agent's output for attempt n.
func LogPath(dir string, n int) string { return attemptFile(dir, n, ".log") }

// ExitPath is the supervisor's record of the agent's end.
func ExitPath(dir string, n int) string { return attemptFile(dir, n, ".exit.json") }

// SupervisorPath is the supervisor's record of itself.
func SupervisorPath(dir string, n int) string { return attemptFile(dir, n, ".supervisor.json") }

// MCPConfigPath is the MCP configuration for the agent (SPOOL_MCP_CONFIG):
// spool mcp limited to what the trust boundary lets an agent do.
func MCPConfigPath(dir string, n int) string { return attemptFile(dir, n, ".mcp.json") }

// TaskPath is the task as JSON, for the agent (SPOOL_TASK_FILE).
func TaskPath(dir string, n int) string { return attemptFile(dir, n, ".task.json") }
