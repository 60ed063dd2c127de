package main

// RetryCmd puts an abandoned, blocked or failed task back in the queue with
// its attempts reset.
type RetryCmd struct {
	ID string `arg:"" complete:"task" help:"Task id."`
}

func (c *RetryCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	h, err := q.Retry(e.ctx, c.ID)
	if err != nil {
		return err
	}
	return printHistory(e, h, q.Now)
}
