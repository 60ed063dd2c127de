package eventlog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A writer's times never go back, whatever the clock says
// (a stepped clock, SPOOL_NOW set back): an event's time is the later of
// the caller's and the writer's last; the append is never refused.
func TestAppendHoldsAWritersTimes(t *testing.T) {
	l := newTestLog(t)
	nov := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	appendAt := func(at, want time.Time) {
		t.Helper()
		evs, err := l.Append(ctx, at, "ada", []Draft{{Type: "test.appended", Subject: "x"}, {Type: "test.appended", Subject: "y"}}, AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if !e.At.Equal(want) {
				t.Fatalf("appended at %s: event dated %s, want %s", at, e.At, want)
			}
		}
	}
	appendAt(nov, nov)
	appendAt(nov.Add(-5*time.Minute), nov) // a clock stepped back: held at the last time
	appendAt(nov.Add(time.Hour), nov.Add(time.Hour))
	appendAt(nov.Add(time.Hour-MaxClockStep), nov.Add(time.Hour))
	// a new session (another command) reads the last time from the file
	s, err := l.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Append(nov.Add(time.Hour-time.Minute), "ada", []Draft{{Type: "test.appended"}}, AppendOptions{})
	s.Close()
	if err != nil || !evs[0].At.Equal(nov.Add(time.Hour)) {
		t.Fatalf("new session: %v, %v", evs, err)
	}
	if check, err := l.Check(); err != nil || len(check.Problems) > 0 {
		t.Fatalf("check: %v %v", check.Problems, err)
	}
	if back, err := l.ClockBackwards(); err != nil || len(back) != 0 || len(l.warnings()) != 0 {
		t.Fatalf("backwards: %v %v %q", back, err, l.warnings())
	}
	// Further back than a clock steps: the last event was dated ahead (a
	// SPOOL_NOW set in the future once). Holding every later event there
	// would date them all in the future: the event keeps its own time, says
	// so, and verify reports the file.
	mar := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	appendAt(mar, mar)
	if w := l.warnings(); len(w) != 1 || !strings.Contains(w[0], "after now: the clock ran ahead or SPOOL_NOW was set ahead") {
		t.Fatalf("warnings %q", w)
	}
	if back, err := l.ClockBackwards(); err != nil || len(back) != 1 {
		t.Fatalf("backwards: %v %v", back, err)
	}
}

// verify's report of a file whose times go back (written before appends
// held them): each writer once, with the first such event and a count.
func TestClockBackwards(t *testing.T) {
	dir := t.TempDir()
	line := func(at string) string {
		return `{"v":1,"id":"x","writer":"w","seq":1,"lc":1,"at":"` + at + `","actor":"a","type":"t.x","subject":"s","data":{"at":"1999-01-01T00:00:00Z"}}` + "\n"
	}
	write := func(name string, ats ...string) {
		var b strings.Builder
		for _, at := range ats {
			b.WriteString(line(at))
		}
		if err := os.WriteFile(filepath.Join(dir, name+Ext), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("aaaa", "2026-11-02T10:00:00Z", "2026-03-01T10:00:00Z", "2026-11-03T10:00:00Z", "2026-11-02T11:00:00Z")
	write("bbbb", "2026-03-01T10:00:00Z", "2026-03-01T10:00:00Z", "2026-11-02T10:00:00.5Z")
	l := Open(Options{Dir: dir, PrivateDir: t.TempDir(), LockTimeout: time.Second})
	back, err := l.ClockBackwards()
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 {
		t.Fatalf("got %+v, want writer aaaa only", back)
	}
	b := back[0]
	if b.Writer != "aaaa" || b.Count != 2 || b.Line != 2 || !b.At.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) ||
		!b.After.Equal(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("got %+v", b)
	}
}
