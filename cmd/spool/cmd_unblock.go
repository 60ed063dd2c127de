package main

// UnblockCmd clears Blocked (seed 004 §9).
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
