package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/proc/proctest"
)

// These tests run the job scheduler as it runs for real: spool job worker
// processes claiming jobs from one repository, each segment a child
// process. Every wait has a deadline; every worker started is stopped.

// jobRepo makes a spool repository for jobs; env is what its commands need.
func jobRepo(t *testing.T, bin string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	env := []string{"SPOOL_ACTOR=ada@example.com", "SPOOL_NOW="}
	cmd := exec.Command("git", "init", "-q", "-b", "main")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	jobSpool(t, bin, dir, env, "init")
	return dir, env
}

// jobSpool runs spool to completion, at most 60 s, and returns its stdout.
func jobSpool(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := jobSpoolErr(bin, dir, env, args...)
	if err != nil {
		t.Fatalf("spool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func jobSpoolErr(bin, dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

// submitJob submits a job and returns its id.
func submitJob(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	var got jobs.Submitted
	out := jobSpool(t, bin, dir, env, append([]string{"--json", "job", "submit"}, args...)...)
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.ID == "" {
		t.Fatalf("submit: %q: %v", out, err)
	}
	return got.ID
}

func showJob(t *testing.T, bin, dir string, env []string, id string) *jobs.Job {
	t.Helper()
	var j jobs.Job
	out := jobSpool(t, bin, dir, env, "--json", "job", "show", id)
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("job show %s: %v\n%s", id, err, out)
	}
	return &j
}

// logEvent is a line of spool --json log.
type logEvent struct {
	Type    string          `json:"type"`
	Subject string          `json:"subject"`
	Actor   string          `json:"actor"`
	At      time.Time       `json:"at"`
	Data    json.RawMessage `json:"data"`
}

// jobEvents returns the log's events of one type, oldest first.
func jobEvents(t *testing.T, bin, dir string, env []string, typ string) []logEvent {
	t.Helper()
	var out []logEvent
	sc := bufio.NewScanner(strings.NewReader(jobSpool(t, bin, dir, env, "--json", "log", "-t", typ)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e logEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	// Soon at first, then less often: a condition often runs a spool
	// process, and a long wait polling every 50 ms costs the suite's CPU.
	pause := 20 * time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(pause)
		pause = min(pause*3/2, 200*time.Millisecond)
	}
}

// waitStatus waits until the job has the status.
func waitStatus(t *testing.T, bin, dir string, env []string, id string, want jobs.Status, timeout time.Duration) *jobs.Job {
	t.Helper()
	var j *jobs.Job
	waitFor(t, timeout, fmt.Sprintf("job %s is not %s", id, want), func() bool {
		j = showJob(t, bin, dir, env, id)
		return j.Status == want
	})
	return j
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// jobWorker is a spool job worker process, the leader of a process group
// of its own (its segments run in groups of theirs, under proc's guard).
type jobWorker struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startWorker starts spool job worker --name name with args; the test's
// cleanup stops it if the test has not.
func startWorker(t *testing.T, bin, dir string, env []string, name string, args ...string) *jobWorker {
	t.Helper()
	return startSpool(t, bin, dir, env, name, append([]string{"job", "worker", "--name", name}, args...)...)
}

// startSpool starts a long-running spool command (a worker, spool watch),
// named name in the test's messages, with its output in a file; the test's
// cleanup stops it if the test has not.
func startSpool(t *testing.T, bin, dir string, env []string, name string, args ...string) *jobWorker {
	t.Helper()
	w := &jobWorker{name: name, log: filepath.Join(t.TempDir(), "worker-"+name+".log"), done: make(chan struct{})}
	f, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w.cmd = spoolCmd(bin, dir, env, args...)
	w.cmd.Stdout, w.cmd.Stderr = f, f
	// Killed with the test binary too (a run stopped partway, whose
	// cleanups never run). The signal is tied to the thread that forked,
	// and Go may end a thread a goroutine leaves locked: this goroutine
	// holds its thread until the worker is reaped, as internal/proc does.
	w.cmd.SysProcAttr = ownGroupDyingWithTest()
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := w.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		w.err = w.cmd.Wait()
		close(w.done)
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(w.log)
			t.Logf("worker %s (pid %d):\n%s", name, w.cmd.Process.Pid, b)
		}
	})
	return w
}

// stop ends the worker as an operator would, SIGTERM, and waits for it;
// after 20 s it kills its group.
func (w *jobWorker) stop(t *testing.T) error {
	t.Helper()
	select {
	case <-w.done:
		return w.err
	default:
	}
	syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Errorf("worker %s did not stop within 20 s of SIGTERM: killed", w.name)
		w.kill(t)
	}
	return w.err
}

