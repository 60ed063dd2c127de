package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/plans"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/workqueue"
)

// A build, in a fixed order: the gate closed and shipped_at recorded in one
// append (plan.shipped, the intent), so the plan's tasks are ready; then the
// planner proposes PRD updates, which are applied and committed; then
// plan.built records how that ended. A build whose outcome is missing (spool
// died in between) is finished by the next plan build or rebuild, or by
// Recover. Builds of one clone take turns (.git/spool/plan-build.lock).

// Build is what a build did.
type Build struct {
	PlanID    string          `json:"plan_id"`
	Result    plans.BuiltData `json:"result"`
	PRD       *PRDResult      `json:"prd,omitempty"`
	Recovered []string        `json:"recovered,omitempty"` // interrupted builds finished first
}

// Build builds a plan; rebuild runs the build of a built plan again.
func (s *Service) Build(ctx context.Context, id string, rebuild bool) (Build, error) {
	b := Build{PlanID: id}
	if err := s.native(); err != nil {
		return b, err
	}
	unlock, err := s.buildLock(ctx)
	if err != nil {
		return b, err
	}
	defer unlock()
	if b.Recovered, err = s.recover(ctx); err != nil {
		return b, err
	}
	if _, err := s.write(ctx, withTasks, func(st *plans.State, wq *workqueue.State) ([]eventlog.Draft, error) {
		return plans.Ship(st, wq, id, rebuild, s.Now)
	}); err != nil {
		return b, err
	}
	b.Result, b.PRD, err = s.prdStep(ctx, id)
	return b, err
}

// Recover finishes the builds spool died in the middle of; it returns
// their plans.
func (s *Service) Recover(ctx context.Context) ([]string, error) {
	unlock, err := s.buildLock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.recover(ctx)
}

func (s *Service) buildLock(ctx context.Context) (func(), error) {
	unlock, ok, err := s.Store.Mutex(ctx, "plan-build", s.wq.Core.LockTimeout)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("another spool plan build holds %s: %w", s.Store.MutexPath("plan-build"), eventlog.ErrLockTimeout)
	}
	return unlock, nil
}

func (s *Service) recover(ctx context.Context) ([]string, error) {
	st, _, err := s.Read(ctx)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, p := range st.PlanList() {
		if !p.Building {
			continue
		}
		// A planner that fails again is recorded as the build's outcome;
		// only what stops recording stops recovery.
		if _, _, err := s.prdStep(ctx, p.ID); err != nil && !plannerError(err) {
			return done, err
		}
		done = append(done, p.ID)
	}
	return done, nil
}

func plannerError(err error) bool {
	c := fault.Classify(err).Code
	return c == plans.CodePlannerFailed.Name || c == plans.CodeInvalidProposal.Name
}

// prdStep runs the planner for PRD updates and applies them, recording the
// outcome; a failure is recorded too, and returned.
func (s *Service) prdStep(ctx context.Context, id string) (plans.BuiltData, *PRDResult, error) {
	built := func(d plans.BuiltData) []eventlog.Draft { return []eventlog.Draft{plans.Built(id, d)} }
	record := func(d plans.BuiltData, cause error) (plans.BuiltData, *PRDResult, error) {
		if _, err := s.write(ctx, []string{plans.Name}, func(*plans.State, *workqueue.State) ([]eventlog.Draft, error) {
			return built(d), nil
		}); err != nil {
			return d, nil, err
		}
		return d, nil, cause
	}
	if len(s.planner) == 0 {
		return record(plans.BuiltData{Skipped: "orchestrator.planner_command is not set: no PRD step"}, nil)
	}
	out, err := s.runPlanner(ctx, id)
	if err != nil {
		return record(plans.BuiltData{Error: fault.Classify(err).Message}, err)
	}
	p, err := plans.ParsePRD(out)
	if err != nil {
		return record(plans.BuiltData{Error: "the planner's output: " + fault.Classify(err).Message}, err)
	}
	builtOf := func(r PRDResult) plans.BuiltData { return plans.BuiltData{PRDHash: r.Hash, Held: r.Held} }
	res, err := s.applyPRD(ctx, p, id, "", func(r PRDResult) []eventlog.Draft { return built(builtOf(r)) })
	if err != nil {
		return record(plans.BuiltData{Error: fault.Classify(err).Message}, err)
	}
	return builtOf(res), &res, nil
}

// PlannerInput is what the planner reads on stdin: the plan, its tasks,
// and prd.json as it is (null when there is none).
type PlannerInput struct {
	Plan    *plans.Plan     `json:"plan"`
	Tasks   []PlanTask      `json:"tasks"`
	PRDFile string          `json:"prd_file"`
	PRD     json.RawMessage `json:"prd"`
}

// runPlanner runs orchestrator.planner_command in the work tree, the plan
// on stdin and SPOOL_PLAN_ID, SPOOL_PRD_FILE in its environment, and
// returns its stdout (at most a proposal's size and a byte, so a longer one
// is refused as too large).
func (s *Service) runPlanner(ctx context.Context, id string) ([]byte, error) {
	view, err := s.Show(ctx, id)
	if err != nil {
		return nil, err
	}
	dir := s.Store.Repo.WorkTree
	prdPath, err := s.prdPath()
	if err != nil {
		return nil, err
	}
	in := PlannerInput{Plan: view.Plan, Tasks: view.Items, PRDFile: s.prdFile, PRD: json.RawMessage("null")}
	if b, err := os.ReadFile(prdPath); err == nil && json.Valid(b) {
		in.PRD = b
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fault.New(fault.CodeStorage, err, "cannot read "+s.prdFile+": "+err.Error(), "file", s.prdFile)
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.plannerTimeout)
	defer cancel()
	stdout := &capped{max: plans.MaxBytes + 1}
	stderr := &capped{max: 4096, keepTail: true}
	// Confined as a coding agent is: it proposes on stdout, and neither it
	// nor what it starts may change the log.
	err = proc.Run(ctx, proc.Cmd{Argv: s.planner, Dir: dir, Stdin: bytes.NewReader(stdin), Stdout: stdout, Stderr: stderr,
		Env: append(os.Environ(), "SPOOL_PLAN_ID="+id, "SPOOL_PRD_FILE="+prdPath), Confine: s.Store.Repo.PrivateDir()})
	if err != nil {
		why := err.Error()
		if ctx.Err() == context.DeadlineExceeded {
			why = fmt.Sprintf("no answer within orchestrator.planner_timeout (%s)", s.plannerTimeout)
		}
		return nil, fault.New(plans.CodePlannerFailed, err, fmt.Sprintf("the planner %s failed: %s: %s", s.planner[0], why, bytes.TrimSpace(stderr.buf.Bytes())),
			"plan_id", id)
	}
	return stdout.buf.Bytes(), nil
}

// capped keeps the first max bytes written, or the last with keepTail.
type capped struct {
	buf      bytes.Buffer
	max      int
	keepTail bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if c.keepTail {
		c.buf.Write(p)
		if over := c.buf.Len() - c.max; over > 0 {
			c.buf.Next(over)
		}
		return n, nil
	}
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return n, nil
}
