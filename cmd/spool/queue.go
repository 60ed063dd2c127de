package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/workqueue"
)

// Printing shared by the work queue's commands.

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printEntry is the one-line human summary of a history entry at now.
func printEntry(e *env, h workqueue.EntryJSON, now time.Time) {
	fmt.Fprintf(e.stdout, "%s  %s  attempts %d", text(h.ID), h.Status, h.Attempts)
	if h.LastError != "" {
		fmt.Fprintf(e.stdout, "  last error: %s", text(h.LastError))
	}
	switch {
	case h.NextEligibleAt != nil && h.NextEligibleAt.After(now):
		fmt.Fprintf(e.stdout, "  next eligible at %s", fmtTime(h.NextEligibleAt))
	case h.NextEligibleAt != nil:
		fmt.Fprint(e.stdout, "  eligible again now")
	}
	if len(h.PendingSync) > 0 {
		fmt.Fprintf(e.stdout, "  pending: %s", text(strings.Join(h.PendingSync, ", ")))
	}
	if len(h.SyncFailed) > 0 {
		fmt.Fprintf(e.stdout, "  gave up: %s", text(strings.Join(h.SyncFailed, "; ")))
	}
	if len(h.PendingHooks) > 0 {
		fmt.Fprintf(e.stdout, "  hook pending: %s", text(strings.Join(h.PendingHooks, ", ")))
	}
	fmt.Fprintln(e.stdout)
}

// printHistory prints an entry, as JSON or as one line.
func printHistory(e *env, h workqueue.EntryJSON, now time.Time) error {
	if e.JSON {
		return writeJSON(e.stdout, h)
	}
	printEntry(e, h, now)
	return nil
}
