package main

import (
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// UnblockCmd clears Blocked (seed 004 §9).
type UnblockCmd struct {
	ID            string `arg:"" complete:"task" help:"Task id."`
	ResetAttempts bool   `help:"Also reset the attempt counters."`
}

func (c *UnblockCmd) Run(e *env) error {
	return queueChange(e, c.ID, func(q *queue, s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Unblock(s, c.ID, c.ResetAttempts)
		if err != nil {
			return nil, err
		}
		return []eventlog.Draft{d}, q.mirror(e.ctx, []eventlog.Draft{d}, "")
	})
}
