package main

import (
	"fmt"
	"time"
)

// NextCmd claims the most urgent eligible task (seed 001's Next).
type NextCmd struct {
	Label        []string `short:"l" sep:"none" placeholder:"LABEL" help:"Only tasks with this label, besides workqueue.label (repeatable)."`
	ExcludeLabel []string `sep:"none" placeholder:"LABEL" help:"Never tasks with this label (repeatable)."`
	Worker       string   `short:"w" help:"Who works on it (default: the actor)."`
}

func (c *NextCmd) Run(e *env) error {
	if err := validateLabelFlags(c.Label, c.ExcludeLabel); err != nil {
		return err
	}
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	claim, idle, err := q.Next(e.ctx, c.Label, c.ExcludeLabel, c.Worker)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, claim) // null when nothing is eligible
	}
	switch {
	case claim != nil:
		fmt.Fprintf(e.stdout, "claimed %s (P%d, attempt %d, lease until %s): %s\n", text(claim.ID), claim.Priority, claim.Attempt,
			claim.LeaseUntil.Format(time.RFC3339), text(claim.Title))
	case !idle.At.IsZero():
		fmt.Fprintf(e.stdout, "nothing ready; %s may be claimable at %s\n", text(idle.Task), idle.At.Format(time.RFC3339))
	default:
		fmt.Fprintln(e.stdout, "nothing ready")
	}
	return nil
}
