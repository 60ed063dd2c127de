package main

import (
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// BlockCmd marks a task Blocked by hand: never ready until unblocked.
type BlockCmd struct {
	ID     string `arg:"" complete:"task" help:"Task id."`
	Reason string `short:"r" required:"" help:"Why."`
}

func (c *BlockCmd) Run(e *env) error {
	return queueChange(e, c.ID, func(q *queue, s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Block(s, c.ID, c.Reason)
		if err != nil {
			return nil, err
		}
		return []eventlog.Draft{d}, q.mirror(e.ctx, []eventlog.Draft{d}, "")
	})
}
