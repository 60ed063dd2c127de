package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/workqueue"
)

// StatsCmd counts the queue (seed 001's Stats).
type StatsCmd struct{}

func (c *StatsCmd) Run(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	gate := q.policy.Gate(nil, nil)
	var cands []workqueue.Candidate
	if !q.native() {
		if cands, err = q.beads.Ready(e.ctx, gate.Require); err != nil {
			return err
		}
	}
	s, err := q.read(bothSides)
	if err != nil {
		return err
	}
	if q.native() {
		cands = workqueue.Candidates(s.Ready(q.policy, workqueue.ReadyFilter{}, q.now, workqueue.Unsorted))
	}
	ready := len(q.policy.Select(cands, workqueue.Lookup(s.History), gate, q.now, workqueue.Unsorted))
	st := q.policy.Stats(s.History, ready, q.now)
	if e.JSON {
		return writeJSON(e.stdout, st)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, row := range []struct {
		name string
		n    int
	}{{"total seen", st.TotalSeen}, {"completed", st.Completed}, {"failed", st.Failed}, {"in backoff", st.InBackoff},
		{"abandoned", st.Abandoned}, {"blocked", st.Blocked}, {"working", st.Working}, {"currently ready", st.CurrentlyReady}} {
		fmt.Fprintf(tw, "%s\t%d\n", row.name, row.n)
	}
	return tw.Flush()
}
