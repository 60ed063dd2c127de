// Package service is the orchestrator: it runs orchestrator.agent_command
// for the most urgent ready task, one at a time, watches it, and settles the
// task by how the agent ended. Every transition is an event first
// (internal/orchestrator), so that a spool watch that restarts after a crash
// learns from the log and the run directory where it was.
package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
	"github.com/spoolhq/spool/projections"
)

// Service is the orchestrator for one pass.
type Service struct {
	store.Env
	Policy orchestrator.Policy
	WQ     *wqservice.Service
	// Pause, when set, is called at the points crash tests stop spool at
	// (claimed, launched, and after each event the monitor appends).
	Pause func(point string)
}

func (s *Service) pause(point string) {
	if s.Pause != nil {
		s.Pause(point)
	}
}

// Open reads the configuration; nothing is read from the log yet.
func Open(env store.Env) *Service {
	return &Service{Env: env, Policy: orchestrator.PolicyFrom(env.Store.Config), WQ: wqservice.Open(env)}
}

func stateOf(v *projections.View) *orchestrator.State {
	if p, ok := projections.As[*orchestrator.Projection](v, orchestrator.Name); ok {
		return p.State()
	}
	return orchestrator.NewState()
}

// Read returns the orchestrator's state, up to date.
func (s *Service) Read(ctx context.Context) (*orchestrator.State, error) {
	v, err := s.Store.Read(ctx, orchestrator.Name)
	if err != nil {
		return nil, err
	}
	return stateOf(v), nil
}

// append records drafts on the orchestrator's state.
func (s *Service) append(ctx context.Context, drafts ...eventlog.Draft) (*orchestrator.State, error) {
	_, v, err := s.Env.Write(ctx, []string{orchestrator.Name}, func(*projections.View, string) ([]eventlog.Draft, error) {
		return drafts, nil
	})
	if err != nil {
		return nil, err
	}
	return stateOf(v), nil
}

// Status is the build.status payload, and the breaker's pause while it
// holds. Its camelCase names are the ones the orchestrator's original
// clients read, so they stay.
type Status struct {
	CurrentTask *orchestrator.Active `json:"currentTask"`
	QueueDepth  int                  `json:"queueDepth"`
	Paused      *orchestrator.Pause  `json:"paused,omitempty"`
}

// Status reads the active task and how many tasks next could claim now.
func (s *Service) Status(ctx context.Context) (Status, *orchestrator.State, error) {
	st, err := s.Read(ctx)
	if err != nil {
		return Status{}, nil, err
	}
	// Ready has one meaning everywhere: what next could claim now (stats'
	// currently_ready, the board's Ready column), not a task waiting out
	// its backoff nor a Blocked or abandoned one.
	qs, err := s.WQ.Stats(ctx)
	if err != nil {
		return Status{}, nil, err
	}
	return Status{CurrentTask: st.ActiveTask, QueueDepth: qs.CurrentlyReady, Paused: st.Paused}, st, nil
}

// Worktree is where the agent works on task id: in the git common
// directory, outside every work tree. An id no task can have (the folds
// take none: workqueue.ValidID) has none, "", which every use refuses (git
// worktree add, MkdirAll) or skips (git.RemoveScratch): never a path
// outside .git/spool/worktrees.
func (s *Service) Worktree(id string) string {
	if !workqueue.ValidID(id) {
		return ""
	}
	return filepath.Join(s.Store.Repo.PrivateDir(), "worktrees", "task-"+id)
}

// runDir is where a's attempt keeps its files in this clone. It, the
// worktree and the branch are derived from the task id, never taken from
// the log: a claim another machine recorded names its paths, and anyone
// who can push an event could name any. Like Worktree, it is "" for an id
// no task can have.
func (s *Service) runDir(a *orchestrator.Active) string {
	if !workqueue.ValidID(a.TaskID) {
		return ""
	}
	return orchestrator.RunDir(store.RunsDir(s.Store.Repo), a.TaskID)
}