// kill sends SIGKILL to the worker's process group and waits for it.
func (w *jobWorker) kill(t *testing.T) {
	t.Helper()
	syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("worker %s (pid %d) survived SIGKILL", w.name, w.cmd.Process.Pid)
	}
}

func hasReason(j *jobs.Job, reason string) bool {
	return slices.ContainsFunc(j.Trail, func(tr jobs.Transition) bool { return tr.Reason == reason })
}

// A running 3-segment job cancelled during segment 1: cancel returns at
// once, segment 1 gets its grace and is then stopped, and segment 0's
// output stays, listed by job show.
func TestJobCancelRunningKeepsDoneSegments(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a worker")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	pids := t.TempDir()
	jobSpool(t, bin, dir, env, "config", "set", "scheduler.cancel_grace", "1s")
	id := submitJob(t, bin, dir, env, "--segments", "3", "--", "sh", "-c",
		`echo "segment $SPOOL_SEGMENT" > "$SPOOL_OUTPUT_DIR/result"; echo $$ > "$0/pid-$SPOOL_SEGMENT"; [ "$SPOOL_SEGMENT" = 0 ] || exec sleep 60`, pids)
	startWorker(t, bin, dir, env, "w1", "--poll", "50ms")

	seg1 := proctest.ReadPID(t, filepath.Join(pids, "pid-1")) // segment 1 runs (exec'd into sleep 60)
	if j := showJob(t, bin, dir, env, id); j.Status != jobs.Running || !j.Segs[0].Done {
		t.Fatalf("segment 1 runs but the job is %s, segments %+v", j.Status, j.Segs)
	}
	asked := time.Now()
	out, err := jobSpoolErr(bin, dir, env, "job", "cancel", id)
	if took := time.Since(asked); err != nil || took > 5*time.Second {
		t.Fatalf("cancel took %s: %v\n%s", took, err, out)
	}
	if !strings.Contains(out, "cancel requested") {
		t.Errorf("cancel of a running job says %q, want it to say the cancel was requested", out)
	}
	j := waitStatus(t, bin, dir, env, id, jobs.Cancelled, 15*time.Second)
	proctest.WaitExited(t, seg1)
	if since := time.Since(asked); since < 900*time.Millisecond {
		t.Errorf("segment 1 was stopped %s after the cancel, before its 1 s grace", since)
	}

	s0 := j.Segs[0]
	if want := ".git/spool/jobs/" + id + "/segment-0"; !s0.Done || s0.OutputDir != want || s0.ExitCode == nil || *s0.ExitCode != 0 {
		t.Errorf("segment 0 = %+v, want done with output_dir %s", s0, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(s0.OutputDir), "result")); err != nil || string(b) != "segment 0\n" {
		t.Errorf("segment 0's output: %q, %v", b, err)
	}
	if j.Segs[1].Done || j.Segs[2].Done || !j.Segs[2].Started.IsZero() {
		t.Errorf("segments 1 and 2 = %+v, %+v: want 1 cut short, 2 never started", j.Segs[1], j.Segs[2])
	}
	if _, err := os.Stat(filepath.Join(pids, "pid-2")); err == nil {
		t.Error("segment 2 ran after the cancel")
	}
	if text := jobSpool(t, bin, dir, env, "job", "show", id); !strings.Contains(text, s0.OutputDir) {
		t.Errorf("job show does not list segment 0's output:\n%s", text)
	}
}

