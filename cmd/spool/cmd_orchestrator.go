package main

import (
	"fmt"
	"time"

	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
)

// OrchestratorCmd groups the orchestrator's commands. It has no start or
// pause, so that ready work never waits for a person: it runs whenever
// spool watch runs.
type OrchestratorCmd struct {
	Status OrchestratorStatusCmd `cmd:"" help:"What the orchestrator is doing: the task an agent works on, how many tasks wait, and why it is paused."`
	Resume OrchestratorResumeCmd `cmd:"" help:"Start agents again after the breaker paused the orchestrator."`
}

// OrchestratorResumeCmd lifts the breaker's pause.
type OrchestratorResumeCmd struct{}

func (c *OrchestratorResumeCmd) Run(e *env) error {
	o, err := e.orchestrator()
	if err != nil {
		return err
	}
	st, err := o.Resume(e.ctx)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"paused": st.Paused})
	}
	fmt.Fprintln(e.stdout, "the orchestrator is resumed: spool watch starts agents again")
	return nil
}

// OrchestratorStatusCmd prints build.status.
type OrchestratorStatusCmd struct{}

func (c *OrchestratorStatusCmd) Run(e *env) error {
	o, err := e.orchestrator()
	if err != nil {
		return err
	}
	status, st, err := o.Status(e.ctx)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, status)
	}
	if !o.Policy.Enabled() {
		fmt.Fprintln(e.stdout, "agent command: not set (spool config set orchestrator.agent_command '[\"path/to/agent\"]')")
	}
	if p := status.Paused; p != nil {
		fmt.Fprintf(e.stdout, "PAUSED:       since %s: %s\n", p.At.Format(time.RFC3339), text(p.Reason))
	}
	if a := status.CurrentTask; a != nil {
		fmt.Fprintf(e.stdout, "current task: %s, attempt %d, %s, branch %s, supervisor pid %d\n", a.TaskID, a.Attempt, a.Phase, text(a.Branch), a.AgentPID)
		fmt.Fprintf(e.stdout, "started:      %s, last output %s\n", a.StartedAt.Format(time.RFC3339), a.LastOutputAt.Format(time.RFC3339))
		if a.Log != "" {
			fmt.Fprintf(e.stdout, "output:       %s\n", text(a.Log))
		}
	} else {
		fmt.Fprintln(e.stdout, "current task: none")
	}
	fmt.Fprintf(e.stdout, "queue depth:  %d ready\n", status.QueueDepth)
	if st.LastWatchdogRun != nil {
		fmt.Fprintf(e.stdout, "watchdog:     last ran %s\n", st.LastWatchdogRun.Format(time.RFC3339))
	}
	if n := len(st.PendingFeedback); n > 0 {
		fmt.Fprintf(e.stdout, "feedback:     %d waiting for the planner\n", n)
	}
	return nil
}

// SuperviseCmd is the agent's supervisor, started by spool watch.
type SuperviseCmd struct {
	Dir     string        `required:"" help:"The task's run directory."`
	Attempt int           `required:"" help:"The attempt."`
	Workdir string        `required:"" help:"Where the agent runs."`
	Base    string        `help:"The commit the attempt starts from."`
	Grace   time.Duration `default:"10s" help:"SIGTERM to SIGKILL."`
	Confine string        `help:"The private directory (.git/spool) of the repository the agent may not change."`
	Argv    []string      `arg:"" passthrough:"" help:"The agent's argv."`
}

func (c *SuperviseCmd) Run(e *env) error {
	argv := c.Argv
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	return orchservice.Supervise(e.ctx, c.Dir, c.Attempt, c.Workdir, c.Base, c.Confine, argv, c.Grace)
}
