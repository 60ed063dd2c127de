package main

import (
	"fmt"
	"strings"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/projections"
)

// VerifyCmd checks the log and the projections; CI and pre-push run it.
type VerifyCmd struct {
	Verbose bool `short:"v" help:"Also say which projections were behind the log (normal: large ones save lazily)."`
}

type verifyReport struct {
	OK          bool                     `json:"ok"`
	Events      int                      `json:"events"`
	Files       int                      `json:"files"`
	Problems    []eventlog.Problem       `json:"problems"`
	Differences []projections.Difference `json:"differences"`
	Stale       []string                 `json:"stale"`
	Invariants  []string                 `json:"invariants,omitempty"` // merge queue invariants (seed 002 §5) that do not hold
}

func (c *VerifyCmd) Run(e *env) error {
	longRunning() // reads the whole log: keep memory bounded
	st, err := e.open()
	if err != nil {
		return err
	}
	rep, err := verify(e, st.Log, st.Engine)
	if err != nil {
		return err
	}
	if e.JSON {
		if err := writeJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(e.stdout, "log:", p)
		}
		for _, d := range rep.Differences {
			fmt.Fprintf(e.stdout, "projection %s: %s: %s\n", d.Projection, d.Path, d.Problem)
		}
		for _, inv := range rep.Invariants {
			fmt.Fprintln(e.stdout, "merge queue:", inv)
		}
		if len(rep.Stale) > 0 && c.Verbose {
			// Normal: commands update only the projections they use.
			fmt.Fprintf(e.stdout, "note: %s behind the log: state compared after catching up in memory; files not compared (spool replay writes them)\n",
				strings.Join(rep.Stale, ", "))
		}
		if rep.OK {
			fmt.Fprintf(e.stdout, "ok: %d events in %d files; projections equal a fresh replay\n", rep.Events, rep.Files)
		}
	}
	if !rep.OK {
		return fault.New(CodeVerifyFailed, nil,
			fmt.Sprintf("verify failed: %d log problems, %d projection differences%s", len(rep.Problems), len(rep.Differences), brokenInvariants(rep)))
	}
	return nil
}

func verify(e *env, log *eventlog.Log, en *projections.Engine) (*verifyReport, error) {
	// Hold the lock so no append lands between the replay and the comparison.
	unlock, err := log.Lock(e.ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	check, err := log.Check()
	if err != nil {
		return nil, err
	}
	rep := &verifyReport{Events: check.Events, Files: check.Files, Problems: check.Problems,
		Differences: []projections.Difference{}, Stale: []string{}}
	if len(check.Problems) == 0 {
		diffs, stale, err := en.Verify(e.ctx)
		if err != nil {
			return nil, err
		}
		rep.Differences = append(rep.Differences, diffs...)
		rep.Stale = append(rep.Stale, stale...)
		fresh, err := en.Replay(e.ctx, mergequeue.Name)
		if err != nil {
			return nil, err
		}
		rep.Invariants = append(rep.Invariants, mergequeue.CheckInvariants(fresh.Get(mergequeue.Name).(*mergequeue.State))...)
	}
	rep.OK = len(rep.Problems) == 0 && len(rep.Differences) == 0 && len(rep.Invariants) == 0
	return rep, nil
}

func brokenInvariants(rep *verifyReport) string {
	if len(rep.Invariants) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d broken merge queue invariants", len(rep.Invariants))
}
