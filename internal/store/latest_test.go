package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

// Latest answers as a read of the whole log: one subject's events through
// the subject index and the search past it, the log's end, or all of it,
// with the state saved part of the way and the index written part of the
// way.
func TestLatestAsTheWholeLog(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, newRepo(t))
	batch := func(from, to int) {
		for i := from; i < to; i++ {
			write(t, s, eventlog.Draft{Type: fmt.Sprintf("x.%c", 'a'+i%3), Subject: fmt.Sprintf("s%d", i%5)})
		}
	}
	check := func(stage string) {
		t.Helper()
		for _, subject := range []string{"", "s0", "s3", "s9"} {
			for _, typ := range []string{"", "x.b"} {
				match := func(e *eventlog.Event) bool {
					return (subject == "" || e.Subject == subject) && (typ == "" || e.Type == typ)
				}
				all, err := eventlog.Latest(ctx, s.Log, 0, match)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{0, 1, 7, 1000} {
					want := all
					if n > 0 && len(want) > n {
						want = want[len(want)-n:]
					}
					got, err := s.Latest(ctx, subject, n, match)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.EqualFunc(got, want, func(a, b *eventlog.Event) bool { return a.ID == b.ID }) {
						t.Fatalf("%s: subject %q, type %q, n %d: %d events, want %d", stage, subject, typ, n, len(got), len(want))
					}
				}
			}
		}
	}
	batch(0, 60)
	check("unsaved")
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	batch(60, 90)
	check("saved, then more")
	s.Log.IndexSubjects(ctx, s.SubjectIndex(), s.Engine.KnownStarts(), 0)
	batch(90, 120)
	check("indexed, then more")
}
