package main

import (
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// RetryCmd puts an abandoned, blocked or failed task back in the queue with
// its attempts reset.
type RetryCmd struct {
	ID string `arg:"" complete:"task" help:"Task id."`
}

func (c *RetryCmd) Run(e *env) error {
	return queueChange(e, c.ID, func(q *queue, s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Retry(s, q.policy, c.ID, q.now)
		if err != nil {
			return nil, err
		}
		return []eventlog.Draft{d}, q.mirror(e.ctx, []eventlog.Draft{d}, "")
	})
}
