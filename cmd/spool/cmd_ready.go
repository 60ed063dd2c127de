package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/beads"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/workqueue"
)

// ReadyCmd lists what next could claim now, in next's order.
type ReadyCmd struct {
	Label    []string `short:"l" sep:"none" placeholder:"LABEL" help:"Only tasks with every one of these labels (repeatable)."`
	LabelAny []string `sep:"none" placeholder:"LABEL" help:"Only tasks with at least one of these labels (repeatable)."`
	Limit    int      `short:"n" default:"10" help:"At most this many tasks (0: all)."`
}

func (c *ReadyCmd) Run(e *env) error {
	if c.Limit < 0 {
		return fault.Usagef(CodeInvalidFlag, "--limit must not be negative, got %d", c.Limit)
	}
	if err := workqueue.ValidateLabels(c.Label, c.LabelAny); err != nil {
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
	if e.JSON && c.Limit == 0 {
		if ok, err := q.WriteReadyJSON(e.ctx, f, e.stdout); ok || err != nil {
			return err
		}
	}
	tasks, s, err := q.Ready(e.ctx, f, c.Limit)
	if err != nil {
		return err
	}
	return printTasks(e, q, s, tasks)
}

// printBeads prints a bd/br source's ready work as ready prints tasks:
// under --json each issue as the source printed it, aligned rows otherwise.
func printBeads(e *env, issues []beads.Issue) error {
	if e.JSON {
		out := make([]json.RawMessage, 0, len(issues))
		for _, b := range issues {
			out = append(out, json.RawMessage(b.Raw))
		}
		return writeJSON(e.stdout, out)
	}
	if len(issues) == 0 {
		fmt.Fprintln(e.stdout, "no tasks")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, b := range issues {
		fmt.Fprint(tw, row(text(b.ID), fmt.Sprintf("P%d", b.Priority), workqueue.StatusOpen, text(orDash(b.IssueType)), text(b.Title),
			labelList(workqueue.NormLabels(b.Labels))))
	}
	return tw.Flush()
}
