package main

import (
	"fmt"

	"github.com/spoolhq/spool/internal/fleet"
)

// SyncCmd shares the log through the git remote (internal/fleet).
type SyncCmd struct {
	Remote string `placeholder:"REMOTE" help:"The git remote (default: sync.remote, then merge.remote)."`
}

func (c *SyncCmd) Run(e *env) error {
	st, err := e.open()
	if err != nil {
		return err
	}
	o, err := fleet.OptionsFrom(e.ctx, st, c.Remote)
	if err != nil {
		return err
	}
	res, err := fleet.Sync(e.ctx, st, o)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, res)
	}
	switch {
	case res.Remote == "" && res.Sent == 0:
		fmt.Fprintf(e.stdout, "the local branch %s has every event (no remote to share it with)\n", res.Branch)
	case res.Received == 0 && res.Sent == 0 && res.Pushes == 0:
		fmt.Fprintf(e.stdout, "up to date with %s/%s\n", res.Remote, res.Branch)
	default:
		fmt.Fprintln(e.stdout, res.String())
	}
	return nil
}
