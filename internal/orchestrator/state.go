package orchestrator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/refname"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Phases of the active task.
const (
	PhaseStarting  = "starting"  // claimed; the worktree and the agent are being set up
	PhaseRunning   = "running"   // the agent runs under its supervisor
	PhaseStopping  = "stopping"  // spool asked the agent to end (stalled, watch stopped)
	PhaseFinishing = "finishing" // the agent ended; the task is being settled
)

// Active is the task an agent works on: what a restart needs to resume or
// recover it (task, phase, agent, branch, times, attempt), plus where it
// works, where it started and its supervisor.
type Active struct {
	TaskID       string    `json:"task_id"`
	Phase        string    `json:"phase"`
	AgentPID     int       `json:"agent_pid"` // the supervisor's, which leads the agent's group
	Branch       string    `json:"branch"`
	StartedAt    time.Time `json:"started_at"`
	LastOutputAt time.Time `json:"last_output_at"`
	Attempt      int       `json:"attempt"`

	Worktree       string      `json:"worktree"`
	Base           string      `json:"base"`
	RunDir         string      `json:"run_dir"`
	Log            string      `json:"log,omitempty"`
	Process        Process     `json:"process"`
	FailureContext string      `json:"failure_context,omitempty"`
	StopReason     string      `json:"stop_reason,omitempty"`
	StoppingAt     time.Time   `json:"stopping_at,omitzero"`
	Exit           *ExitedData `json:"exit,omitempty"`
}

// Feedback is feedback waiting for the planner to categorize it.
type Feedback struct {
	ID   string    `json:"id"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// State is orchestrator-state.json.
type State struct {
	ActiveTask      *Active    `json:"active_task"`
	LastWatchdogRun *time.Time `json:"last_watchdog_run"`
	PendingFeedback []Feedback `json:"pending_feedback_categorizations"`
	Attempts        int        `json:"attempts"` // attempts settled since the log began
	// Paused is the breaker's trip, while it holds: no agent starts.
	Paused *Pause `json:"paused,omitempty"`
	// Breaker counts the runs in a row that were not the tasks' fault.
	Breaker Streaks `json:"breaker"`
	// Submitted are the merge entries of done attempts (submit_merge)
	// that the train has neither merged nor cancelled yet.
	Submitted []Submission `json:"merge_submissions,omitempty"`
}

// Submission is a done attempt's branch in the merge queue. The watch's
// pass looks its entry up in the merge queue: failed_terminal, the train
// refused it for good, and the task is reopened and the attempt counted as
// failed (workqueue.Rejected, orchestrator.merge_rejected).
type Submission struct {
	TaskID     string `json:"task_id"`
	Attempt    int    `json:"attempt"`
	MergeEntry string `json:"merge_entry"`
}

// RejectedMessage is the failed attempt's error: the train's reason.
func RejectedMessage(sub Submission, reason string) string {
	return fmt.Sprintf("merge rejected: the merge train refused %s (entry %s, failed_terminal): %s",
		Branch(sub.TaskID), mergequeue.ShortRef(sub.MergeEntry), cmp.Or(reason, "no reason given"))
}

// applyMerge drops from Submitted the entries the train merged or that
// were cancelled: they are no longer the orchestrator's to watch.
func (s *State) applyMerge(e *eventlog.Event) {
	if len(s.Submitted) == 0 {
		return
	}
	var d struct {
		Ref string            `json:"entry_ref"`
		To  mergequeue.Status `json:"to"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.Ref == "" {
		return
	}
	if d.To == mergequeue.Merged || d.To == mergequeue.Cancelled {
		s.Submitted = slices.DeleteFunc(slices.Clone(s.Submitted), func(sub Submission) bool { return sub.MergeEntry == d.Ref })
	}
}

// Pause is a trip of the breaker, and when it happened.
type Pause struct {
	PausedData
	At time.Time `json:"at"`
}

// Streaks are what the breaker has seen since the last run that ended
// them: runs that could not start or exited at once untouched, in a row;
// and the tasks whose failures in a row had the same error.
type Streaks struct {
	QuickExits int      `json:"quick_exits"`
	Signature  string   `json:"signature,omitempty"`
	SameError  []string `json:"same_error_tasks,omitempty"`
}

// pathSafe says whether a task id can name the run directory, the worktree
// and the branch derived from it: a task id the work queue takes
// (workqueue.ValidID: one path element, no separator, no leading dot or
// dash). A claim of any other subject is skipped.
func pathSafe(id string) bool { return workqueue.ValidID(id) }

// Name is the projection's name.
const Name = "orchestrator"

// File is the projection's file, relative to the repository root (gitignored).
const File = "orchestrator-state.json"

// Spec registers the projection.
var Spec = projections.Spec{Name: Name, Version: 5, New: func() projections.Projection { return &Projection{s: NewState()} }}

// NewState is an orchestrator that never ran.
func NewState() *State { return &State{PendingFeedback: []Feedback{}} }

// Projection folds the orchestrator's events.
type Projection struct{ s *State }

// State returns the folded state.
func (p *Projection) State() *State { return p.s }

func (p *Projection) Apply(e *eventlog.Event) error {
	p.s.Apply(e)
	return nil
}

