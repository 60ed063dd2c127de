package main

import (
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// DoneCmd records a successful attempt and closes the task (RecordSuccess).
type DoneCmd struct {
	ID     string `arg:"" complete:"task" help:"A task you claimed."`
	Reason string `short:"r" default:"done" help:"Close reason."`
}

func (c *DoneCmd) Run(e *env) error {
	return queueChange(e, c.ID, func(q *queue, s *workqueue.State, actor string) ([]eventlog.Draft, error) {
		drafts, err := workqueue.Done(s, q.policy, c.ID, actor, c.Reason, q.now)
		if err != nil {
			return nil, err
		}
		return drafts, q.mirror(e.ctx, drafts, c.Reason)
	})
}

// queueChange runs a queue decision and prints the task's history after it.
func queueChange(e *env, id string, decide func(q *queue, s *workqueue.State, actor string) ([]eventlog.Draft, error)) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	_, s, err := q.write(bothSides, func(s *workqueue.State, actor string) ([]eventlog.Draft, error) {
		return decide(q, s, actor)
	})
	if err != nil {
		return err
	}
	h := q.entryView(s, id)
	if e.JSON {
		return writeJSON(e.stdout, h)
	}
	printEntry(e, h, q.now)
	return nil
}
