package service

import (
	"path/filepath"
	"testing"
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
