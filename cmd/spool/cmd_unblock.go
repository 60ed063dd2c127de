package main

// UnblockCmd clears Blocked: a person's way back for a task the queue gave
// up on; the task is ready again, its attempts kept unless reset.
type UnblockCmd struct {
	ID            string `arg:"" complete:"task" help:"Task id."`
	ResetAttempts bool   `help:"Also reset the attempt counters."`
}

func (c *UnblockCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	h, err := q.Unblock(e.ctx, c.ID, c.ResetAttempts)
	if err != nil {
		return err
	}
	return printHistory(e, h, q.Now)
}
