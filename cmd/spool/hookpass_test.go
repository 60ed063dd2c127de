package main

import (
	"testing"
	"time"
)

// A hook cut short says what was cut short and the command that finishes
// it: the PRD driver's own command, the others' spool watch --once.
func TestCutShort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ driver, want string }{
		{"prd", "spool: post-commit hook: PRD sync and promotion was cut short after 30s (hooks.timeout); git's work is done and nothing is lost: run spool prd promote to finish it"},
		{"tasks", "spool: post-commit hook: releasing expired task claims was cut short after 30s (hooks.timeout); git's work is done and nothing is lost: run spool watch --once to finish it"},
		{"merge", "spool: post-commit hook: recovering merge entries was cut short after 30s (hooks.timeout); git's work is done and nothing is lost: run spool watch --once to finish it"},
		{"jobs", "spool: post-commit hook: the scheduler's clock was cut short after 30s (hooks.timeout); git's work is done and nothing is lost: run spool watch --once to finish it"},
		{"", "spool: post-commit hook: its pass was cut short after 30s (hooks.timeout); git's work is done and nothing is lost: run spool watch --once to finish it"},
	} {
		if got := cutShort("post-commit", tc.driver, 30*time.Second); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.driver, got, tc.want)
		}
	}
}
