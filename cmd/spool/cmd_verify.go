package main

import (
	"fmt"
	"strings"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
)

// VerifyCmd checks the log and the projections; CI and pre-push run it.
type VerifyCmd struct {
	Verbose bool `short:"v" help:"Also say which projections were behind the log (normal: large ones save lazily)."`
}

func (c *VerifyCmd) Run(e *env) error {
	longRunning() // reads the whole log: keep memory bounded
	st, err := e.open()
	if err != nil {
		return err
	}
	rep, err := st.Verify(e.ctx)
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
			fmt.Fprintln(e.stdout, "invariant:", inv)
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

func brokenInvariants(rep *store.VerifyReport) string {
	if len(rep.Invariants) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d broken invariants", len(rep.Invariants))
}
