package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/sign"
	"github.com/spoolhq/spool/internal/store"
)

// VerifyCmd checks the log and the projections; CI and pre-push run it.
type VerifyCmd struct {
	Verbose    bool `short:"v" help:"Also say which of the queues' saved states were behind the log (normal: large ones are saved lazily)."`
	Signatures bool `help:"Also check signatures: every event signed by a key .spool/allowed_signers lists for its actor, and every change to allowed_signers or an admins list signed by an admin."`
}

func (c *VerifyCmd) Run(e *env) error {
	foldsWholeLog() // reads the whole log: keep memory bounded
	st, err := e.open()
	if err != nil {
		return err
	}
	rep, err := st.Verify(e.ctx)
	if err != nil {
		return err
	}
	if c.Signatures && len(rep.Problems) == 0 {
		// A log that breaks its rules is reported first: its lines are not
		// the events their signatures were made for.
		if rep.Signatures, err = st.VerifySignatures(e.ctx, nil); err != nil {
			return err
		}
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
		for _, b := range rep.ClockBackwards {
			fmt.Fprintf(e.stdout, "clock: writer %s: %s dated before the event before it (first: %s line %d, %s after %s); spool now holds a writer's times, these stay as written\n",
				b.Writer, count(b.Count, "event"), b.File, b.Line, b.At.Format(time.RFC3339), b.After.Format(time.RFC3339))
		}
		if len(rep.Stale) > 0 && c.Verbose {
			// Normal: commands update only the projections they use.
			fmt.Fprintf(e.stdout, "note: %s behind the log: state compared after catching up in memory; files not compared (spool replay writes them)\n",
				strings.Join(rep.Stale, ", "))
		}
		if rep.Signatures != nil {
			for _, p := range rep.Signatures.Problems {
				fmt.Fprintln(e.stdout, "signature:", text(p.String()))
			}
		}
		if rep.OK {
			skipped := ""
			if len(rep.Stale) > 0 && !c.Verbose && rep.Events > 0 {
				// Said even without -v: "equal" must not hide what was not compared.
				skipped = fmt.Sprintf(" (%s behind the log: files not compared; -v names them)", count(len(rep.Stale), "projection"))
			}
			fmt.Fprintf(e.stdout, "ok: %d events in %d files; projections equal a fresh replay%s\n", rep.Events, rep.Files, skipped)
		}
		if sigs := rep.Signatures; sigs != nil && len(sigs.Problems) == 0 {
			fmt.Fprintln(e.stdout, signaturesOK(sigs))
		}
	}
	if !rep.OK {
		return fault.New(CodeVerifyFailed, nil,
			fmt.Sprintf("verify failed: %d log problems, %d projection differences%s", len(rep.Problems), len(rep.Differences), brokenInvariants(rep)))
	}
	if rep.Signatures != nil {
		return rep.Signatures.Err()
	}
	return nil
}

// signaturesOK is the line verify --signatures ends with when all is well.
func signaturesOK(r *sign.Report) string {
	s := fmt.Sprintf("ok: signatures: %s, each by a key allowed for its actor", count(r.Signed, "signed event"))
	if r.Exempt > 0 {
		s += fmt.Sprintf("; %s from before %s was committed (%.12s)", count(r.Exempt, "event"), sign.AllowedSignersFile, r.Root)
	}
	return s + fmt.Sprintf("; %s to the allowed signers and admins, each signed by an admin", count(r.Commits, "change"))
}

// count is "1 event", "2 events".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func brokenInvariants(rep *store.VerifyReport) string {
	if len(rep.Invariants) == 0 {
		return ""
	}
	return fmt.Sprintf(", %d broken invariants", len(rep.Invariants))
}
