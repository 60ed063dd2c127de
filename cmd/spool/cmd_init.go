package main

import (
	"fmt"

	"github.com/spoolhq/spool/internal/store"
)

// InitCmd creates .spool/config.json and this clone's log.
type InitCmd struct{}

// initNext tells a new user what to commit and how the log is shared.
const initNext = `next:
  commit the configuration once:  git add .spool && git commit -m "spool: init"
  the log is not in your work tree: it lives in .git/spool/ and is committed on
  the branch spool-log; spool sync shares it through origin (claims do too)
`

func (c *InitCmd) Run(e *env) error {
	init, err := store.Init(e.ctx, e.dir(), e.warn, e.storeOptions()...)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, init)
	}
	if len(init.Created) == 0 {
		fmt.Fprintf(e.stdout, "spool already initialized in %s\n", init.Root)
		return nil
	}
	fmt.Fprintf(e.stdout, "initialized spool in %s (writer %s)\n", init.Root, init.Writer)
	for _, p := range init.Created {
		fmt.Fprintf(e.stdout, "  created %s\n", p)
	}
	fmt.Fprint(e.stdout, initNext)
	return nil
}
