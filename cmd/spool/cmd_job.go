package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spoolhq/spool/internal/clock"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
)

// JobCmd is the job scheduler: jobs in three priority tiers, FIFO within a
// tier, with start times, off-peak hours and quotas.
type JobCmd struct {
	Submit      JobSubmitCmd      `cmd:"" help:"Submit a job: spool job submit [flags] -- PROGRAM [ARGS...]."`
	List        JobListCmd        `cmd:"" help:"The queue in dispatch order, with estimated start times."`
	Show        JobShowCmd        `cmd:"" help:"A job: fields, segments and their outputs, audit trail."`
	Explain     JobExplainCmd     `cmd:"" help:"Why a job waits."`
	Edit        JobEditCmd        `cmd:"" help:"Change a job before it runs (owner or admin)."`
	Move        JobMoveCmd        `cmd:"" help:"Reorder the queue (admins)."`
	Cancel      JobCancelCmd      `cmd:"" help:"Cancel a job; a running one after its segment's grace."`
	Pause       JobPauseCmd       `cmd:"" help:"Pause a job; a running one stops after its current segment."`
	Resume      JobResumeCmd      `cmd:"" help:"Put a paused job back in its place."`
	Retry       JobRetryCmd       `cmd:"" help:"Put a failed job back in the queue: it resumes at its first unfinished segment."`
	Stats       JobStatsCmd       `cmd:"" help:"Waits per tier, queue depth, peak hours, slot usage."`
	Quota       JobQuotaCmd       `cmd:"" help:"Quotas on slot time per user or project (admins set them)."`
	Schedule    JobScheduleCmd    `cmd:"" help:"Recurring jobs (submit --every)."`
	Worker      JobWorkerCmd      `cmd:"" help:"Run jobs: claim them for this machine's slots and run their segments."`
	Claim       JobClaimCmd       `cmd:"" help:"For an execution engine of your own: dispatch one job to the caller."`
	SegmentDone JobSegmentDoneCmd `cmd:"" name:"segment-done" help:"For an execution engine of your own: a segment ended."`
	Finish      JobFinishCmd      `cmd:"" help:"For an execution engine of your own: a claimed job ended."`
	Heartbeat   JobHeartbeatCmd   `cmd:"" help:"For an execution engine of your own: renew the lease on a claimed job."`
}

type JobSubmitCmd struct {
	Name       string   `help:"A name (default: the program's); estimates learn segment times per name."`
	Priority   string   `default:"normal" help:"urgent (up to scheduler.urgent_limit not ended; admins without limit), normal or background."`
	Project    string   `help:"The project its slot time counts against."`
	GPUs       int      `name:"gpus" default:"1" help:"Slots it needs."`
	Segments   int      `default:"1" help:"Segments: it can be paused, cancelled or yield between them."`
	StartAfter string   `name:"start-after" help:"Not before this time (RFC 3339, \"2026-11-24 03:00\", \"03:00\", or a duration such as 2h)."`
	OffPeak    bool     `name:"off-peak" help:"Only run inside scheduler.off_peak, never while urgent work waits, and yield to higher-priority work at a segment boundary."`
	Every      string   `help:"Recurring: daily, weekly or a cron expression (\"0 3 * * 1-5\")."`
	Argv       []string `arg:"" optional:"" passthrough:"" name:"argv" help:"The program and its arguments, after --."`
}

func (c *JobSubmitCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	argv := c.Argv
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	n := jobs.Submit{Name: c.Name, Project: c.Project, Tier: jobs.Tier(c.Priority), Slots: c.GPUs, Segments: c.Segments,
		Argv: argv, OffPeak: c.OffPeak, Every: c.Every}
	if c.GPUs < 1 || c.GPUs > jobs.SlotLimit { // before the service, whose 0 means the default
		return jobs.InvalidGPUs(c.GPUs, 0)
	}
	if c.Segments < 1 || c.Segments > jobs.SegmentLimit {
		return jobs.InvalidSegments(c.Segments)
	}
	if c.StartAfter != "" {
		if n.StartAfter, err = jobs.ParseTime(c.StartAfter, q.Env.Now, q.Policy.Zone); err != nil {
			return err
		}
	}
	out, err := q.Submit(e.ctx, n)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	for _, w := range out.Warnings {
		e.warn(w)
	}
	if out.Schedule != "" {
		fmt.Fprintf(e.stdout, "scheduled %s every %s; next at %s\n", out.Schedule, text(c.Every), out.NextAt.In(q.Policy.Zone).Format(time.RFC3339))
		return nil
	}
	fmt.Fprintf(e.stdout, "%s %s\n", out.Status, out.ID)
	return nil
}

