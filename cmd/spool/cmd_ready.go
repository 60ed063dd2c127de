package main

import (
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
	tasks, s, err := q.Ready(e.ctx, workqueue.ReadyFilter{All: c.Label, Any: c.LabelAny}, c.Limit)
	if err != nil {
		return err
	}
	return printTasks(e, q, s, tasks)
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
