// Package prime writes an agent's context for a session on spool's tracker:
// what the tracker holds now, the commands of the workflow, and the rules of
// the orchestrator's trust boundary. bd prime and bd onboard print it (spool
// standing in for bd); an MCP server can serve the same text. It does no I/O
// but to the writer it is given.
package prime

import (
	"fmt"
	"io"
	"strings"
)

// Counts is what the tracker holds now, as bd stats counts it: Open is
// every issue not closed; Ready, InProgress and Blocked (waiting for a
// blocker) are among them.
type Counts struct {
	Open, InProgress, Blocked, Ready, Closed int
}

// Issue is an issue named in the context: the agent's own task, or ready
// work.
type Issue struct {
	ID       string
	Title    string
	Priority int
}

// Context is what Write needs.
type Context struct {
	// Bin is how the agent spells the tracker's commands: "bd", or
	// "spool bd".
	Bin    string
	Counts Counts
	// Task is the task an orchestrated agent was started for
	// ($SPOOL_TASK_ID), with its attempt; nil outside such a run.
	Task    *Issue
	Attempt int
	// Ready is the most urgent ready work (a few items).
	Ready []Issue
}

// Mode is how much Write says.
type Mode int

const (
	Short Mode = iota // the default: state, rules, the commands of the loop (under 2 KB)
	Full              // and the rest of the command reference
	MCP               // the rules alone, for an agent whose tools are an MCP server's
)

// Write writes the context.
func Write(w io.Writer, c Context, m Mode) error {
	bin := c.Bin
	if bin == "" {
		bin = "bd"
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Work tracking: spool (as %s)\n\n", bin)
	if m != MCP {
		p("`%s` here is spool: bd's commands and JSON over a task log kept in git.\n", bin)
		n := c.Counts
		p("Now: %d open (%d ready, %d in progress, %d blocked), %d closed.\n", n.Open, n.Ready, n.InProgress, n.Blocked, n.Closed)
		if c.Task != nil {
			p("Your task: %s %q (attempt %d).\n", c.Task.ID, oneLine(c.Task.Title), c.Attempt)
		}
		for _, r := range c.Ready {
			p("Ready: %s [P%d] %q\n", r.ID, r.Priority, oneLine(r.Title))
		}
		p("\n")
	}
	p("## Rules: you read, comment and propose; spool decides\n")
	p("- Your exit status is your result: 0 closes your task, non-zero fails it (spool retries, demotes or blocks it). Never close your own task (%s close).\n", bin)
	p("- Report progress and findings as comments: %s comments add ID \"...\".\n", bin)
	p("- Holding a claim yourself (%s update ID --status in_progress)? Renew its lease: spool heartbeat ID.\n", bin)
	p("- Create no tasks and dependencies (%s create, %s dep add): propose them. Print a plan proposal,\n", bin, bin)
	p("  {\"category\":\"...\",\"mapped_plan_id\":\"...\",\"proposed_tasks\":[{\"title\":\"...\",\"description\":\"...\",\"dependencies\":[\"<existing id>\"]}]}\n")
	p("  which spool validates and applies whole (spool plan feedback), or a human approves.\n")
	p("- Track work here, not in TODO files or another tracker.\n")
	if m == MCP {
		_, err := io.WriteString(w, b.String())
		return err
	}
	p("\n## Commands (add --json for bd's JSON)\n")
	rows := [][2]string{
		{"ready", "unblocked work, most urgent first"},
		{"show ID", "an issue, its dependencies and comments"},
		{"list [--status S] [--all]", "issues; closed ones with --all"},
		{"blocked", "what waits, and for what"},
		{"dep tree ID", "what ID waits for"},
		{"comments add ID \"text\"", "a note on an issue"},
	}
	if m == Full {
		rows = append(rows, [][2]string{
			{"search TEXT", "issues whose id, title or description has TEXT"},
			{"stats", "counts by status"},
			{"label list ID", "an issue's labels"},
			{"comments ID", "an issue's comments"},
			{"epic status", "each open epic's progress"},
			{"update ID --notes \"...\"", "change a field of an issue you own"},
		}...)
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(bin)+1+len(r[0]))
	}
	for _, r := range rows {
		p("  %-*s  %s\n", width, bin+" "+r[0], r[1])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Onboard writes what to add to AGENTS.md so that an agent runs prime.
func Onboard(w io.Writer, bin string) error {
	if bin == "" {
		bin = "bd"
	}
	_, err := fmt.Fprintf(w, `
%[1]s Onboarding (spool)

Add this snippet to AGENTS.md (or create it):

--- BEGIN AGENTS.MD CONTENT ---
## Issue Tracking

This project tracks work with spool, which answers as %[1]s (beads' commands and JSON).
Run `+"`%[1]s prime`"+` at the start of a session for the workflow and its rules.

**Quick reference:**
- `+"`%[1]s ready`"+` - Find unblocked work
- `+"`%[1]s show <id>`"+` - Read an issue
- `+"`%[1]s comments add <id> \"...\"`"+` - Report progress
- Your exit status closes or fails your task; propose new tasks, do not create them
--- END AGENTS.MD CONTENT ---

%[1]s prime prints the live context: what the tracker holds, the commands, the rules.
`, bin)
	return err
}

// maxTitle is the most of a title the context shows, so that it stays
// short whatever the titles are.
const maxTitle = 72

// oneLine keeps a title on one line and at most maxTitle characters (%q
// escapes what is left that a terminal would act on).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxTitle {
		s = string(r[:maxTitle-1]) + "…"
	}
	return s
}
