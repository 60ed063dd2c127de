package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/workqueue"
)

// ReadyCmd lists open tasks nothing blocks (beads' bd ready).
type ReadyCmd struct {
	Label    []string `short:"l" sep:"none" placeholder:"LABEL" help:"Only tasks with every one of these labels (repeatable)."`
	LabelAny []string `sep:"none" placeholder:"LABEL" help:"Only tasks with at least one of these labels (repeatable)."`
	Limit    int      `short:"n" default:"10" help:"At most this many tasks (0: all)."`
}

func (c *ReadyCmd) Run(e *env) error {
	if c.Limit < 0 {
		return fault.Usagef(CodeInvalidFlag, "--limit must not be negative, got %d", c.Limit)
	}
	if err := validateLabelFlags(c.Label, c.LabelAny); err != nil {
		return err
	}
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	f := workqueue.ReadyFilter{All: c.Label, Any: c.LabelAny}
	if !q.Native() {
		beads, err := q.ReadyBeads(e.ctx, f, c.Limit)
		if err != nil {
			return err
		}
		return printBeads(e, beads)
	}
	tasks, s, err := q.Ready(e.ctx, f, c.Limit)
	if err != nil {
		return err
	}
	return printTasks(e, q, s, tasks)
}

// printBeads prints a bd/br source's ready work as ready prints tasks: bd's
// issues under --json, aligned rows otherwise.
func printBeads(e *env, beads []workqueue.Candidate) error {
	if e.JSON {
		out := make([]workqueue.TaskJSON, 0, len(beads))
		for _, b := range beads {
			out = append(out, workqueue.TaskJSON{ID: b.ID, Title: b.Title, Description: b.Description, Status: workqueue.StatusOpen,
				Priority: b.Priority, IssueType: b.IssueType, Labels: b.Labels, CreatedAt: b.CreatedAt})
		}
		return writeJSON(e.stdout, out)
	}
	if len(beads) == 0 {
		fmt.Fprintln(e.stdout, "no tasks")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, b := range beads {
		fmt.Fprint(tw, row(text(b.ID), fmt.Sprintf("P%d", b.Priority), workqueue.StatusOpen, text(orDash(b.IssueType)), text(b.Title), labelList(b.Labels)))
	}
	return tw.Flush()
}

func validateLabelFlags(lists ...[]string) error {
	for _, l := range lists {
		for _, label := range l {
			if err := workqueue.ValidateLabel(label); err != nil {
				return err
			}
		}
	}
	return nil
}
