package main

import (
	"fmt"

	"github.com/spoolhq/spool/internal/store"
)

// InitCmd creates .spool/ and registers the merge driver.
type InitCmd struct{}

// initNext tells a new user what to commit, once and from then on.
const initNext = `next:
  commit spool's files once:  git add .spool .gitattributes && git commit -m "spool: init"
  then commit .spool/events/ with your work: each clone appends only to its own
  file there (.spool/events/<writer>.jsonl), so clones never conflict
  optional: spool hooks install
`

func (c *InitCmd) Run(e *env) error {
	init, err := store.Init(e.ctx, e.dir(), e.warn)
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
