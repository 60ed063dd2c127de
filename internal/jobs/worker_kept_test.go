package jobs_test

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

// A job that starts its first segment keeps its worker and lease: the
// worker's heartbeats and segment ends are its own, and its slots are busy.
func TestRunningKeepsItsWorker(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.submit(noon, spec{id: "job-a", slots: 2})
	l.start(noon, "job-a", "w")
	j := l.s.Jobs["job-a"]
	if j.Worker != "w" || !j.LeaseUntil.Equal(noon.Add(time.Hour)) || l.s.Busy("w") != 2 {
		t.Fatalf("running job: worker %q, lease %v, busy %d", j.Worker, j.LeaseUntil, l.s.Busy("w"))
	}
	if _, _, err := jobs.Heartbeat(l.s, basePolicy(), "job-a", "w", noon.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if drafts := jobs.Tick(l.s, basePolicy(), noon.Add(time.Minute), nil); len(drafts) != 0 {
		t.Fatalf("tick within the lease: %v", drafts)
	}
}
