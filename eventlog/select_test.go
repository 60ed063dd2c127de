package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseFilter(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since string
		types []string
		want  time.Time
		err   string
	}{
		{"", nil, time.Time{}, ""},
		{"2h", nil, now.Add(-2 * time.Hour), ""},
		{"2026-01-01T00:00:00Z", nil, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ""},
		{"-2h", nil, time.Time{}, `since "-2h" is neither`},
		{"yesterday", nil, time.Time{}, `since "yesterday" is neither`},
		{"", []string{"task.*", "[a-"}, time.Time{}, `type "[a-" is not a valid pattern`},
	} {
		f, err := ParseFilter(c.types, "", "", c.since, now)
		switch {
		case c.err != "" && (err == nil || !errors.Is(err, ErrFilter) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("since %q types %q: %v, want %q", c.since, c.types, err, c.err)
		case c.err == "" && (err != nil || !f.Since.Equal(c.want)):
			t.Errorf("since %q: %v %v, want %v", c.since, f.Since, err, c.want)
		}
	}
}

func TestFilterAndLatest(t *testing.T) {
	l := newTestLog(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, d := range []Draft{{Type: "task.created", Subject: "a"}, {Type: "task.claimed", Subject: "a"}, {Type: "job.submitted", Subject: "j"}, {Type: "task.closed", Subject: "a"}} {
		if _, err := l.Append(context.Background(), at.Add(time.Duration(i)*time.Minute), "ada", []Draft{d}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	types := func(evs []*Event) string {
		var s []string
		for _, e := range evs {
			s = append(s, e.Type)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		f    Filter
		n    int
		want string
	}{
		{Filter{}, 0, "task.created task.claimed job.submitted task.closed"},
		{Filter{Types: []string{"task.*"}}, 2, "task.claimed task.closed"},
		{Filter{Subject: "j"}, 0, "job.submitted"},
		{Filter{Since: at.Add(2 * time.Minute)}, 0, "job.submitted task.closed"},
		{Filter{Actor: "bob"}, 0, ""},
		{Filter{Types: []string{"job.*", "task.created"}}, 5, "task.created job.submitted"},
	} {
		evs, err := Latest(context.Background(), l.Log, c.n, c.f.Match)
		if err != nil || types(evs) != c.want {
			t.Errorf("%+v n=%d: %q %v, want %q", c.f, c.n, types(evs), err, c.want)
		}
	}
}
