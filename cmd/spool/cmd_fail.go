package main

// FailCmd records a failed attempt (RecordFailure): backoff, abandonment,
// demotion or Blocked, as the policy says.
type FailCmd struct {
	ID    string `arg:"" complete:"task" help:"A task you claimed."`
	Error string `short:"e" required:"" help:"What went wrong."`
	OfflineFlag
}

func (c *FailCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	h, err := q.Fail(e.ctx, c.ID, c.Error)
	if err != nil {
		return err
	}
	return printHistory(e, h, q.Now)
}
