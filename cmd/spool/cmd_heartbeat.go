package main

import (
	"fmt"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
)

// HeartbeatCmd extends the lease of a claim.
type HeartbeatCmd struct {
	ID string `arg:"" complete:"task" help:"A task you claimed."`
}

func (c *HeartbeatCmd) Run(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	var until time.Time
	if _, _, err := q.write(history, func(s *workqueue.State, actor string) ([]eventlog.Draft, error) {
		d, u, err := workqueue.Heartbeat(s, q.policy, c.ID, actor, q.now)
		until = u
		return []eventlog.Draft{d}, err
	}); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"id": c.ID, "lease_until": until})
	}
	fmt.Fprintf(e.stdout, "%s: lease extended to %s\n", c.ID, until.Format(time.RFC3339))
	return nil
}