// readJobs opens the scheduler and reads it up to date (no lock).
func readJobs(e *env) (*jobservice.Service, *jobs.State, error) {
	q, err := e.jobs()
	if err != nil {
		return nil, nil, err
	}
	st, err := q.Read(e.ctx)
	return q, st, err
}

// jobRef names a job.
type jobRef struct {
	ID string `arg:"" name:"job" help:"The job's id."`
}

type JobShowCmd struct{ jobRef }

func (c *JobShowCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	j, err := q.Job(e.ctx, c.ID)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, j)
	}
	printJob(e, j, q.Policy.Zone)
	return nil
}

func printJob(e *env, j *jobs.Job, zone *time.Location) {
	at := func(t time.Time) string { return t.In(zone).Format(time.RFC3339) }
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t%s\n", j.ID, text(j.Name))
	status := string(j.Status)
	switch {
	case j.Worker != "":
		status += fmt.Sprintf(" on %s (attempt %d, lease until %s)", text(j.Worker), j.Attempts, at(j.LeaseUntil))
	case j.Error != "":
		status += ": " + text(j.Error)
	}
	for _, flag := range []struct {
		on   bool
		what string
	}{{j.CancelRequested, "cancel requested, grace until " + at(j.GraceUntil)}, {j.PauseRequested, "pause requested"}, {j.YieldRequested, "yield requested"}} {
		if flag.on {
			status += "; " + flag.what
		}
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "owner\t%s\n", text(j.Owner))
	if j.Project != "" {
		fmt.Fprintf(tw, "project\t%s\n", text(j.Project))
	}
	extra := ""
	if j.OffPeak {
		extra = ", off-peak"
	}
	fmt.Fprintf(tw, "priority\t%s, %d slot(s), %d segment(s)%s\n", j.Tier, j.Slots, j.Segments, extra)
	fmt.Fprintf(tw, "argv\t%s\n", text(strings.Join(j.Argv, " ")))
	fmt.Fprintf(tw, "submitted\t%s\n", at(j.Submitted))
	if !j.StartAfter.IsZero() {
		fmt.Fprintf(tw, "start after\t%s\n", at(j.StartAfter))
	}
	if j.Schedule != "" {
		fmt.Fprintf(tw, "schedule\t%s (occurrence %s)\n", j.Schedule, at(j.Occurrence))
	}
	tw.Flush()
	fmt.Fprintln(e.stdout, "segments:")
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for i, s := range j.SegmentRuns() {
		switch {
		case s.Done:
			fmt.Fprintf(tw, "  %d\tdone\t%s\t%s\t%s\n", i, s.Ended.Sub(s.Started).Round(time.Millisecond), text(s.Worker), text(s.OutputDir))
		case !s.Started.IsZero() && s.Ended.IsZero():
			fmt.Fprintf(tw, "  %d\trunning\tsince %s\t%s\t\n", i, at(s.Started), text(s.Worker))
		case s.ExitCode != nil:
			fmt.Fprintf(tw, "  %d\texit %d\t%s\t%s\t%s\n", i, *s.ExitCode, s.Ended.Sub(s.Started).Round(time.Millisecond), text(s.Worker), text(s.OutputDir))
		case !s.Started.IsZero():
			fmt.Fprintf(tw, "  %d\tcut short\t%s\t%s\t\n", i, s.Ended.Sub(s.Started).Round(time.Millisecond), text(s.Worker))
		default:
			fmt.Fprintf(tw, "  %d\t-\t\t\t\n", i)
		}
	}
	tw.Flush()
	fmt.Fprintln(e.stdout, "trail:")
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, t := range j.Trail {
		move := string(t.To)
		if t.From != "" {
			move = string(t.From) + " → " + move
		}
		why := ""
		if t.Reason != "" {
			why = " (" + text(t.Reason) + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\tby %s\n", at(t.At), move, why, text(t.By))
	}
	tw.Flush()
}

type JobEditCmd struct {
	jobRef
	StartAfter *string `name:"start-after" help:"A new start_after (as submit's)."`
	Priority   *string `help:"urgent (up to scheduler.urgent_limit not ended; admins without limit), normal or background."`
	OffPeak    *bool   `name:"off-peak" negatable:"" help:"Off-peak only, or --no-off-peak."`
	GPUs       *int    `name:"gpus" help:"Slots it needs."`
}

func (c *JobEditCmd) Run(e *env) error {
	return jobChanged(e, "edited", func(q *jobservice.Service) (*jobs.Job, error) {
		ed := jobs.Edit{OffPeak: c.OffPeak, Slots: c.GPUs}
		if c.Priority != nil {
			t := jobs.Tier(*c.Priority)
			ed.Tier = &t
		}
		if c.StartAfter != nil {
			t, err := jobs.ParseTime(*c.StartAfter, q.Env.Now, q.Policy.Zone)
			if err != nil {
				return nil, err
			}
			ed.StartAfter = &t
		}
		return q.Edit(e.ctx, c.ID, ed)
	})
}

// jobChanged opens the scheduler, runs a change and prints the job's id
// and status after it.
func jobChanged(e *env, verb string, do func(q *jobservice.Service) (*jobs.Job, error)) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	j, err := do(q)
	return printChanged(e, q, verb, j, err)
}