// A worker killed with kill -9 in the middle of segment 1 of 3: the
// segment's process dies with it (proc's guard), and the job resumes at
// segment 1, not 0, at once, its lease long: on another worker of this
// machine, whose claim sees the recorded process of the first gone, or on
// a worker started again with the same name, which gives back what its
// name held.
func TestJobKilledWorkerResumesAtSegment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs workers")
	}
	bin := spoolBinary(t)
	for _, tc := range []struct {
		name, lease, second, reason string
		within                      time.Duration // from the restart to the job complete
	}{
		// The lease is long: only the dead worker's recorded process, or the
		// restart's release, can give the job back in time.
		{name: "another worker at once", lease: "10m", second: "b", reason: jobs.ReasonWorkerGone, within: 20 * time.Second},
		{name: "same name at once", lease: "10m", second: "a", reason: jobs.ReasonWorkerGone, within: 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, env := jobRepo(t, bin)
			scratch := t.TempDir()
			runs := filepath.Join(scratch, "runs")
			jobSpool(t, bin, dir, env, "config", "set", "scheduler.lease", tc.lease)
			// RUNNER is the worker's environment, which its segments inherit.
			id := submitJob(t, bin, dir, env, "--segments", "3", "--", "sh", "-c",
				`echo "$SPOOL_SEGMENT $RUNNER" >> "$0/runs"; echo $$ > "$0/pid-$SPOOL_SEGMENT-$RUNNER"
				if [ "$SPOOL_SEGMENT" = 1 ] && [ "$RUNNER" = first ]; then exec sleep 60; fi; sleep 0.1`, scratch)
			a := startWorker(t, bin, dir, append(env, "RUNNER=first"), "a", "--poll", "50ms")
			child := proctest.ReadPID(t, filepath.Join(scratch, "pid-1-first"))
			a.kill(t)
			proctest.WaitExited(t, child) // the guard saw its parent die
			if j := showJob(t, bin, dir, env, id); j.Status != jobs.Running || j.Worker != "a" {
				t.Fatalf("after kill -9 the job is %s on %q, want still running on a until recovered", j.Status, j.Worker)
			}

			restarted := time.Now()
			startWorker(t, bin, dir, append(env, "RUNNER=second"), tc.second, "--poll", "50ms")
			j := waitStatus(t, bin, dir, env, id, jobs.Complete, tc.within)
			t.Logf("complete %s after the second worker started", time.Since(restarted).Round(time.Millisecond))

			if got, want := lines(runs), []string{"0 first", "1 first", "1 second", "2 second"}; !slices.Equal(got, want) {
				t.Errorf("segments ran %q, want %q", got, want)
			}
			if j.Segs[0].Worker != "a" || j.Segs[1].Worker != tc.second || j.Segs[2].Worker != tc.second {
				t.Errorf("segments' workers: %s %s %s", j.Segs[0].Worker, j.Segs[1].Worker, j.Segs[2].Worker)
			}
			if !hasReason(j, tc.reason) || j.Attempts != 2 {
				t.Errorf("trail %+v, attempts %d: want a requeue for %s and 2 attempts", j.Trail, j.Attempts, tc.reason)
			}
		})
	}
}

