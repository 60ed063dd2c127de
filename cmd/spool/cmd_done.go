package main

// DoneCmd records a successful attempt and closes the task (RecordSuccess).
type DoneCmd struct {
	ID     string `arg:"" complete:"task" help:"A task you claimed."`
	Reason string `short:"r" default:"done" help:"Close reason."`
	OfflineFlag
}

func (c *DoneCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	h, err := q.Done(e.ctx, c.ID, c.Reason)
	if err != nil {
		return err
	}
	return printHistory(e, h, q.Now)
}
