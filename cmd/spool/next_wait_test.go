package main

import (
	"testing"
	"time"
)

// next --wait sleeps until the first of: something may become claimable,
// the source's poll interval, the timeout; with none of them, until the
// log changes.
func TestRetryIn(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		idleAt time.Time
		poll   time.Duration
		left   time.Duration
		want   time.Duration
		ok     bool
	}{
		{"only the log", time.Time{}, 0, 0, 0, false},
		{"a backoff ends", now.Add(time.Minute), 0, 0, time.Minute, true},
		{"a backoff due at once", now, 0, 0, minRetry, true},
		{"the timeout first", now.Add(time.Minute), 0, time.Second, time.Second, true},
		{"the source's interval first", now.Add(time.Minute), 10 * time.Second, time.Hour, 10 * time.Second, true},
		{"the backoff first", now.Add(3 * time.Second), 10 * time.Second, time.Hour, 3 * time.Second, true},
		{"the timeout alone", time.Time{}, 0, 5 * time.Second, 5 * time.Second, true},
	} {
		if got, ok := retryIn(now, tc.idleAt, tc.poll, tc.left); got != tc.want || ok != tc.ok {
			t.Errorf("%s: retryIn = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
