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
	fmt.Fprintf(e.stdout, "%s  %s\n", text(h.ID), entrySummary(h, now))
}

// entrySummary is a history entry at now, without its id: its status,
// attempts, last error, when it is eligible again and what is pending.
func entrySummary(h workqueue.EntryJSON, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  attempts %d", h.Status, h.Attempts)
	if h.LastError != "" {
		fmt.Fprintf(&b, "  last error: %s", text(h.LastError))
	}
	switch {
	case h.NextEligibleAt != nil && h.NextEligibleAt.After(now):
		fmt.Fprintf(&b, "  next eligible at %s", fmtTime(h.NextEligibleAt))
	case h.NextEligibleAt != nil:
		b.WriteString("  eligible again now")
	}
	if len(h.PendingSync) > 0 {
		fmt.Fprintf(&b, "  pending: %s", text(strings.Join(h.PendingSync, ", ")))
	}
	if len(h.SyncFailed) > 0 {
		fmt.Fprintf(&b, "  gave up: %s", text(strings.Join(h.SyncFailed, "; ")))
	}
	if len(h.PendingHooks) > 0 {
		fmt.Fprintf(&b, "  hook pending: %s", text(strings.Join(h.PendingHooks, ", ")))
	}
	return b.String()
}

// printHistory prints an entry, as JSON or as one line.
func printHistory(e *env, h workqueue.EntryJSON, now time.Time) error {
	if e.JSON {
		return writeJSON(e.stdout, h)
	}
	printEntry(e, h, now)
	return nil
}
