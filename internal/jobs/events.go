package jobs

import "time"

// Event types. A job's events have the job's id as subject; a quota's,
// "quota/<scope>/<name>"; a schedule's, its id; a worker's, "worker/<name>".
const (
	TypeSubmitted       = "job.submitted"        // SubmittedData
	TypeReleased        = "job.released"         // {}: scheduled → queued, start_after reached
	TypeEdited          = "job.edited"           // EditedData
	TypeMoved           = "job.moved"            // MovedData: an admin's reorder
	TypeDispatched      = "job.dispatched"       // DispatchedData: a worker claimed it
	TypeSegmentStarted  = "job.segment_started"  // SegmentData
	TypeSegmentDone     = "job.segment_done"     // SegmentData with ExitCode
	TypeHeartbeat       = "job.heartbeat"        // LeaseData
	TypeFinished        = "job.finished"         // FinishedData: complete or failed
	TypePauseRequested  = "job.pause_requested"  // {}: a running job stops after its segment
	TypePaused          = "job.paused"           // {}
	TypeResumed         = "job.resumed"          // {}: paused → queued, its place kept
	TypeCancelRequested = "job.cancel_requested" // CancelData: a running job ends within the grace
	TypeCancelled       = "job.cancelled"        // {}
	TypeYieldRequested  = "job.yield_requested"  // {}: an off-peak job makes room at its next segment boundary
	TypeRequeued        = "job.requeued"         // RequeuedData: back to queued, segments and place kept
	TypeRetried         = "job.retried"          // RetriedData: a failed job back to queued, its done segments kept
	TypeQuotaSet        = "job.quota_set"        // QuotaData
	TypeQuotaRemoved    = "job.quota_removed"    // QuotaData (scope and name)
	TypeScheduleCreated = "job.schedule_created" // ScheduleData
	TypeScheduleRemoved = "job.schedule_removed" // {}
	TypeWorkerSeen      = "job.worker_seen"      // WorkerData: a worker started, with its slots
)

// SubmittedData is a new job. Its owner is the event's actor unless Owner says.
type SubmittedData struct {
	Name       string    `json:"name"`
	Project    string    `json:"project,omitempty"`
	Tier       Tier      `json:"priority"`
	Slots      int       `json:"gpus"`
	Segments   int       `json:"segments"`
	Argv       []string  `json:"argv"`
	StartAfter time.Time `json:"start_after,omitzero"`
	OffPeak    bool      `json:"off_peak,omitempty"`
	Owner      string    `json:"owner,omitempty"`     // a schedule's owner, for its occurrences; else the actor
	Schedule   string    `json:"schedule,omitempty"`  // the recurring schedule it is an occurrence of
	Occurrence time.Time `json:"occurrence,omitzero"` // which one
	Status     Status    `json:"status"`              // queued, or scheduled when start_after is later
}

// EditedData changes what is set, before a job starts.
type EditedData struct {
	StartAfter *time.Time `json:"start_after,omitempty"`
	Tier       *Tier      `json:"priority,omitempty"`
	OffPeak    *bool      `json:"off_peak,omitempty"`
	Slots      *int       `json:"gpus,omitempty"`
	Status     *Status    `json:"status,omitempty"` // queued ↔ scheduled when start_after moved
}

// MovedData is a job's new place: its order key, and its tier when it was
// moved next to a job of another tier.
type MovedData struct {
	Order int64 `json:"order"`
	Tier  Tier  `json:"priority"`
}

// DispatchedData is a claim: the worker, its lease, the attempt.
type DispatchedData struct {
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
	Attempt    int       `json:"attempt"`
	// Holder is the worker's process (spool job worker, spool watch), so
	// that a claim on this machine need not wait for the lease of a worker
	// that is certainly dead (Tick's gone). Absent in older logs and for a
	// claim by a process that does not run the job (spool job claim).
	Holder *ProcRecord `json:"holder,omitempty"`
}

// ProcRecord is a process as the log records it: pid, process group, start
// time in clock ticks since boot and the boot's id, the fields of
// internal/proc's Record, which the service converts to and from it; the
// domain never looks at processes itself.
type ProcRecord struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot,omitempty"`
	NS    string `json:"ns,omitempty"` // the pid namespace; absent in older logs
}

// Gone are the worker processes the service found certainly dead on this
// machine (internal/proc's Gone): their jobs go back to the queue without
// waiting for the lease. Nil knows of none: only leases tell.
type Gone map[ProcRecord]bool

// SegmentData is one segment's start or end.
type SegmentData struct {
	Segment   int    `json:"segment"`
	Worker    string `json:"worker,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	OutputDir string `json:"output_dir,omitempty"`
}

type LeaseData struct {
	LeaseUntil time.Time `json:"lease_until"`
}

type FinishedData struct {
	Status Status `json:"status"` // complete or failed
	Error  string `json:"error,omitempty"`
}

type CancelData struct {
	GraceUntil time.Time `json:"grace_until"`
}

// RequeuedData says why a job went back to queued: it yielded to higher-priority
// work, or its worker's lease ran out.
type RequeuedData struct {
	Reason string `json:"reason"` // yield, lease_expired, worker_stopped
}

// RetriedData is job retry: the segment the job resumes at (its first
// unfinished one) and how many were done.
type RetriedData struct {
	Segment int `json:"segment"`
	Done    int `json:"segments_done"`
}

// QuotaData is a quota on slot time, per user or per project.
type QuotaData struct {
	Scope  string        `json:"scope"` // user or project
	Name   string        `json:"name"`
	Daily  time.Duration `json:"daily,omitempty"`
	Weekly time.Duration `json:"weekly,omitempty"`
}

// ScheduleData is a recurring job: its spec and the job it submits.
type ScheduleData struct {
	Every string        `json:"every"` // daily, weekly, or a cron expression
	Job   SubmittedData `json:"job"`
}

type WorkerData struct {
	Slots int `json:"slots"`
}

// Requeue reasons.
const (
	ReasonYield        = "yield"
	ReasonLeaseExpired = "lease_expired"
	ReasonWorkerGone   = "worker_stopped" // its worker stopped, restarted or died mid-segment
)
