package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/store"
)

// Worker is spool job worker: it claims jobs for its slots and runs each
// segment as the job's argv, a child process in a group of its own that
// dies with the worker. Between claims it ticks the clock's decisions
// (scheduled jobs, expired leases, recurring occurrences).
type Worker struct {
	S     *Service
	Name  string
	Slots int
	Once  bool          // return once nothing runs and nothing can be claimed now
	Poll  time.Duration // how often it looks for work and at its jobs' flags
	Logf  func(format string, args ...any)
	// KillGrace is how long a segment has between SIGTERM and SIGKILL.
	KillGrace time.Duration
}

// A worker's defaults. A cancelled running job ends at most
// scheduler.cancel_grace after the cancel, plus a poll (when the worker
// looks at its flags), plus the kill grace (SIGTERM to SIGKILL): with the
// defaults, 2 + 1 + 2 = 5 seconds, the most a cancel may take.
const (
	DefaultPoll      = time.Second
	DefaultKillGrace = proc.DefaultGrace
)

// CancelBudget is the longest a cancelled running job may take to end on a
// worker polling every poll: the grace, a poll, the kill grace.
func CancelBudget(grace, poll time.Duration) time.Duration {
	return grace + poll + DefaultKillGrace
}

// Ran is one job a worker let go of, and how.
type Ran struct {
	Job      string      `json:"id"`
	Status   jobs.Status `json:"status"`
	Segments []int       `json:"segments"` // the segments it ran
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]`) })

// OutputDir is where a segment's outputs go, under jobs (store.JobsDir):
// jobs/<id>/segment-<n>. The id comes from the log, whose fold takes only
// ids spool makes (jobs.ValidJobID); any other is refused here as well,
// since the worker empties the directory before a segment runs.
func OutputDir(jobsDir, id string, segment int) (string, error) {
	if !jobs.ValidJobID(id) || segment < 0 {
		return "", fmt.Errorf("job id %q, segment %d: not a job's output directory", id, segment)
	}
	return filepath.Join(jobsDir, id, "segment-"+strconv.Itoa(segment)), nil
}

// Run works until ctx ends (or, with Once, until it is idle).
// It holds .git/spool/worker-<name>.lock, so one process is each name;
// jobs its name held before (a killed worker) go back to the queue at once.
func (w *Worker) Run(ctx context.Context) ([]Ran, error) {
	if w.Poll <= 0 {
		w.Poll = DefaultPoll
	}
	if w.KillGrace <= 0 {
		w.KillGrace = DefaultKillGrace
	}
	lock := "worker-" + unsafeName().ReplaceAllString(w.Name, "_")
	unlock, ok, err := w.S.Store.Mutex(ctx, lock, 0)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.New(fault.CodeAlreadyRunning, nil,
			fmt.Sprintf("a worker named %s already runs in this clone (%s): give this one another --name", w.Name, w.S.Store.MutexPath(lock)), "worker", w.Name)
	}
	defer unlock()
	if n, err := w.S.Release(ctx, w.Name); err != nil {
		return nil, err
	} else if n > 0 {
		w.logf("gave back %d job(s) an earlier worker named %s held", n, w.Name)
	}

	var (
		mu   sync.Mutex
		ran  []Ran
		wg   sync.WaitGroup
		done = make(chan struct{}, w.Slots+1)
	)
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	running := 0
	stop := func() ([]Ran, error) {
		stopJobs() // segments end (SIGTERM, grace, SIGKILL); their jobs go back
		wg.Wait()
		if _, err := w.S.Release(context.WithoutCancel(ctx), w.Name); err != nil {
			return ran, err
		}
		mu.Lock()
		defer mu.Unlock()
		return ran, nil
	}
	for {
		for ctx.Err() == nil {
			c, err := w.S.ClaimHere(ctx, w.Name, w.Slots)
			if err != nil {
				if stopping(ctx) {
					break
				}
				if errors.Is(err, eventlog.ErrLockTimeout) {
					// A busy log is no reason to stop the jobs running here.
					w.logf("%v; trying again", err)
					break
				}
				r, _ := stop()
				return r, err
			}
			if c == nil {
				break
			}
			running++
			wg.Add(1)
			fault.Go(func() {
				defer wg.Done()
				r := w.runJob(jobCtx, c)
				mu.Lock()
				ran = append(ran, r)
				mu.Unlock()
				done <- struct{}{}
			})
		}
		if ctx.Err() != nil || w.Once && running == 0 {
			return stop()
		}
		select {
		case <-ctx.Done():
			return stop()
		case <-done:
			running--
		case <-time.After(w.Poll):
		}
	}
}

// stopping reports whether the worker is being stopped. A SIGTERM sent to
// the worker's process group reaches the git a claim runs at the same time
// as spool, so the claim can fail a moment before ctx says why: wait that
// moment.
func stopping(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(200 * time.Millisecond):
		return false
	}
}

func (w *Worker) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

// runJob runs a claimed job's segments until it stops at a boundary, is
// cancelled, fails, completes, or the worker stops.
func (w *Worker) runJob(ctx context.Context, c *jobs.Claim) Ran {
	j := c.Job
	out := Ran{Job: j.ID, Status: jobs.Running}
	for seg := c.Segment; seg >= 0; {
		if seg != c.Segment && ctx.Err() != nil {
			out.Status = jobs.Queued // the worker stops: Release gives it back at seg
			return out
		}
		out.Segments = append(out.Segments, seg)
		w.logf("%s: segment %d/%d started", j.ID, seg+1, j.Segments)
		end, how := w.runSegment(ctx, j, seg)
		switch how {
		case stoppedForCancel:
			if err := w.record(ctx, j.ID, func(ctx context.Context) error { return w.S.StoppedForCancel(ctx, j.ID, w.Name) }); err != nil {
				w.logf("%s: %v", j.ID, err)
			}
			out.Status = jobs.Cancelled
			return out
		case lostLease, workerStopping:
			out.Status = jobs.Queued // Release (or the lease's new holder) has it
			return out
		}
		var (
			next  int
			after *jobs.Job
		)
		err := w.record(ctx, j.ID, func(ctx context.Context) (err error) {
			next, after, err = w.S.SegmentDone(ctx, j.ID, w.Name, end)
			return err
		})
		if err != nil {
			w.logf("%s: %v", j.ID, err)
			out.Status = jobs.Queued
			return out
		}
		w.logf("%s: segment %d/%d exited %d; %s", j.ID, seg+1, j.Segments, end.ExitCode, after.Status)
		out.Status, seg = after.Status, next
	}
	return out
}

// record writes what the worker saw happen to a job it holds (a segment's
// end, a cancel carried out), trying again while the write fails for a
// reason other than the job no longer being this worker's (a log locked
// longer than lock.timeout): a record given up leaves the job running on
// this worker, its slots taken, until its lease runs out. It gives up when
// the worker stops (its release then requeues the job) or after a lease.
func (w *Worker) record(ctx context.Context, id string, write func(context.Context) error) error {
	bg := context.WithoutCancel(ctx)
	giveUp := time.Now().Add(w.S.Policy.Lease)
	wait := w.Poll
	for {
		err := write(bg)
		if err == nil || rejected(err) || ctx.Err() != nil || time.Now().After(giveUp) {
			return err
		}
		w.logf("%s: %v; trying again in %s", id, err, wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

type ending int

const (
	exited ending = iota
	stoppedForCancel
	lostLease
	workerStopping
)

// runSegment runs one segment, renewing the lease and watching the job's
// flags while it runs.
func (w *Worker) runSegment(ctx context.Context, j *jobs.Job, seg int) (jobs.SegmentEnd, ending) {
	root := w.S.Store.Repo.Root
	end := jobs.SegmentEnd{Segment: seg}
	dir, err := OutputDir(store.JobsDir(w.S.Store.Repo), j.ID, seg)
	if err != nil {
		w.logf("%s: %v", j.ID, err)
		end.ExitCode = 127
		return end, exited
	}
	end.OutputDir = filepath.ToSlash(mustRel(root, dir))
	// A segment run again (after a crash or a yield) starts from an empty directory.
	_ = os.RemoveAll(dir)
	logFile, err := createLog(dir)
	if err != nil {
		end.ExitCode = 127
		return end, exited
	}
	defer logFile.Close()
	env := append(os.Environ(), "SPOOL_JOB_ID="+j.ID, "SPOOL_SEGMENT="+strconv.Itoa(seg),
		"SPOOL_SEGMENTS="+strconv.Itoa(j.Segments), "SPOOL_OUTPUT_DIR="+dir)
	segCtx, kill := context.WithCancel(ctx)
	defer kill()
	p, err := proc.Start(segCtx, proc.Cmd{Argv: j.Argv, Dir: root, Env: env, Stdout: logFile, Stderr: logFile, Grace: w.KillGrace})
	if err != nil {
		fmt.Fprintf(logFile, "spool: cannot start %q: %v\n", j.Argv[0], err)
		end.ExitCode = 127
		return end, exited
	}
	waited := make(chan error, 1)
	fault.Go(func() { waited <- p.Wait() })
	how := exited
	beat := time.Now()
	tick := time.NewTicker(w.Poll)
	defer tick.Stop()
	for {
		select {
		case err := <-waited:
			end.ExitCode = exitCode(err)
			// A segment that exits 0 has finished, even as the worker stops:
			// it may have ended before the stop's SIGTERM reached it, and
			// running it again would run a finished segment twice.
			if how == exited && ctx.Err() != nil && end.ExitCode != 0 {
				how = workerStopping
			}
			return end, how
		case <-tick.C:
			if how != exited {
				continue // stopping it already
			}
			bg := context.WithoutCancel(ctx)
			var cur *jobs.Job
			if time.Since(beat) >= w.S.Policy.Lease/3 {
				cur, err = w.S.Heartbeat(bg, j.ID, w.Name)
				beat = time.Now()
			} else {
				var st *jobs.State
				if st, err = w.S.Read(bg); err == nil {
					cur, err = st.Job(j.ID)
				}
			}
			switch {
			case rejected(err):
				w.logf("%s: %v; stopping segment %d", j.ID, err, seg)
				how = lostLease
				kill()
			case err != nil:
				w.logf("%s: %v", j.ID, err) // the log unreadable for a moment: go on
			case cur.Worker != w.Name:
				w.logf("%s: now held by %q; stopping segment %d", j.ID, cur.Worker, seg)
				how = lostLease
				kill()
			case cur.CancelRequested && !w.S.now().Before(cur.GraceUntil):
				w.logf("%s: cancelled; stopping segment %d", j.ID, seg)
				how = stoppedForCancel
				kill()
			}
		}
	}
}

// rejected reports a domain error: the job is no longer this worker's.
func rejected(err error) bool {
	f, ok := fault.As(err)
	return ok && f.Kind == fault.Rejected
}

func createLog(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.Create(dir + ".log")
}

func mustRel(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return rel
	}
	return path
}

// exitCode is the segment's exit status: -1 for a signal, 127 when it
// could not run.
func exitCode(err error) int {
	var ee *proc.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return 127
}