// start claims the most urgent ready task and starts its agent. It returns
// nil when nothing is ready.
func (s *Service) start(ctx context.Context) (*orchestrator.Active, error) {
	var require []string
	if s.Policy.Label != "" {
		require = []string{s.Policy.Label}
	}
	// A plan's epic and its gate are bookkeeping, never an agent's work:
	// the gate closes when the plan is built (spool plan build). An epic
	// (a PRD's queue handle) is closed by its children's work, not by one
	// run, unless orchestrator.epics says otherwise.
	exclude := []string{plans.EpicLabel, plans.GateLabel}
	if !s.Policy.Epics {
		s.WQ.ExcludeTypes = []string{"epic"}
	}
	claimed, _, err := s.WQ.NextAnd(ctx, require, exclude, orchestrator.Worker, func(st *workqueue.State, c *workqueue.Claim) []eventlog.Draft {
		id := c.Task.ID
		d := orchestrator.ClaimedData{Attempt: c.Attempt, Branch: orchestrator.Branch(id), Worktree: s.Worktree(id), RunDir: s.runDir(&orchestrator.Active{TaskID: id})}
		if h := st.Entry(id); h != nil {
			d.FailureContext = h.LastError
		}
		return []eventlog.Draft{orchestrator.Claimed(id, d)}
	})
	if err != nil || claimed == nil {
		return nil, err
	}
	st, err := s.Read(ctx)
	if err != nil {
		return nil, err
	}
	a := st.ActiveTask
	if a == nil || a.TaskID != claimed.ID {
		return nil, fmt.Errorf("claimed %s, but the orchestrator's state does not show it", claimed.ID)
	}
	s.pause("claimed")
	sup, base, err := s.launch(ctx, a, claimed)
	if err == nil {
		s.pause("launched")
	}
	if err != nil {
		// spool's side failed (git, the run directory): a failed attempt,
		// so that a task whose worktree cannot be made backs off.
		_, err2 := s.append(ctx, eventlog.Draft{Type: orchestrator.TypeAgentExited, Subject: a.TaskID,
			Data: orchestrator.ExitedData{Attempt: a.Attempt, ExitCode: -1, Reason: orchestrator.ReasonNoLaunch, Tail: "could not start the agent: " + err.Error()}})
		return a, errors.Join(err, err2)
	}
	st, err = s.append(ctx, eventlog.Draft{Type: orchestrator.TypeAgentStarted, Subject: a.TaskID,
		Data: orchestrator.StartedData{Attempt: a.Attempt, Process: processOf(sup), Log: orchestrator.LogPath(s.runDir(a), a.Attempt), Base: base}})
	if err != nil {
		return a, err
	}
	s.pause(orchestrator.TypeAgentStarted)
	return st.ActiveTask, nil
}

