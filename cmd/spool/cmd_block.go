package main

// BlockCmd marks a task Blocked by hand: never ready until unblocked.
type BlockCmd struct {
	ID     string `arg:"" complete:"task" help:"Task id."`
	Reason string `short:"r" required:"" help:"Why."`
}

func (c *BlockCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	h, err := q.Block(e.ctx, c.ID, c.Reason)
	if err != nil {
		return err
	}
	return printHistory(e, h, q.Now)
}
