package main

import "fmt"

// ReplayCmd rebuilds every projection from scratch.
type ReplayCmd struct{}

func (c *ReplayCmd) Run(e *env) error {
	foldsWholeLog() // reads the whole log: keep memory bounded
	st, err := e.open()
	if err != nil {
		return err
	}
	events, err := st.Rebuild(e.ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(st.Engine.Specs))
	for _, s := range st.Engine.Specs {
		names = append(names, s.Name)
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"events": events, "projections": names})
	}
	fmt.Fprintf(e.stdout, "replayed %d events into %d projections\n", events, len(names))
	return nil
}
