package service

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/jobs"
)

// The worker empties a segment's output directory before it runs: only a
// job id spool makes names one, always under the jobs directory.
func TestOutputDirIsConfined(t *testing.T) {
	jobs := filepath.Join(t.TempDir(), "jobs")
	if dir, err := OutputDir(jobs, "job-4mx5", 2); err != nil || dir != filepath.Join(jobs, "job-4mx5", "segment-2") {
		t.Fatalf("%s %v", dir, err)
	}
	for _, id := range []string{"job-x/../../victim", "..", "", "job-a/b", "/etc", "job-4mx5\x00"} {
		if dir, err := OutputDir(jobs, id, 0); err == nil {
			t.Errorf("%q: %s", id, dir)
		}
	}
	if _, err := OutputDir(jobs, "job-4mx5", -1); err == nil {
		t.Error("segment -1")
	}
}

// A job cancellation completes within 5 seconds. With the
// defaults (scheduler.cancel_grace, the worker's poll and its kill grace)
// the worst case is within it. Arithmetic on the defaults, not a timing.
func TestDefaultCancelWithinFiveSeconds(t *testing.T) {
	cfg, err := config.Load(filepath.Join(t.TempDir(), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	grace := jobs.PolicyFrom(cfg).CancelGrace
	if grace != jobs.DefaultCancelGrace || grace <= 0 {
		t.Fatalf("a new configuration's cancel_grace is %s", grace)
	}
	if b := CancelBudget(grace, DefaultPoll); b > 5*time.Second {
		t.Fatalf("default cancel_grace %s + poll %s + kill grace %s = %s, over the 5 s a cancel may take", grace, DefaultPoll, DefaultKillGrace, b)
	}
}
