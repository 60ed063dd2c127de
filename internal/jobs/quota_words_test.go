package jobs

import (
	"strings"
	"testing"
	"time"
)

// The quota warning at submit says usage and limit in one human unit of
// slot time, and never a percentage past 100: at or over the limit it says
// "over quota" and until when.
func TestQuotaWarningWords(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		daily time.Duration
		used  time.Duration // one run, ended at noon
		want  string        // "" for no warning
	}{
		{"under 80%", 10 * time.Second, 7 * time.Second, ""},
		{"seconds", 5 * time.Second, 4 * time.Second, "user ada has used 80% of its daily quota: 4 slot-s of 5 slot-s"},
		{"at the limit", 5 * time.Second, 5 * time.Second, "user ada is over its daily quota: 5 slot-s of 5 slot-s used; its new jobs wait until 2026-03-11T00:00:00Z"},
		{"past the limit", 5 * time.Second, 5100 * time.Millisecond, "user ada is over its daily quota: 5.1 slot-s of 5 slot-s used; its new jobs wait until 2026-03-11T00:00:00Z"},
		{"minutes", time.Hour, 50 * time.Minute, "user ada has used 83% of its daily quota: 50 slot-min of 60 slot-min"},
		{"hours", 10 * time.Hour, 8*time.Hour + 12*time.Minute, "user ada has used 82% of its daily quota: 8.2 slot-h of 10 slot-h"},
		{"never rounds up to 100%", time.Hour, 59*time.Minute + 50*time.Second, "user ada has used 99% of its daily quota: 59.8 slot-min of 60 slot-min"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState()
			s.Quotas["user/ada"] = &Quota{Scope: "user", Name: "ada", Daily: tc.daily}
			noon := day.Add(12 * time.Hour)
			s.Jobs["job-a"] = &Job{ID: "job-a", Owner: "ada", Slots: 1, Status: Complete, Runs: []Run{{Start: noon.Add(-tc.used), End: noon}}}
			p := Policy{Zone: time.UTC}
			got := strings.Join(s.quotas(p, noon).warnings("ada", ""), "\n")
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
