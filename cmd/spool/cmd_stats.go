package main

import (
	"fmt"
	"text/tabwriter"
)

// StatsCmd counts the queue's tasks by where they are: seen, completed,
// failed, in backoff, ready and so on.
type StatsCmd struct{}

func (c *StatsCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	st, err := q.Stats(e.ctx)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, st)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, row := range []struct {
		name string
		n    int
	}{{"total seen", st.TotalSeen}, {"completed", st.Completed}, {"failed", st.Failed}, {"in backoff", st.InBackoff},
		{"abandoned", st.Abandoned}, {"blocked", st.Blocked}, {"working", st.Working}, {"pending", st.Pending},
		{"currently ready", st.CurrentlyReady}} {
		fmt.Fprintf(tw, "%s\t%d\n", row.name, row.n)
	}
	return tw.Flush()
}