// A worker stopped while a segment finishes: the segment exits 0 on the
// stop's SIGTERM (as one that ended a moment before the signal would), so
// it has finished and is recorded so; the job goes back at the next
// segment, which the stopping worker does not start, and nothing runs twice.
func TestJobWorkerStoppedAsASegmentEndsKeepsIt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs workers")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	scratch := t.TempDir()
	id := submitJob(t, bin, dir, env, "--segments", "2", "--", "sh", "-c",
		`if [ "$RUNNER" = first ]; then
			trap 'echo "$SPOOL_SEGMENT $RUNNER" >> "$0/runs"; exit 0' TERM
			echo $$ > "$0/pid"
			while :; do sleep 0.05; done
		fi
		echo "$SPOOL_SEGMENT $RUNNER" >> "$0/runs"`, scratch)
	w := startWorker(t, bin, dir, append(env, "RUNNER=first"), "a", "--poll", "50ms")
	proctest.ReadPID(t, filepath.Join(scratch, "pid"))
	if err := w.stop(t); err != nil {
		t.Fatalf("worker a: %v", err)
	}
	j := showJob(t, bin, dir, env, id)
	if j.Status != jobs.Queued || !j.Segs[0].Done || j.Segs[0].ExitCode == nil || *j.Segs[0].ExitCode != 0 || j.Segs[1].Done {
		t.Fatalf("after the stop the job is %s, segments %+v: want queued, segment 0 done with exit 0, segment 1 not", j.Status, j.Segs)
	}
	// The stopping worker did not start segment 1: it makes a segment's
	// output directory before it runs it.
	if _, err := os.Stat(filepath.Join(dir, ".git", "spool", "jobs", id, "segment-1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("segment 1's output directory after the stop: %v, want none", err)
	}
	jobSpool(t, bin, dir, append(env, "RUNNER=second"), "job", "worker", "--once", "--name", "b", "--poll", "50ms")
	if got, want := lines(filepath.Join(scratch, "runs")), []string{"0 first", "1 second"}; !slices.Equal(got, want) {
		t.Errorf("segments ran %q, want %q", got, want)
	}
	if j := showJob(t, bin, dir, env, id); j.Status != jobs.Complete || j.Segs[0].Worker != "a" || j.Segs[1].Worker != "b" {
		t.Errorf("the job is %s, segments %+v: want complete, segment 0 on a and 1 on b", j.Status, j.Segs)
	}
}

