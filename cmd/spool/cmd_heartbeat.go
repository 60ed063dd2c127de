package main

import (
	"fmt"
	"time"
)

// HeartbeatCmd extends the lease of a claim.
type HeartbeatCmd struct {
	ID string `arg:"" complete:"task" help:"A task you claimed."`
	OfflineFlag
}

func (c *HeartbeatCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	until, err := q.Heartbeat(e.ctx, c.ID)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"id": c.ID, "lease_until": until})
	}
	fmt.Fprintf(e.stdout, "%s: lease extended to %s\n", text(c.ID), until.Format(time.RFC3339))
	return nil
}