// launch prepares a's worktree and starts the supervisor.
func (s *Service) launch(ctx context.Context, a *orchestrator.Active, task *wqservice.Claimed) (proc.Record, string, error) {
	dir, worktree := s.runDir(a), s.Worktree(a.TaskID)
	if dir == "" || worktree == "" {
		return proc.Record{}, "", fmt.Errorf("task id %q cannot name a worktree", a.TaskID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return proc.Record{}, "", err
	}
	if err := writeJSON(orchestrator.TaskPath(dir, a.Attempt), task); err != nil {
		return proc.Record{}, "", err
	}
	base, err := s.prepare(ctx, a)
	if err != nil {
		return proc.Record{}, "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return proc.Record{}, "", err
	}
	mcpConfig := orchestrator.MCPConfigPath(dir, a.Attempt)
	if err := writeJSON(mcpConfig, s.mcpConfig(ctx, exe, a)); err != nil {
		return proc.Record{}, "", err
	}
	argv := append([]string{exe, "__supervise", "--dir", dir, "--attempt", strconv.Itoa(a.Attempt),
		"--workdir", worktree, "--base", base, "--grace", s.Policy.Grace.String(), "--confine", s.Store.Repo.PrivateDir(), "--"}, s.Policy.Agent...)
	env := append(os.Environ(),
		"SPOOL_TASK_ID="+a.TaskID,
		"SPOOL_TASK_FILE="+orchestrator.TaskPath(dir, a.Attempt),
		"SPOOL_ATTEMPT="+strconv.Itoa(a.Attempt),
		"SPOOL_RUN_DIR="+dir,
		"SPOOL_REPO="+s.Store.Repo.WorkTree,
		"SPOOL_MCP_CONFIG="+mcpConfig)
	if a.FailureContext != "" {
		env = append(env, "SPOOL_FAILURE_CONTEXT="+a.FailureContext)
	}
	rec, err := proc.StartDetached(proc.Cmd{Argv: argv, Dir: worktree, Env: env})
	return rec, base, err
}

// mcpConfig is the MCP configuration the agent gets (SPOOL_MCP_CONFIG, in
// the format of Claude Code's --mcp-config and Cursor's mcp.json): spool mcp
// on the repository for a's task, acting as the claim's actor, with the
// agent tools alone (the read tools: the agent reports by its exit status
// and output, and the guard refuses any write).
func (s *Service) mcpConfig(ctx context.Context, exe string, a *orchestrator.Active) any {
	args := []string{"-C", s.Store.Repo.WorkTree}
	if s.Env.Actor != nil {
		if actor, err := s.Env.Actor(ctx); err == nil && actor != "" {
			args = append(args, "--actor", actor)
		}
	}
	args = append(args, "mcp", "--agent", a.TaskID, "--attempt", strconv.Itoa(a.Attempt))
	return map[string]any{"mcpServers": map[string]any{"spool": map[string]any{"command": exe, "args": args}}}
}

// prepare makes a's worktree on branch spool/<id>: where the branch is, or
// at HEAD for a new branch. It returns the commit the attempt starts from.
func (s *Service) prepare(ctx context.Context, a *orchestrator.Active) (string, error) {
	root, branch, worktree := s.Store.Repo.WorkTree, orchestrator.Branch(a.TaskID), s.Worktree(a.TaskID)
	base, err := git.Run(ctx, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		if base, err = git.Run(ctx, root, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
			return "", err
		}
	}
	base = strings.TrimSpace(base)
	git.RemoveScratch(ctx, root, worktree)
	if err := os.MkdirAll(filepath.Dir(worktree), 0o755); err != nil {
		return "", err
	}
	if _, err := git.Run(ctx, root, "worktree", "add", "--quiet", "--force", "-B", branch, worktree, base); err != nil {
		return "", err
	}
	return base, nil
}

// revert returns a's branch to where the attempt started and removes its
// worktree: the next attempt starts clean.
func (s *Service) revert(ctx context.Context, a *orchestrator.Active) error {
	root := s.Store.Repo.WorkTree
	git.RemoveScratch(ctx, root, s.Worktree(a.TaskID))
	if a.Base == "" {
		return nil
	}
	// The attempt has ended (its exit is recorded) and this runs under
	// watch's lock, so a lock file on the branch is one a git killed with
	// its spool or its agent left behind: git would refuse the revert
	// every time.
	ref := "refs/heads/" + orchestrator.Branch(a.TaskID)
	s.Store.Repo.RemoveRefLock(ref)
	_, err := git.Run(ctx, root, "update-ref", "-m", "spool: revert attempt "+strconv.Itoa(a.Attempt), ref, a.Base)
	return err
}

// settle ends the active task by how its agent ended (phase finishing),
// given the orchestrator's state st; it returns the outcome and, when the
// run tripped the breaker, the pause recorded with it.
func (s *Service) settle(ctx context.Context, st *orchestrator.State, a *orchestrator.Active) (string, *orchestrator.PausedData, error) {
	x := *a.Exit
	outcome := orchestrator.Outcome(x, s.Policy)
	fin := orchestrator.FinishedData{Breaker: orchestrator.Classify(x, s.Policy)}
	if outcome == orchestrator.OutcomeFailed {
		fin.Signature = orchestrator.Signature(x, a.TaskID, s.Worktree(a.TaskID), s.runDir(a))
	}
	// A run that trips the breaker is not the task's: not counted.
	pause := orchestrator.Trip(st, a, x, outcome, fin.Signature, s.Policy)
	if pause != nil && outcome == orchestrator.OutcomeFailed {
		outcome = orchestrator.OutcomeReleased
	}
	var entry string
	root := s.Store.Repo.WorkTree
	switch outcome {
	case orchestrator.OutcomeDone:
		if s.Policy.SubmitMerge {
			r, err := mqservice.Open(s.Env).Submit(ctx, mqservice.SubmitOptions{Workspace: s.Worktree(a.TaskID), BeadID: a.TaskID})
			if err != nil {
				return "", nil, fmt.Errorf("merge submit of %s: %w", orchestrator.Branch(a.TaskID), err)
			}
			entry = r.EntryRef
		} else {
			git.RemoveScratch(ctx, root, s.Worktree(a.TaskID))
		}
	default:
		if err := s.revert(ctx, a); err != nil {
			return "", nil, fmt.Errorf("revert %s to %s: %w", orchestrator.Branch(a.TaskID), a.Base, err)
		}
	}
	_, settled, err := wqservice.Decide(ctx, s.WQ, a.TaskID, "agent succeeded", func(st *workqueue.State, actor string) ([]eventlog.Draft, string, error) {
		var drafts []eventlog.Draft
		var err error
		outcome := outcome // the decision may run again: it must not change what it reads
		switch outcome {
		case orchestrator.OutcomeDone:
			drafts, err = workqueue.Done(st, s.WQ.Policy, a.TaskID, actor, "agent succeeded", s.Now)
		case orchestrator.OutcomeFailed:
			drafts, err = workqueue.Fail(st, s.WQ.Policy, a.TaskID, actor, orchestrator.FailureMessage(x, s.Policy), s.Now)
		default:
			var d eventlog.Draft
			if d, err = workqueue.Release(st, s.WQ.Policy, a.TaskID, actor, s.Now); err == nil {
				// A released attempt leaves a comment saying why, so the
				// next one sees it: on spool's task or on the bead.
				drafts = []eventlog.Draft{d, workqueue.Note(a.TaskID, orchestrator.ReleaseComment(x, s.Policy))}
			}
		}
		if err != nil {
			// The claim is no longer ours (its lease ran out while spool
			// was down, someone released it): the task is not ours to
			// settle, only the orchestrator's record.
			outcome = orchestrator.OutcomeDropped
			drafts = nil
		}
		fin := fin
		fin.MergeEntry = entry
		drafts = append(drafts, orchestrator.Finished(a, outcome, fin))
		if pause != nil {
			drafts = append(drafts, orchestrator.Paused(*pause))
		}
		return drafts, outcome, nil
	})
	if err != nil {
		return outcome, pause, err
	}
	return settled, pause, nil
}

// Rejection is a done attempt the merge train refused, as settled.
type Rejection struct {
	orchestrator.Submission
	Reason  string
	Outcome string // failed: reopened and counted; dropped: the task was no longer that done
}

// rejected settles the done attempts whose branch the merge train refused
// for good (failed_terminal): done is not merged. Each task is reopened
// and its attempt counted as failed with the train's reason, under the
// queue's policy, with a comment saying why (on the bead too, with a bd/br
// source), and orchestrator.merge_rejected in the same append; a task
// reopened by hand meanwhile is left alone (dropped). Entries the train
// has not finished with are looked at again at the next pass.
func (s *Service) rejected(ctx context.Context, st *orchestrator.State) ([]Rejection, error) {
	if len(st.Submitted) == 0 {
		return nil, nil
	}
	v, err := s.Store.Read(ctx, mergequeue.Name)
	if err != nil {
		return nil, err
	}
	q, ok := projections.As[*mergequeue.State](v, mergequeue.Name)
	if !ok {
		return nil, nil
	}
	var out []Rejection
	for _, sub := range st.Submitted {
		e := q.EntryByRef(sub.MergeEntry)
		if e == nil || e.Status != mergequeue.FailedTerminal {
			continue
		}
		r := Rejection{Submission: sub, Reason: e.LastError, Outcome: orchestrator.OutcomeFailed}
		msg := orchestrator.RejectedMessage(sub, e.LastError)
		_, outcome, err := wqservice.Decide(ctx, s.WQ, sub.TaskID, msg, func(st *workqueue.State, actor string) ([]eventlog.Draft, string, error) {
			outcome := orchestrator.OutcomeFailed
			drafts, err := workqueue.Rejected(st, s.WQ.Policy, sub.TaskID, msg, s.Now)
			if err != nil {
				outcome, drafts = orchestrator.OutcomeDropped, nil
			} else {
				drafts = append(drafts, workqueue.Note(sub.TaskID, msg+"; the task is reopened and the attempt counted as failed"))
			}
			return append(drafts, eventlog.Draft{Type: orchestrator.TypeMergeRejected, Subject: sub.TaskID,
				Data: orchestrator.MergeRejectedData{Attempt: sub.Attempt, MergeEntry: sub.MergeEntry, Reason: e.LastError, Outcome: outcome}}), outcome, nil
		})
		if err != nil {
			return out, err
		}
		r.Outcome = outcome
		out = append(out, r)
	}
	return out, nil
}

// Resume lifts the breaker's pause (spool orchestrator resume).
func (s *Service) Resume(ctx context.Context) (*orchestrator.State, error) {
	return s.change(ctx, func(st *orchestrator.State, actor string) (eventlog.Draft, error) {
		return orchestrator.Resume(st, "resumed by "+actor)
	})
}

// change appends the one event decide makes of the state, as the actor.
func (s *Service) change(ctx context.Context, decide func(*orchestrator.State, string) (eventlog.Draft, error)) (*orchestrator.State, error) {
	actor, err := s.Actor(ctx)
	if err != nil {
		return nil, err
	}
	_, v, err := s.Env.Write(ctx, []string{orchestrator.Name}, func(v *projections.View, _ string) ([]eventlog.Draft, error) {
		d, err := decide(stateOf(v), actor)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return nil, err
	}
	return stateOf(v), nil
}

// stop asks the supervisor to end the agent: SIGTERM first; SIGKILL to its
// group once the grace (and a second for the supervisor to record the end)
// has passed since the stop was recorded.
func (s *Service) stop(a *orchestrator.Active, now time.Time) {
	r := recordOf(a.Process)
	if !a.StoppingAt.IsZero() && now.Sub(a.StoppingAt) > s.Policy.Grace+time.Second {
		proc.KillGroup(r)
		return
	}
	proc.Signal(r, syscall.SIGTERM)
}
