package main

import (
	"fmt"
	"text/tabwriter"
)

// HistoryCmd shows the queue's history of tasks: per task its status,
// attempts and last error.
type HistoryCmd struct {
	ID string `arg:"" optional:"" complete:"task" help:"One task (default: every task the queue has seen)."`
}

func (c *HistoryCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	if c.ID != "" {
		h, err := q.Entry(e.ctx, c.ID)
		if err != nil {
			return err
		}
		return printHistory(e, h, q.Now)
	}
	out, err := q.Histories(e.ctx)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(e.stdout, "no history yet")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	// LAST ATTEMPT is when the last attempt ended ("-" while it runs: WORKER
	// and LEASE say who holds it, until when); --json has the claim's time too.
	fmt.Fprintln(tw, "ID\tSTATUS\tATTEMPTS\tLAST ATTEMPT\tWORKER\tLEASE\tNEXT ELIGIBLE\tLAST ERROR")
	for _, h := range out {
		fmt.Fprint(tw, row(text(h.ID), h.Status, fmt.Sprint(h.Attempts), fmtTime(h.LastEndedAt), text(orDash(h.Worker)), fmtTime(h.LeaseUntil),
			fmtTime(h.NextEligibleAt), text(orDash(h.LastError))))
	}
	return tw.Flush()
}
