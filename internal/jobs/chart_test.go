package jobs_test

import (
	"cmp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spoolhq/spool/internal/jobs"
)

func TestRenderChart(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.submit(utc(10, 14, 20), spec{id: "job-a", project: "film", slots: 2})
	l.done(utc(10, 14, 30), "job-a", "w", 105*time.Minute)
	l.submit(utc(10, 16, 50), spec{id: "job-b", owner: "bob", tier: jobs.Urgent})
	l.start(utc(10, 17, 0), "job-b", "w")
	l.submit(utc(10, 16, 55), spec{id: "job-c", owner: "cy", tier: jobs.Background})
	p := basePolicy()
	p.Zone = zone(t, "America/New_York")
	st := l.s.Stats(p, utc(10, 6, 0), utc(10, 17, 30))
	for _, tc := range []struct {
		name  string
		st    jobs.Stats
		width int
		has   []string
	}{{
		name: "a day", st: st, width: 80,
		has: []string{"Jobs 2026-03-10 02:00 to 2026-03-10 13:30 (America/New_York)",
			"jobs: 3 submitted, 2 dispatched, 1 completed, 0 failed, 0 cancelled", "slot time: 4.0 slot-h",
			"Average wait by priority\n  urgent  █████", " 10m00s avg, 10m00s max, 1 job\n",
			"Average wait by day\n  2026-03-10 urgent  █", "Queue depth (most 2)\n  ", "Jobs submitted by hour of day\n  00  ",
			"\n  12  ████", "Slot time by user\n  ada  ████████", "3.5 slot-h\n  bob  █", "Slot time by project\n  film  █"},
	}, {
		name: "wide", st: st, width: 140,
		has: []string{"Slot time by hour of day\n  00  "},
	}, {
		name: "nothing", st: jobs.Stats{}, width: 0,
		has: []string{"Average wait by priority\n  (none)\n", "Queue depth (most 0)\n  (none)\n",
			"Jobs submitted by hour of day\n  (none)\n", "Slot time by project\n  (none)\n"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			jobs.RenderChart(&b, tc.st, tc.width)
			out := b.String()
			for _, want := range tc.has {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in\n%s", want, out)
				}
			}
			if strings.ContainsRune(out, '\x1b') {
				t.Error("escape codes in the chart")
			}
			for _, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > cmp.Or(tc.width, 80) {
					t.Errorf("line of %d columns: %q", n, line)
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Log("\n" + out)
			}
		})
	}
}
