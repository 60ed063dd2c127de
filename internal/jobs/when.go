package jobs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

// ParseTime reads --start-after: an RFC 3339 time; "2006-01-02 15:04" or
// "15:04" in the scheduler's zone ("15:04" is its next occurrence); or a
// duration from now such as 90m, 2h or 1d.
func ParseTime(s string, now time.Time, zone *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.ParseInLocation("2006-01-02 15:04", s, zone); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.ParseInLocation("15:04", s, zone); err == nil {
		l := now.In(zone)
		at := time.Date(l.Year(), l.Month(), l.Day(), t.Hour(), t.Minute(), 0, 0, zone)
		if !at.After(now) {
			at = time.Date(l.Year(), l.Month(), l.Day()+1, t.Hour(), t.Minute(), 0, 0, zone)
		}
		return at.UTC(), nil
	}
	if d, err := ParseDuration(strings.TrimPrefix(s, "+")); err == nil && d >= 0 {
		return now.Add(d).UTC(), nil
	}
	return time.Time{}, fault.New(CodeInvalidTime, nil,
		fmt.Sprintf("%q is not a time: use RFC 3339 (2026-11-24T03:00:00Z), \"2026-11-24 03:00\" or \"03:00\" in %s, or a duration such as 2h", s, zone), "time", s)
}

// ParseSince is the start of a window (job stats --since): an RFC 3339
// time, or a duration back from now (7d, 24h).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return time.Time{}, err
	}
	return now.Add(-d), nil
}

// ParseDuration is time.ParseDuration with days: 1d, 1d12h, 7d.
func ParseDuration(s string) (time.Duration, error) {
	orig := s
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			return 0, fault.New(CodeInvalidTime, err, fmt.Sprintf("%q is not a duration such as 90m, 8h or 7d", orig), "duration", orig)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fault.New(CodeInvalidTime, err, fmt.Sprintf("%q is not a duration such as 90m, 8h or 7d", orig), "duration", orig)
	}
	return days + d, nil
}
