package main

import (
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/workqueue"
)

// HistoryCmd shows the queue's history of tasks (seed 001's History).
type HistoryCmd struct {
	ID string `arg:"" optional:"" complete:"task" help:"One task (default: every task the queue has seen)."`
}

func (c *HistoryCmd) Run(e *env) error {
	q, s, err := e.readQueue(bothSides)
	if err != nil {
		return err
	}
	if c.ID != "" {
		if s.History[c.ID] == nil && s.Tasks[c.ID] == nil {
			return fault.NotFound("task", c.ID)
		}
		h := q.entryView(s, c.ID)
		if e.JSON {
			return writeJSON(e.stdout, h)
		}
		printEntry(e, h, q.now)
		return nil
	}
	ids := make([]string, 0, len(s.History))
	for id := range s.History {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]workqueue.EntryJSON, 0, len(ids))
	for _, id := range ids {
		out = append(out, q.entryView(s, id))
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(e.stdout, "no history yet")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tATTEMPTS\tLAST ATTEMPT\tNEXT ELIGIBLE\tLAST ERROR")
	for _, h := range out {
		fmt.Fprint(tw, row(text(h.ID), h.Status, fmt.Sprint(h.Attempts), fmtTime(h.LastAttempt), fmtTime(h.NextEligibleAt), text(orDash(h.LastError))))
	}
	return tw.Flush()
}
