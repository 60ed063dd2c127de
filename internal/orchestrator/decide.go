package orchestrator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// ExitRecord is what the supervisor writes when the agent ends.
type ExitRecord struct {
	ExitCode  int       `json:"exit_code"` // -1: ended by a signal
	Signal    string    `json:"signal,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"` // when the supervisor started it
	EndedAt   time.Time `json:"ended_at"`
}

// Ran is how long the agent ran (0: unknown, an older supervisor's record).
func (x ExitRecord) Ran() time.Duration {
	if x.StartedAt.IsZero() || x.EndedAt.Before(x.StartedAt) {
		return 0
	}
	return x.EndedAt.Sub(x.StartedAt)
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
	Untouched  bool        // after the end: the worktree is as the attempt started
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
			return record(a, TypeAgentExited, ExitedData{Attempt: a.Attempt, ExitCode: o.Exit.ExitCode, Signal: o.Exit.Signal, Reason: a.StopReason, Tail: o.Tail,
				RanMS: o.Exit.Ran().Milliseconds(), Untouched: o.Untouched})
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
// stopped, and a run that was not the task's (Classify), are given back
// uncounted.
func Outcome(x ExitedData, p Policy) string {
	if x.ExitCode == 0 && x.Signal == "" {
		return OutcomeDone
	}
	if Classify(x, p) != "" {
		return OutcomeReleased
	}
	switch x.Reason {
	case "", ReasonStalled:
		return OutcomeFailed
	}
	return OutcomeReleased
}

// QuickExit is how soon an agent that exits untouched has done nothing.
const QuickExit = time.Second

// Classify says whether a run's end is not the task's fault: the agent
// could not start (spool could not launch it; or exit 127, not found, or
// 126, not executable, as a shell reports them, within QuickExit) or it
// exited non-zero within QuickExit with its worktree as the attempt
// started. "" is a run like any other.
func Classify(x ExitedData, p Policy) string {
	switch {
	case x.Reason == ReasonNoLaunch:
		return BreakCannotStart
	case x.Reason != "" || x.Signal != "" || x.ExitCode == 0:
		return ""
	case (x.ExitCode == 126 || x.ExitCode == 127) && time.Duration(x.RanMS)*time.Millisecond < QuickExit:
		// As a shell reports a command it could not run: at once. An agent
		// that worked a while and then exits 127 (its last step's tool
		// missing) failed like any other run.
		return BreakCannotStart
	case x.Untouched && x.RanMS > 0 && time.Duration(x.RanMS)*time.Millisecond < QuickExit:
		return BreakQuickExit
	}
	return ""
}

// Signature names a failed run's error so that the same error on another
// task has the same one: the exit status and the output's last line, with
// what differs between tasks (the task's id, its paths, numbers) left out.
// The last line, not the tail: an agent that prints the failure it was
// given as context (SPOOL_FAILURE_CONTEXT) prints the same error again.
func Signature(x ExitedData, task string, paths ...string) string {
	lines := strings.Split(strings.TrimSpace(x.Tail), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	for _, p := range append(paths, task) {
		if p != "" {
			last = strings.ReplaceAll(last, p, "<task>")
		}
	}
	last = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, last)
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%s", x.ExitCode, x.Signal, last)))
	return hex.EncodeToString(sum[:8])
}

// Trip decides whether the attempt of a ending as x (settled as outcome,
// with the failure's signature) trips the breaker, given the streaks s
// has seen: a run that could not start trips it at once; p.QuickExits runs
// in a row that could not start or exited at once untouched; the same
// error on p.SameErrors different tasks in a row. 0 turns a rule off.
func Trip(s *State, a *Active, x ExitedData, outcome, signature string, p Policy) *PausedData {
	kind := Classify(x, p)
	switch {
	case kind == BreakCannotStart:
		return pause(kind, []string{a.TaskID}, x, p, fmt.Sprintf("the agent command could not start (%s)", why(x)))
	case kind == BreakQuickExit && p.QuickExits > 0 && s.Breaker.QuickExits+1 >= p.QuickExits:
		return pause(kind, []string{a.TaskID}, x, p, fmt.Sprintf("the agent exited within %s without changing anything %d times in a row (the last: %s)",
			QuickExit, s.Breaker.QuickExits+1, why(x)))
	case outcome == OutcomeFailed && signature != "" && p.SameErrors > 0:
		var tasks []string
		if s.Breaker.Signature == signature {
			tasks = slices.Clone(s.Breaker.SameError)
		}
		if !slices.Contains(tasks, a.TaskID) {
			tasks = append(tasks, a.TaskID)
		}
		if len(tasks) >= p.SameErrors {
			return pause(BreakSameError, tasks, x, p, fmt.Sprintf("%d different tasks in a row failed with the same error (%s): %s",
				len(tasks), strings.Join(tasks, ", "), why(x)))
		}
	}
	return nil
}

func pause(kind string, tasks []string, x ExitedData, p Policy, what string) *PausedData {
	return &PausedData{Kind: kind, Tasks: tasks, Agent: slices.Clone(p.Agent),
		Reason: what + "; the task was not charged. Fix orchestrator.agent_command (changing it resumes the orchestrator), or run spool orchestrator resume"}
}

// why is a run's end in a few words: its status and its output's last line.
func why(x ExitedData) string {
	msg := fmt.Sprintf("exit %d", x.ExitCode)
	if x.Reason == ReasonNoLaunch {
		msg = "spool could not launch it"
	}
	lines := strings.Split(strings.TrimSpace(x.Tail), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		if len(last) > 200 {
			last = strings.ToValidUTF8(last[:200], "") + "…"
		}
		msg += ": " + last
	}
	return msg
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
func ReleaseComment(x ExitedData, p Policy) string {
	switch Classify(x, p) {
	case BreakCannotStart:
		return fmt.Sprintf("orchestrator: attempt %d not counted: the agent could not start (%s)", x.Attempt, why(x))
	case BreakQuickExit:
		return fmt.Sprintf("orchestrator: attempt %d not counted: the agent exited within %s without changing anything (%s)", x.Attempt, QuickExit, why(x))
	}
	if x.Reason == "" || x.Reason == ReasonStalled {
		return fmt.Sprintf("orchestrator: attempt %d not counted: the same error as on other tasks, so the orchestrator paused (%s)", x.Attempt, why(x))
	}
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

// Finished settles the active task; d carries what else the breaker and
// the merge queue need (Breaker, Signature, MergeEntry).
func Finished(a *Active, outcome string, d FinishedData) eventlog.Draft {
	d.Attempt, d.Outcome = a.Attempt, outcome
	return eventlog.Draft{Type: TypeFinished, Subject: a.TaskID, Data: d}
}

// Paused records the breaker's trip.
func Paused(d PausedData) eventlog.Draft {
	return eventlog.Draft{Type: TypePaused, Subject: Worker, Data: d}
}

// Resume lifts a pause; it refuses when the orchestrator is not paused.
func Resume(s *State, reason string) (eventlog.Draft, error) {
	if s.Paused == nil {
		return eventlog.Draft{}, fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition, "the orchestrator is not paused")
	}
	return eventlog.Draft{Type: TypeResumed, Subject: Worker, Data: ResumedData{Reason: reason}}, nil
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