// The log locked for longer than lock.timeout while a segment ends (on a
// loaded machine, other commands may hold it that long): the worker
// neither exits nor drops the job, whose slot it would hold until the
// lease ran out; it records the segment's end once the lock is free, and
// the job goes on.
func TestJobWorkerOutlastsABusyLog(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a worker")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	scratch := t.TempDir()
	jobSpool(t, bin, dir, env, "config", "set", "lock.timeout", "200ms")
	jobSpool(t, bin, dir, env, "config", "set", "scheduler.lease", "10m")
	// Segment 0 waits (at most 30 s) for the test to say go.
	id := submitJob(t, bin, dir, env, "--segments", "2", "--", "sh", "-c",
		`echo "$SPOOL_SEGMENT" >> "$0/runs"; [ "$SPOOL_SEGMENT" = 1 ] && exit 0; echo $$ > "$0/pid"
		i=0; while [ $i -lt 600 ]; do [ -e "$0/go" ] && exit 0; sleep 0.05; i=$((i+1)); done; exit 1`, scratch)
	w := startWorker(t, bin, dir, env, "w", "--poll", "50ms")
	seg0 := proctest.ReadPID(t, filepath.Join(scratch, "pid"))

	lock := flock.New(filepath.Join(dir, ".git", "spool", "lock"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 5*time.Millisecond); !ok {
		t.Fatalf("cannot take the log's lock: %v", err)
	}
	defer lock.Unlock()
	if err := os.WriteFile(filepath.Join(scratch, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	proctest.WaitExited(t, seg0)
	time.Sleep(1500 * time.Millisecond) // the segment's end and the claims time out, several times
	lock.Unlock()
	select {
	case <-w.done:
		t.Fatalf("the worker exited while the log was locked: %v", w.err)
	default:
	}
	j := waitStatus(t, bin, dir, env, id, jobs.Complete, 15*time.Second)
	if got := lines(filepath.Join(scratch, "runs")); !slices.Equal(got, []string{"0", "1"}) || j.Attempts != 1 {
		t.Errorf("segments ran %q in %d attempts, want 0 and 1 in one", got, j.Attempts)
	}
	if err := w.stop(t); err != nil {
		t.Errorf("worker: %v", err)
	}
}

// Four workers and 80 jobs of two segments: each segment runs exactly
// once, as claims and segment ends are decided under the log's lock.
func jobFourWorkersRunEachSegmentOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 160 segments on 4 workers")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	const n, workers = 80, 4
	shared := filepath.Join(t.TempDir(), "segments")

	start := time.Now()
	ids := make([]string, n)
	var wg sync.WaitGroup
	for s := range workers { // four submitters
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < n; i += workers {
				out, err := jobSpoolErr(bin, dir, env, "--json", "job", "submit", "--segments", "2", "--",
					"sh", "-c", `echo "$SPOOL_JOB_ID $SPOOL_SEGMENT" >> "$0"`, shared)
				var got jobs.Submitted
				if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.ID == "" {
					t.Errorf("submit %d: %v\n%s", i, err, out)
					return
				}
				ids[i] = got.ID
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d submits (4 at a time): %s", n, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	var ws []*jobWorker
	for i := range workers {
		ws = append(ws, startWorker(t, bin, dir, env, fmt.Sprint("w", i), "--poll", "50ms", "--slots", "1"))
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(lines(shared)) < 2*n || len(jobEvents(t, bin, dir, env, jobs.TypeFinished)) < n {
		if time.Now().After(deadline) {
			done := map[string]int{}
			for _, l := range lines(shared) {
				done[strings.Fields(l)[0]]++
			}
			var stuck []string
			for _, id := range ids {
				if done[id] < 2 && len(stuck) < 10 {
					j := showJob(t, bin, dir, env, id)
					stuck = append(stuck, fmt.Sprintf("%s %s on %q (segments run %d), trail %+v", id, j.Status, j.Worker, done[id], j.Trail))
				}
			}
			t.Fatalf("after 90 s, %d of %d segments ran; unfinished jobs:\n%s", len(lines(shared)), 2*n, strings.Join(stuck, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d segments on %d workers: %s", 2*n, workers, time.Since(start).Round(time.Millisecond))
	stopWorkers(t, ws)
	if ran := segmentsRanOnce(t, shared, ids); len(ran) > 0 {
		t.Errorf("segments of no job ran: %v", ran)
	}
	finished := map[string]bool{}
	for _, e := range jobEvents(t, bin, dir, env, jobs.TypeFinished) {
		var d jobs.FinishedData
		json.Unmarshal(e.Data, &d)
		if d.Status != jobs.Complete || finished[e.Subject] {
			t.Errorf("job.finished %s %s (seen before: %v)", e.Subject, e.Data, finished[e.Subject])
		}
		finished[e.Subject] = true
	}
	if len(finished) != n {
		t.Errorf("%d jobs finished, want %d", len(finished), n)
	}
	if got := len(jobEvents(t, bin, dir, env, jobs.TypeSegmentStarted)); got != 2*n {
		t.Errorf("%d job.segment_started events, want %d (no segment started twice)", got, 2*n)
	}
	if out, err := jobSpoolErr(bin, dir, env, "verify"); err != nil {
		t.Errorf("verify: %v\n%s", err, out)
	}
}

// A recurring job every 2 s with two workers ticking: each occurrence is
// submitted once (its idempotency key) and runs once.
func jobRecurringTwoWorkersOneSubmissionPerOccurrence(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two workers for 7 s")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	ran := filepath.Join(t.TempDir(), "ran")
	var sub jobs.Submitted
	out := jobSpool(t, bin, dir, env, "--json", "job", "submit", "--every", "@every 2s", "--", "sh", "-c", `echo $SPOOL_JOB_ID >> "$0"`, ran)
	if err := json.Unmarshal([]byte(out), &sub); err != nil || sub.Schedule == "" {
		t.Fatalf("submit --every: %v\n%s", err, out)
	}
	w1 := startWorker(t, bin, dir, env, "w1", "--poll", "100ms")
	w2 := startWorker(t, bin, dir, env, "w2", "--poll", "100ms")
	time.Sleep(7 * time.Second)
	for _, w := range []*jobWorker{w1, w2} {
		if err := w.stop(t); err != nil {
			t.Errorf("worker %s: %v", w.name, err)
		}
	}
	// No more occurrences; a last worker runs what the two left queued.
	jobSpool(t, bin, dir, env, "job", "schedule", "rm", sub.Schedule)
	jobSpool(t, bin, dir, env, "job", "worker", "--once", "--name", "drain", "--poll", "50ms")

	occurrences := map[time.Time]string{}
	var submitted []string
	for _, e := range jobEvents(t, bin, dir, env, jobs.TypeSubmitted) {
		var d jobs.SubmittedData
		json.Unmarshal(e.Data, &d)
		if d.Schedule != sub.Schedule {
			continue
		}
		if prev, dup := occurrences[d.Occurrence]; dup {
			t.Errorf("occurrence %s submitted twice: %s and %s", d.Occurrence, prev, e.Subject)
		}
		if slices.Contains(submitted, e.Subject) {
			t.Errorf("two occurrences submitted as one job id %s", e.Subject)
		}
		occurrences[d.Occurrence] = e.Subject
		submitted = append(submitted, e.Subject)
	}
	t.Logf("%d occurrences submitted: %v", len(submitted), submitted)
	if len(submitted) < 2 || len(submitted) > 4 {
		t.Errorf("%d occurrences in 7 s of a schedule every 2 s", len(submitted))
	}
	got := lines(ran)
	slices.Sort(got)
	want := slices.Clone(submitted)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("jobs that ran %v, want each submitted one once: %v", got, want)
	}
	for _, id := range submitted {
		if j := showJob(t, bin, dir, env, id); j.Status != jobs.Complete {
			t.Errorf("%s is %s", id, j.Status)
		}
	}
}

// Two users, one slot: ada submits 10 jobs, then bob 10; fair share gives
// bob at least half of the first ten dispatches, though ada's all came
// first.
func TestJobFairShareTwoUsersOneSlot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs 20 jobs on a worker")
	}
	bin := spoolBinary(t)
	dir, env := jobRepo(t, bin)
	owner := map[string]string{}
	for _, user := range []string{"ada", "bob"} {
		for range 10 {
			owner[submitJob(t, bin, dir, append(env, "SPOOL_ACTOR="+user), "--", "sleep", "0.2")] = user
		}
	}
	start := time.Now()
	startWorker(t, bin, dir, env, "w", "--poll", "50ms", "--slots", "1")
	var order []string
	waitFor(t, 60*time.Second, "the 20 jobs did not all finish", func() bool {
		return len(jobEvents(t, bin, dir, env, jobs.TypeFinished)) == 20
	})
	for _, e := range jobEvents(t, bin, dir, env, jobs.TypeDispatched) {
		order = append(order, owner[e.Subject])
	}
	t.Logf("20 jobs in %s, dispatched to %v", time.Since(start).Round(time.Millisecond), order)
	if len(order) != 20 {
		t.Fatalf("%d dispatches, want 20 (one per job)", len(order))
	}
	if bob := strings.Count(strings.Join(order[:10], " "), "bob"); bob < 5 {
		t.Errorf("bob had %d of the first 10 dispatches, want at least half: %v", bob, order)
	}
}

// stopWorkers stops every worker, reporting one that did not end cleanly.
func stopWorkers(t *testing.T, ws []*jobWorker) {
	t.Helper()
	for _, w := range ws {
		if err := w.stop(t); err != nil {
			t.Errorf("worker %s: %v", w.name, err)
		}
	}
}

// segmentsRanOnce checks, from the lines the segments wrote to shared,
// that both segments of every job in ids ran exactly once, and returns the
// lines of no such segment, with their counts.
func segmentsRanOnce(t *testing.T, shared string, ids []string) map[string]int {
	t.Helper()
	ran := map[string]int{}
	for _, l := range lines(shared) {
		ran[l]++
	}
	for _, id := range ids {
		for seg := range 2 {
			k := fmt.Sprintf("%s %d", id, seg)
			if ran[k] != 1 {
				t.Errorf("segment %s ran %d times", k, ran[k])
			}
			delete(ran, k)
		}
	}
	return ran
}
