package main

import (
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// FailCmd records a failed attempt (RecordFailure): backoff, abandonment,
// demotion or Blocked, as the policy says.
type FailCmd struct {
	ID    string `arg:"" complete:"task" help:"A task you claimed."`
	Error string `short:"e" required:"" help:"What went wrong."`
}

func (c *FailCmd) Run(e *env) error {
	return queueChange(e, c.ID, func(q *queue, s *workqueue.State, actor string) ([]eventlog.Draft, error) {
		drafts, err := workqueue.Fail(s, q.policy, c.ID, actor, c.Error, q.now)
		if err != nil {
			return nil, err
		}
		return drafts, q.mirror(e.ctx, drafts, "")
	})
}
