// Package agentguide holds the workflow a coding agent follows on spool's
// queues, as one short text (under 2 KB, so that it costs an agent little
// of its context): what spool mcp serves as its prompt. It names the MCP
// tools, and the rules of the orchestrator's trust boundary: an agent it
// started reads, and reports by its exit status and output; spool decides.
package agentguide

import (
	"fmt"
	"strings"
)

// Max is the most the text may be: an agent reads it whole at the start
// of every session.
const Max = 2048

// Context is what the text says beyond the workflow: the task an
// orchestrated agent was started for ("" otherwise) and its attempt.
type Context struct {
	Task    string
	Attempt int
}

// Text is the workflow.
func Text(c Context) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Work on spool\n\n")
	p("spool keeps the team's queues (tasks, merges, jobs, PRDs) as an event log in git. ")
	p("Its tools answer with the CLI's --json; an error carries spool's code (not_found, not_claimed, unauthorized, ...).\n\n")
	if c.Task != "" {
		p("You were started for task %s (attempt %d). Read it: show {\"ids\":[\"%s\"]}.\n\n", c.Task, c.Attempt, c.Task)
	}
	p("## The loop\n")
	p("1. ready: what next could claim now, most urgent first. show: a task, its dependencies and comments.\n")
	p("2. next: claim the most urgent one under a lease (null: nothing ready). Only you may finish your claim.\n")
	p("3. heartbeat {id} while you work, well inside the lease; a lease that runs out counts as a failed attempt.\n")
	p("4. comment {id, text}: progress and findings, for people and the next attempt.\n")
	p("5. done {id, reason} when it is finished, or fail {id, error}: spool retries, backs off, demotes or blocks it.\n\n")
	p("## Rules\n")
	p("- Track work here, not in TODO files or another tracker.\n")
	p("- Change only what you claimed. A task someone else holds is theirs.\n")
	p("- Found more work? propose it: {category, mapped_plan_id, proposed_tasks:[{title, description, dependencies:[existing ids]}]}. ")
	p("spool validates the proposal whole and applies it, or holds it for a person to approve.\n")
	p("- Started by spool's orchestrator? Your tools only read, and spool refuses any write from you. ")
	p("Your exit status is your result (0 closes your task, anything else fails it); your output is its log and the next attempt's context.\n")
	p("- Subscribe to spool://ready or spool://task/{id} to hear when they change.\n")
	return b.String()
}