// printChanged prints a job after a change.
func printChanged(e *env, q *jobservice.Service, verb string, j *jobs.Job, err error) error {
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, j)
	}
	note := ""
	switch {
	case j.CancelRequested:
		note = fmt.Sprintf(" (cancel requested: its segment may finish until %s, then it is stopped)", j.GraceUntil.In(q.Policy.Zone).Format(time.RFC3339))
	case j.PauseRequested:
		note = " (pause requested: it stops after its current segment)"
	}
	fmt.Fprintf(e.stdout, "%s %s: %s%s\n", verb, j.ID, j.Status, note)
	return nil
}

type JobMoveCmd struct {
	jobRef
	Before string `help:"Put it just before this job as job list shows them (and in its tier)." xor:"where"`
	After  string `help:"Put it just after this job as job list shows them (and in its tier)." xor:"where"`
	Top    bool   `help:"First in the queue." xor:"where"`
	Bottom bool   `help:"Last in the queue." xor:"where"`
}

func (c *JobMoveCmd) Run(e *env) error {
	m := jobs.Move{Before: c.Before, After: c.After, Top: c.Top, Bottom: c.Bottom}
	return jobChanged(e, "moved", func(q *jobservice.Service) (*jobs.Job, error) { return q.Move(e.ctx, c.ID, m) })
}

type JobCancelCmd struct{ jobRef }

func (c *JobCancelCmd) Run(e *env) error {
	return jobChanged(e, "cancel", func(q *jobservice.Service) (*jobs.Job, error) { return q.Cancel(e.ctx, c.ID) })
}

type JobPauseCmd struct{ jobRef }

func (c *JobPauseCmd) Run(e *env) error {
	return jobChanged(e, "pause", func(q *jobservice.Service) (*jobs.Job, error) { return q.Pause(e.ctx, c.ID) })
}

type JobResumeCmd struct{ jobRef }

func (c *JobResumeCmd) Run(e *env) error {
	return jobChanged(e, "resume", func(q *jobservice.Service) (*jobs.Job, error) { return q.Resume(e.ctx, c.ID) })
}

type JobRetryCmd struct{ jobRef }

func (c *JobRetryCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	j, err := q.Retry(e.ctx, c.ID)
	if err != nil || e.JSON {
		return printChanged(e, q, "retry", j, err)
	}
	fmt.Fprintf(e.stdout, "retry %s: %s at its tier's end; it resumes at segment %d (%d of %d done, kept)\n",
		j.ID, j.Status, j.NextSegment(), j.DoneSegments(), j.Segments)
	return nil
}

type JobQuotaCmd struct {
	Set  JobQuotaSetCmd  `cmd:"" help:"Set a quota on a user's or a project's slot time (admins)."`
	List JobQuotaListCmd `cmd:"" help:"Quotas and what has been used of them."`
	Rm   JobQuotaRmCmd   `cmd:"" help:"Remove a quota (admins)."`
}

// quotaScope is --user or --project.
type quotaScope struct {
	User    string `help:"A user (an actor)." xor:"scope" required:""`
	Project string `help:"A project." xor:"scope" required:""`
}

func (s quotaScope) scope() (string, string) {
	if s.User != "" {
		return "user", s.User
	}
	return "project", s.Project
}

