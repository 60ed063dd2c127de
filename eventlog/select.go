package eventlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"time"
)

// Filter selects events as spool log's flags do: types (path.Match
// patterns, any of them), a subject, an actor, and a time from which on.
// The zero Filter takes every event.
type Filter struct {
	Types          []string
	Subject, Actor string
	Since          time.Time
}

// ErrFilter is a filter's value that cannot be used: a type pattern that
// is not one, a since that is neither a time nor a duration.
var ErrFilter = errors.New("invalid filter")

// ParseFilter checks patterns and reads since: an RFC 3339 time, or a
// duration back from now (2h). The error names what is wrong.
func ParseFilter(types []string, subject, actor, since string, now time.Time) (Filter, error) {
	f := Filter{Types: types, Subject: subject, Actor: actor}
	for _, t := range types {
		if _, err := path.Match(t, ""); err != nil {
			return f, fmt.Errorf("%w: type %q is not a valid pattern", ErrFilter, t)
		}
	}
	if since != "" {
		if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
			f.Since = t
		} else if d, err := time.ParseDuration(since); err == nil && d >= 0 {
			f.Since = now.Add(-d)
		} else {
			return f, fmt.Errorf("%w: since %q is neither an RFC 3339 time nor a duration such as 2h", ErrFilter, since)
		}
	}
	return f, nil
}

// Match says whether f takes e.
func (f Filter) Match(e *Event) bool {
	if f.Subject != "" && e.Subject != f.Subject || f.Actor != "" && e.Actor != f.Actor || !f.Since.IsZero() && e.At.Before(f.Since) {
		return false
	}
	if len(f.Types) == 0 {
		return true
	}
	for _, t := range f.Types {
		if ok, _ := path.Match(t, e.Type); ok {
			return true
		}
	}
	return false
}

// Latest reads the whole log and returns the last n events match takes
// (every one with n 0), in replay order.
func Latest(ctx context.Context, l *Log, n int, match func(*Event) bool) ([]*Event, error) {
	r, err := l.Read(nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var ring []*Event
	first := 0
	for i := 1; ; i++ {
		e, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case !match(e):
		case n > 0 && len(ring) == n:
			ring[first] = e
			first = (first + 1) % n
		default:
			ring = append(ring, e)
		}
	}
	return slices.Concat(ring[first:], ring[:first]), nil
}
