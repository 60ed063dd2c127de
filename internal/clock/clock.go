// Package clock reads the time once per command, at the edge.
package clock

import (
	"fmt"
	"os"
	"time"
)

// Now is the current time, or SPOOL_NOW (RFC 3339) when set so tests and
// demos are reproducible.
func Now() (time.Time, error) {
	s := os.Getenv("SPOOL_NOW")
	if s == "" {
		return time.Now().UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("SPOOL_NOW=%q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", s)
	}
	return t.UTC(), nil
}