type JobQuotaSetCmd struct {
	quotaScope
	Daily  string `help:"Slot time per day (local midnight to midnight), such as 8h."`
	Weekly string `help:"Slot time per week (from Monday 00:00), such as 40h or 2d."`
}

func (c *JobQuotaSetCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	scope, name := c.scope()
	quota := jobs.Quota{Scope: scope, Name: name}
	for _, f := range []struct {
		flag string
		to   *time.Duration
	}{{c.Daily, &quota.Daily}, {c.Weekly, &quota.Weekly}} {
		if f.flag == "" {
			continue
		}
		if *f.to, err = jobs.ParseDuration(f.flag); err != nil {
			return err
		}
	}
	if err := q.SetQuota(e.ctx, quota); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, jobs.QuotaRow{Scope: scope, Name: name, Daily: quota.Daily.Seconds(), Weekly: quota.Weekly.Seconds()})
	}
	fmt.Fprintf(e.stdout, "quota on %s %s: %s\n", scope, text(name), quotaLimits(quota))
	return nil
}

func quotaLimits(q jobs.Quota) string {
	var parts []string
	if q.Daily > 0 {
		parts = append(parts, fmt.Sprintf("%s a day", q.Daily))
	}
	if q.Weekly > 0 {
		parts = append(parts, fmt.Sprintf("%s a week", q.Weekly))
	}
	return strings.Join(parts, ", ")
}

type JobQuotaListCmd struct{}

func (c *JobQuotaListCmd) Run(e *env) error {
	q, st, err := readJobs(e)
	if err != nil {
		return err
	}
	rows := st.QuotaUsage(q.Policy, q.Env.Now)
	if e.JSON {
		return writeJSON(e.stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "no quotas")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tNAME\tDAILY\tUSED TODAY\tWEEKLY\tUSED THIS WEEK")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Scope, text(r.Name), limit(r.Daily), seconds(r.UsedToday), limit(r.Weekly), seconds(r.UsedThisWeek))
	}
	return tw.Flush()
}

func limit(s float64) string {
	if s == 0 {
		return "-"
	}
	return seconds(s)
}

func seconds(s float64) string { return (time.Duration(s) * time.Second).String() }

type JobQuotaRmCmd struct{ quotaScope }

func (c *JobQuotaRmCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	scope, name := c.scope()
	if err := q.RemoveQuota(e.ctx, scope, name); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]string{"scope": scope, "name": name, "removed": "true"})
	}
	fmt.Fprintf(e.stdout, "removed the quota on %s %s\n", scope, text(name))
	return nil
}

type JobScheduleCmd struct {
	List JobScheduleListCmd `cmd:"" help:"Recurring schedules: when, the last occurrence and whether it failed."`
	Rm   JobScheduleRmCmd   `cmd:"" help:"Remove a schedule (its owner or an admin); jobs it submitted stay."`
}

type JobScheduleListCmd struct{}

func (c *JobScheduleListCmd) Run(e *env) error {
	q, st, err := readJobs(e)
	if err != nil {
		return err
	}
	rows := st.ScheduleRows(q.Policy, q.Env.Now)
	if e.JSON {
		return writeJSON(e.stdout, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "no schedules")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVERY\tNAME\tOWNER\tNEXT\tLAST JOB\tLAST")
	for _, r := range rows {
		last := "-"
		if r.LastJob != "" {
			last = "ok"
			if r.LastFailed {
				last = fmt.Sprintf("FAILED (%d failures)", r.Failures)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, text(r.Every), text(r.Job.Name), text(r.Owner),
			r.NextAt.In(q.Policy.Zone).Format(time.RFC3339), orDash(r.LastJob), last)
	}
	return tw.Flush()
}

type JobScheduleRmCmd struct {
	ID string `arg:"" name:"schedule" help:"The schedule's id."`
}

func (c *JobScheduleRmCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	if err := q.RemoveSchedule(e.ctx, c.ID); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]string{"id": c.ID, "removed": "true"})
	}
	fmt.Fprintf(e.stdout, "removed schedule %s\n", c.ID)
	return nil
}

type JobWorkerCmd struct {
	Slots int           `default:"1" help:"Slots this worker offers."`
	Name  string        `help:"The worker's name, unique among running workers (default: the host's name)."`
	Once  bool          `help:"Run until nothing is left that it can run now, then exit (for cron and CI)."`
	Poll  time.Duration `default:"1s" help:"How often it looks for work and at its jobs' flags."`
	OfflineFlag
}