// Apply folds one event; events out of place (a second claim while a task
// is active, an exit of another task) are skipped.
func (s *State) Apply(e *eventlog.Event) {
	a := s.ActiveTask
	mine := a != nil && a.TaskID == e.Subject
	switch e.Type {
	case TypeClaimed:
		var d ClaimedData
		if a != nil || !pathSafe(e.Subject) || json.Unmarshal(e.Data, &d) != nil {
			return
		}
		s.ActiveTask = &Active{TaskID: e.Subject, Phase: PhaseStarting, Branch: d.Branch, StartedAt: e.At, LastOutputAt: e.At,
			Attempt: d.Attempt, Worktree: d.Worktree, RunDir: d.RunDir, FailureContext: d.FailureContext}
	case TypeAgentStarted:
		var d StartedData
		// A revert hands base to git: a commit id, never an option.
		if !mine || a.Phase != PhaseStarting || json.Unmarshal(e.Data, &d) != nil || d.Base != "" && !refname.ObjectID(d.Base) {
			return
		}
		a.Phase, a.Process, a.AgentPID, a.Log, a.Base, a.StartedAt, a.LastOutputAt = PhaseRunning, d.Process, d.Process.PID, d.Log, d.Base, e.At, e.At
	case TypeAgentOutput:
		var d OutputData
		if mine && json.Unmarshal(e.Data, &d) == nil && d.At.After(a.LastOutputAt) {
			a.LastOutputAt = d.At
		}
	case TypeStopping:
		var d StoppingData
		if !mine || (a.Phase != PhaseRunning && a.Phase != PhaseStarting) || json.Unmarshal(e.Data, &d) != nil {
			return
		}
		a.Phase, a.StopReason, a.StoppingAt = PhaseStopping, d.Reason, e.At
	case TypeAgentExited:
		var d ExitedData
		if !mine || a.Phase == PhaseFinishing || json.Unmarshal(e.Data, &d) != nil {
			return
		}
		a.Phase, a.Exit = PhaseFinishing, &d
	case TypeFinished:
		var d FinishedData
		if mine && json.Unmarshal(e.Data, &d) == nil {
			s.ActiveTask = nil
			s.Attempts++
			s.Breaker = s.Breaker.after(e.Subject, d)
			if d.Outcome == OutcomeDone && d.MergeEntry != "" {
				s.Submitted = append(slices.DeleteFunc(slices.Clone(s.Submitted), func(sub Submission) bool { return sub.MergeEntry == d.MergeEntry }),
					Submission{TaskID: e.Subject, Attempt: d.Attempt, MergeEntry: d.MergeEntry})
			}
		}
	case TypeMergeRejected:
		var d MergeRejectedData
		if json.Unmarshal(e.Data, &d) == nil {
			s.Submitted = slices.DeleteFunc(slices.Clone(s.Submitted), func(sub Submission) bool { return sub.MergeEntry == d.MergeEntry })
		}
	case mergequeue.EvTransitioned, mergequeue.EvRecovered, mergequeue.EvCancelled:
		s.applyMerge(e)
	case TypePaused:
		var d PausedData
		if json.Unmarshal(e.Data, &d) == nil && d.Kind != "" {
			s.Paused = &Pause{PausedData: d, At: e.At}
		}
	case TypeResumed:
		s.Paused, s.Breaker = nil, Streaks{}
	case TypeWatchdogRan:
		at := e.At
		s.LastWatchdogRun = &at
	case plans.TypeFeedbackAdded: // pending_feedback_categorizations
		var d plans.FeedbackData
		if json.Unmarshal(e.Data, &d) != nil || d.ID == "" || slices.ContainsFunc(s.PendingFeedback, func(f Feedback) bool { return f.ID == d.ID }) {
			return
		}
		s.PendingFeedback = append(s.PendingFeedback, Feedback{ID: d.ID, Text: d.Text, At: e.At})
	case plans.TypeFeedbackCategorized:
		var d plans.CategorizedData
		if json.Unmarshal(e.Data, &d) == nil {
			s.PendingFeedback = slices.DeleteFunc(s.PendingFeedback, func(f Feedback) bool { return f.ID == d.ID })
		}
	}
}

// after is the streaks once task's attempt finished as d: a success ends
// them; a run that was not the task's lengthens the first; a failure ends
// the first and joins or starts the second.
func (b Streaks) after(task string, d FinishedData) Streaks {
	switch {
	case d.Outcome == OutcomeDone:
		return Streaks{}
	case d.Breaker != "":
		b.QuickExits++
	case d.Outcome == OutcomeFailed:
		b.QuickExits = 0
		if d.Signature == "" {
			b.Signature, b.SameError = "", nil
		} else if d.Signature != b.Signature {
			b.Signature, b.SameError = d.Signature, []string{task}
		} else if !slices.Contains(b.SameError, task) {
			b.SameError = append(slices.Clone(b.SameError), task)
		}
	}
	return b
}

func (p *Projection) MarshalState() ([]byte, error) { return json.Marshal(p.s) }

func (p *Projection) UnmarshalState(b []byte) error {
	s := NewState()
	if err := json.Unmarshal(b, s); err != nil {
		return err
	}
	if s.PendingFeedback == nil {
		s.PendingFeedback = []Feedback{}
	}
	p.s = s
	return nil
}

// Files renders orchestrator-state.json; the engine writes it atomically.
func (p *Projection) Files() ([]projections.File, error) {
	b, err := json.MarshalIndent(p.s, "", "  ")
	if err != nil {
		return nil, err
	}
	return []projections.File{{Path: File, Data: append(b, '\n')}}, nil
}

// Invariants: the active task's phase is one the fold produces.
func (p *Projection) Invariants() []string {
	a := p.s.ActiveTask
	if a == nil {
		return nil
	}
	switch a.Phase {
	case PhaseStarting, PhaseRunning, PhaseStopping, PhaseFinishing:
	default:
		return []string{"active task " + a.TaskID + " has unknown phase " + a.Phase}
	}
	if a.Phase == PhaseFinishing && a.Exit == nil {
		return []string{"active task " + a.TaskID + " is finishing with no exit recorded"}
	}
	return nil
}
