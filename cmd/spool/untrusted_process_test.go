package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/store"
)

// forgeEvents appends drafts to the log of the repository at dir as they
// are, past every decider's check: what anyone who can push can write
// (spool append refuses spool's own namespaces).
func forgeEvents(t *testing.T, dir string, drafts ...eventlog.Draft) {
	t.Helper()
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Log.Append(context.Background(), time.Now().UTC(), "mallory@example.com", drafts, eventlog.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A forged job whose id climbs out of .git/spool/jobs, and one that asks
// for a billion segments: the fold skips both, so spool job worker neither
// empties nor writes a directory outside, every job command still works
// (no allocation from the count), and the real job runs.
func TestJobWorkerIgnoresForgedJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a worker")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	victim := filepath.Join(dir, "victim")
	os.MkdirAll(filepath.Join(victim, "segment-0"), 0o755)
	os.WriteFile(filepath.Join(victim, "segment-0", "keep.txt"), []byte("precious\n"), 0o644)
	forged := jobs.SubmittedData{Name: "evil", Tier: jobs.Normal, Slots: 1, Segments: 1, Status: jobs.Queued,
		Argv: []string{"sh", "-c", `echo pwned > "$SPOOL_OUTPUT_DIR/pwned"`}}
	huge := forged
	huge.Segments = 1_000_000_000
	forgeEvents(t, dir,
		eventlog.Draft{Type: jobs.TypeSubmitted, Subject: "job-x/../../../../victim", Data: forged},
		eventlog.Draft{Type: jobs.TypeSubmitted, Subject: "job-huge", Data: huge})
	id := submitJob(t, bin, dir, env, "--", "sh", "-c", `echo ok > "$SPOOL_OUTPUT_DIR/result"`)
	out := jobSpool(t, bin, dir, env, "--json", "job", "worker", "--once", "--name", "w1")
	if !strings.Contains(out, id) || strings.Contains(out, "victim") || strings.Contains(out, "job-huge") {
		t.Fatalf("the worker ran: %s", out)
	}
	if b, err := os.ReadFile(filepath.Join(victim, "segment-0", "keep.txt")); err != nil || string(b) != "precious\n" {
		t.Fatalf("the directory outside was emptied: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(victim, "segment-0", "pwned")); err == nil {
		t.Fatal("the forged job ran")
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "spool", "jobs", id, "segment-0", "result")); err != nil || string(b) != "ok\n" {
		t.Fatalf("the real job's output: %q %v", b, err)
	}
	if list := jobSpool(t, bin, dir, env, "job", "list", "--all"); strings.Contains(list, "victim") || strings.Contains(list, "job-huge") {
		t.Fatalf("job list shows a forged job:\n%s", list)
	}
	jobSpool(t, bin, dir, env, "verify")
}