func (c *JobWorkerCmd) Run(e *env) error {
	q, err := e.jobs()
	if err != nil {
		return err
	}
	if c.Slots < 1 || c.Slots > jobs.SlotLimit {
		return jobs.InvalidGPUs(c.Slots, 0)
	}
	name := c.Name
	if name == "" {
		if name, err = os.Hostname(); err != nil || name == "" {
			name = "worker"
		}
	}
	q.Clock = func() time.Time { t, _ := clock.Now(); return t }
	w := &jobservice.Worker{S: q, Name: name, Slots: c.Slots, Once: c.Once, Poll: c.Poll}
	if !e.JSON {
		w.Logf = func(format string, args ...any) {
			fmt.Fprintf(e.stdout, "%s %s\n", q.Clock().Format(time.RFC3339), text(fmt.Sprintf(format, args...)))
		}
		w.Logf("worker %s: %d slot(s)", name, c.Slots)
	}
	ran, err := w.Run(e.ctx)
	if e.JSON && err == nil {
		return writeJSON(e.stdout, nonNil(ran))
	}
	return err
}

type JobClaimCmd struct {
	Slots int    `required:"" help:"Slots the caller has."`
	Name  string `help:"The caller's worker name (default: the actor)."`
	OfflineFlag
}

func (c *JobClaimCmd) Run(e *env) error {
	q, name, err := engine(e, c.Name)
	if err != nil {
		return err
	}
	cl, err := q.Claim(e.ctx, name, c.Slots)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, cl)
	}
	if cl == nil {
		fmt.Fprintln(e.stdout, "nothing to run")
		return nil
	}
	fmt.Fprintf(e.stdout, "claimed %s: run segment %d of %d (%s), lease until %s\n", cl.Job.ID, cl.Segment, cl.Job.Segments,
		text(strings.Join(cl.Job.Argv, " ")), cl.LeaseUntil.Format(time.RFC3339))
	return nil
}

// engine opens the scheduler for an execution engine's command: the
// worker is --name, or the actor.
func engine(e *env, name string) (*jobservice.Service, string, error) {
	q, err := e.jobs()
	if err == nil && name == "" {
		name, err = q.Actor(e.ctx)
	}
	return q, name, err
}

type JobSegmentDoneCmd struct {
	jobRef
	Segment   int    `arg:"" help:"The segment that ended (0-based)."`
	ExitCode  int    `name:"exit-code" help:"Its exit status (0: done)."`
	OutputDir string `name:"output-dir" help:"Where its outputs are."`
	Name      string `help:"The worker name that claimed it (default: the actor)."`
	OfflineFlag
}

func (c *JobSegmentDoneCmd) Run(e *env) error {
	q, name, err := engine(e, c.Name)
	if err != nil {
		return err
	}
	next, j, err := q.SegmentDone(e.ctx, c.ID, name, jobs.SegmentEnd{Segment: c.Segment, ExitCode: c.ExitCode, OutputDir: c.OutputDir})
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]any{"id": j.ID, "status": j.Status, "next_segment": next})
	}
	if next >= 0 {
		fmt.Fprintf(e.stdout, "%s: run segment %d next\n", j.ID, next)
	} else {
		fmt.Fprintf(e.stdout, "%s: %s\n", j.ID, j.Status)
	}
	return nil
}

type JobFinishCmd struct {
	jobRef
	Status string `required:"" enum:"complete,failed" help:"complete or failed."`
	Error  string `help:"What went wrong."`
	Name   string `help:"The worker name that claimed it (default: the actor)."`
	OfflineFlag
}

func (c *JobFinishCmd) Run(e *env) error {
	q, name, err := engine(e, c.Name)
	if err != nil {
		return err
	}
	j, err := q.Finish(e.ctx, c.ID, name, jobs.Status(c.Status), c.Error)
	return printChanged(e, q, "finished", j, err)
}

type JobHeartbeatCmd struct {
	jobRef
	Name string `help:"The worker name that claimed it (default: the actor)."`
	OfflineFlag
}

func (c *JobHeartbeatCmd) Run(e *env) error {
	q, name, err := engine(e, c.Name)
	if err != nil {
		return err
	}
	j, err := q.Heartbeat(e.ctx, c.ID, name)
	return printChanged(e, q, "lease renewed for", j, err)
}
