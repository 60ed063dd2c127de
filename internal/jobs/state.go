package jobs

import (
	"bytes"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/projections"
)

// Job is one job.
type Job struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Owner      string      `json:"owner"`
	Project    string      `json:"project,omitempty"`
	Tier       Tier        `json:"priority"`
	Slots      int         `json:"gpus"`
	Segments   int         `json:"segments"`
	Argv       []string    `json:"argv"`
	StartAfter time.Time   `json:"start_after,omitzero"`
	OffPeak    bool        `json:"off_peak,omitempty"`
	Schedule   string      `json:"schedule,omitempty"`
	Occurrence time.Time   `json:"occurrence,omitzero"`
	Status     Status      `json:"status"`
	Submitted  time.Time   `json:"submitted_at"`
	Entered    time.Time   `json:"entered_queue_at,omitzero"` // when it (last) entered the queue
	Order      int64       `json:"order"`                     // place in its tier: FIFO, or where an admin moved it
	Moved      bool        `json:"moved,omitempty"`
	Worker     string      `json:"worker,omitempty"`
	LeaseUntil time.Time   `json:"lease_until,omitzero"`
	Holder     *ProcRecord `json:"holder,omitempty"` // the worker's process, from its claim, while it holds the job
	Attempts   int         `json:"attempts,omitempty"`
	FirstStart time.Time   `json:"first_dispatched_at,omitzero"`
	Ended      time.Time   `json:"ended_at,omitzero"`
	Error      string      `json:"error,omitempty"`

	PauseRequested  bool      `json:"pause_requested,omitempty"`
	YieldRequested  bool      `json:"yield_requested,omitempty"`
	CancelRequested bool      `json:"cancel_requested,omitempty"`
	GraceUntil      time.Time `json:"grace_until,omitzero"`

	// Segs are the segments that have started, in order: the first
	// len(Segs) of Segments (they start in order, each after the one before
	// it is done); the rest have not, and JSON writes them as such
	// (SegmentRuns). Kept no longer than what ran, so that the state grows
	// with the events, not with a count an event names.
	Segs  []Segment    `json:"segment_runs"`
	Runs  []Run        `json:"runs,omitempty"` // every stretch of slot time it used, cut-short runs included
	Trail []Transition `json:"trail"`          // every change of status
}

// Run is a stretch of time a job held its slots running a segment.
type Run struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Segment is one segment's last run.
type Segment struct {
	Done      bool      `json:"done"`
	Started   time.Time `json:"started_at,omitzero"`
	Ended     time.Time `json:"ended_at,omitzero"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	OutputDir string    `json:"output_dir,omitempty"`
	Worker    string    `json:"worker,omitempty"`
}

// Transition is one line of a job's audit trail.
type Transition struct {
	At     time.Time `json:"at"`
	From   Status    `json:"from,omitempty"`
	To     Status    `json:"to"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
}

// SegmentRuns is every segment, one per segment in order: Segs, then
// those that have not started.
func (j *Job) SegmentRuns() []Segment {
	if len(j.Segs) >= j.Segments {
		return j.Segs
	}
	return append(slices.Clip(j.Segs), make([]Segment, j.Segments-len(j.Segs))...)
}

// MarshalJSON writes segment_runs whole (SegmentRuns), one per segment.
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job // without this method
	j.Segs = j.SegmentRuns()
	return json.Marshal(plain(j))
}

// NextSegment is the first segment not done, or Segments when all are.
func (j *Job) NextSegment() int {
	for i, s := range j.Segs {
		if !s.Done {
			return i
		}
	}
	return len(j.Segs)
}

// DoneSegments counts the segments done.
func (j *Job) DoneSegments() int {
	n := 0
	for _, s := range j.Segs {
		if s.Done {
			n++
		}
	}
	return n
}

// Quota is a quota on slot time.
type Quota struct {
	Scope  string        `json:"scope"`
	Name   string        `json:"name"`
	Daily  time.Duration `json:"daily,omitempty"`
	Weekly time.Duration `json:"weekly,omitempty"`
}

// Key names a quota: "user/ada@example.com", "project/render".
func (q Quota) Key() string { return q.Scope + "/" + q.Name }

// Schedule is a recurring job.
type Schedule struct {
	ID         string        `json:"id"`
	Every      string        `json:"every"`
	Job        SubmittedData `json:"job"`
	Owner      string        `json:"owner"`
	Created    time.Time     `json:"created_at"`
	Last       time.Time     `json:"last_occurrence,omitzero"`
	LastJob    string        `json:"last_job,omitempty"`
	LastFailed bool          `json:"last_failed,omitempty"` // flagged; never blocks the next occurrence
	Failures   int           `json:"failures,omitempty"`
}

// Worker is a worker that announced its slots.
type Worker struct {
	Name  string    `json:"name"`
	Slots int       `json:"slots"`
	Seen  time.Time `json:"seen_at"`
}

// State is the scheduler.
type State struct {
	Jobs      map[string]*Job
	Quotas    map[string]*Quota
	Schedules map[string]*Schedule
	Workers   map[string]*Worker
	// lazy are the jobs of a snapshot read by UnmarshalChecked, not in
	// Jobs yet: decoded whole (all) before anything reads the state, or one
	// by one by Projection.Job and Apply (an event's job, into Jobs, which
	// then holds the jobs decoded so far, newer than their records). Only
	// Projection.Lazy hands out a state with them, to SubmitJob, which
	// reads them so (jobCount, exists, all), and Projection.Claimable.
	lazy *lazyJobs
	// taken marks the records of lazy whose jobs are in Jobs.
	taken []bool
	// claimable says Jobs holds every job of lazy but the idle ones
	// (Projection.Claimable): a decision reads those through queueHeads.
	claimable bool
}

// NewState returns an empty scheduler.
func NewState() *State {
	return &State{Jobs: map[string]*Job{}, Quotas: map[string]*Quota{}, Schedules: map[string]*Schedule{}, Workers: map[string]*Worker{}}
}

// Name is the projection's name.
const Name = "jobs"

// Spec registers the projection.
var Spec = projections.Spec{Name: Name, Version: 10, Amortize: 1000, New: func() projections.Projection { return &Projection{s: NewState()} }}

// Projection folds the scheduler's events.
type Projection struct {
	s *State
	// shared says s was handed out (Snapshot) and not yet copied; copied
	// are the jobs the copy owns since (nil: no copy made).
	shared bool
	copied map[string]bool
}

// State returns the folded state: what a decision reads under the log's
// lock. The next event changes it.
func (p *Projection) State() *State { return p.full() }

// full is s with every job decoded.
func (p *Projection) full() *State { return p.s.all() }

// Lazy is the state with its jobs maybe still encoded (see State.lazy):
// for SubmitJob alone.
func (p *Projection) Lazy() *State { return p.s }

// all decodes the jobs still encoded, for what reads Jobs whole.
func (s *State) all() *State {
	if s.lazy != nil {
		mustDecode(s.lazy.decodeAll(s))
		s.lazy, s.taken, s.claimable = nil, nil, false
	}
	return s
}

// decided is s with every job a decision reads but through queueHeads
// decoded: a claimable state as it is, any other whole.
func (s *State) decided() *State {
	if s.claimable {
		return s
	}
	return s.all()
}

// Claimable is the state a claim decides on (ClaimJobHeld), as State is,
// but with the idle jobs of a snapshot read lazily left in it: at 10,000
// queued jobs decoding them was most of a claim. queueHeads reads them
// from the snapshot's claim section and decodes each lane's first job
// alone; nothing else a claim reads concerns them.
func (p *Projection) Claimable() *State {
	s := p.s
	if s.lazy == nil || s.claimable {
		return s
	}
	sl := &slabs{}
	_, err := s.lazy.others(func(i int) {
		if !s.isTaken(i) {
			j, err := s.lazy.decode(i, sl)
			mustDecode(err)
			s.put(i, j)
		}
	})
	mustDecode(err)
	s.claimable = true
	return s
}

// isTaken says whether record i's job is in Jobs.
func (s *State) isTaken(i int) bool { return i < len(s.taken) && s.taken[i] }

// put puts record i's job, decoded, in Jobs.
func (s *State) put(i int, j *Job) {
	if s.taken == nil {
		s.taken = make([]bool, s.lazy.n)
	}
	s.taken[i] = true
	s.Jobs[j.ID] = j
}

// jobCount is len(Jobs) once all are decoded.
func (s *State) jobCount() int {
	if s.lazy == nil {
		return len(s.Jobs)
	}
	n := s.lazy.n
	for id := range s.Jobs {
		if !s.lazy.has(id) {
			n++
		}
	}
	return n
}

// mustDecode stops at a record that does not decode in a snapshot read
// lazily: a checksum vouched for its bytes, which are then what
// MarshalState wrote and its tests read back.
func mustDecode(err error) {
	if err != nil {
		panic("jobs: a snapshot that matched its checksum does not decode: " + err.Error())
	}
}

// take puts job id, when the snapshot read lazily has it, in s.Jobs for
// an event to fold into.
func (s *State) take(id string) {
	if s.lazy == nil {
		return
	}
	if _, ok := s.Jobs[id]; ok {
		return
	}
	if i, ok := s.lazy.search(id); ok {
		j, err := s.lazy.decode(i, &slabs{})
		mustDecode(err)
		s.put(i, j)
	}
}

// Job is one job, found without decoding the others when the snapshot has
// not been (a reader that needs nothing else, such as spool job show). The
// job is the reader's to keep: later events fold into a copy.
func (p *Projection) Job(id string) (*Job, error) {
	if p.s.lazy == nil {
		return p.Snapshot().Job(id)
	}
	if j := p.s.Jobs[id]; j != nil { // events folded into it: a copy of its own
		c := *j
		c.Segs, c.Runs, c.Trail = slices.Clone(j.Segs), slices.Clone(j.Runs), slices.Clone(j.Trail)
		return &c, nil
	}
	j, err := p.s.lazy.find(id)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, fault.NotFound("job", id)
	}
	return j, nil
}

// Snapshot is the scheduler now, for a reader to keep: later events fold
// into a copy (the maps and schedules copied at the next event, a job when
// an event first changes it), never into it.
func (p *Projection) Snapshot() *State {
	p.shared, p.copied = true, nil
	return p.full()
}

func (p *Projection) Apply(e *eventlog.Event) error {
	if p.s.lazy != nil {
		// An event changes its subject alone (and schedules, which are
		// decoded): the other jobs stay encoded. Nothing was handed out
		// (Snapshot decodes all), so nothing is shared.
		if strings.HasPrefix(e.Type, "job.") {
			p.s.take(e.Subject)
		}
		p.s.Apply(e)
		return nil
	}
	if p.shared {
		p.s, p.shared, p.copied = p.s.fork(), false, map[string]bool{}
	}
	if p.copied != nil && !p.copied[e.Subject] {
		p.copied[e.Subject] = true
		p.s.ownJob(e.Subject)
	}
	p.s.Apply(e)
	return nil
}

// Apply folds one event. Unknown types, unknown jobs, moves the table
// forbids and bad data are skipped.
func (s *State) Apply(e *eventlog.Event) {
	// The zero time means "not yet" in a job (ended_at, entered_queue_at):
	// an event at it is of no use, whoever wrote it.
	if !strings.HasPrefix(e.Type, "job.") || e.At.IsZero() {
		return
	}
	switch e.Type {
	case TypeSubmitted:
		var d SubmittedData
		if s.Jobs[e.Subject] != nil || !ValidJobID(e.Subject) || json.Unmarshal(e.Data, &d) != nil || !d.usable() {
			return
		}
		owner := e.Actor
		if d.Owner != "" {
			owner = d.Owner
		}
		j := &Job{ID: e.Subject, Name: d.Name, Owner: owner, Project: d.Project, Tier: d.Tier, Slots: d.Slots,
			Segments: d.Segments, Argv: d.Argv, StartAfter: d.StartAfter, OffPeak: d.OffPeak, Schedule: d.Schedule,
			Occurrence: d.Occurrence, Status: d.Status, Submitted: e.At, Order: e.At.UnixNano()}
		if j.Status != Scheduled {
			j.Status, j.Entered = Queued, e.At
		}
		j.Trail = []Transition{{At: e.At, To: j.Status, By: e.Actor}}
		s.Jobs[j.ID] = j
		if sc := s.Schedules[d.Schedule]; sc != nil && d.Occurrence.After(sc.Last) {
			sc.Last, sc.LastJob = d.Occurrence, j.ID
		}
		return
	case TypeQuotaSet, TypeQuotaRemoved:
		var d QuotaData
		if json.Unmarshal(e.Data, &d) != nil || d.Name == "" {
			return
		}
		q := &Quota{Scope: d.Scope, Name: d.Name, Daily: d.Daily, Weekly: d.Weekly}
		if e.Type == TypeQuotaSet {
			s.Quotas[q.Key()] = q
		} else {
			delete(s.Quotas, q.Key())
		}
		return
	case TypeScheduleCreated:
		var d ScheduleData
		// An occurrence's job id is made of the schedule's: it must be one
		// that makes job ids the fold takes.
		if s.Schedules[e.Subject] != nil || !validScheduleID(e.Subject) || json.Unmarshal(e.Data, &d) != nil || !d.Job.usable() {
			return
		}
		s.Schedules[e.Subject] = &Schedule{ID: e.Subject, Every: d.Every, Job: d.Job, Owner: e.Actor, Created: e.At}
		return
	case TypeScheduleRemoved:
		delete(s.Schedules, e.Subject)
		return
	case TypeWorkerSeen:
		var d WorkerData
		name, ok := strings.CutPrefix(e.Subject, "worker/")
		if !ok || json.Unmarshal(e.Data, &d) != nil || d.Slots < 1 || d.Slots > SlotLimit {
			return
		}
		s.Workers[name] = &Worker{Name: name, Slots: d.Slots, Seen: e.At}
		return
	}
	j := s.Jobs[e.Subject]
	if j == nil {
		return
	}
	switch e.Type {
	case TypeReleased:
		s.move(j, Queued, e, "start_after")
	case TypeEdited:
		var d EditedData
		if j.Status.Terminal() || json.Unmarshal(e.Data, &d) != nil {
			return
		}
		if d.StartAfter != nil {
			j.StartAfter = *d.StartAfter
		}
		if d.Tier != nil && d.Tier.Valid() {
			j.Tier = *d.Tier
		}
		if d.OffPeak != nil {
			j.OffPeak = *d.OffPeak
		}
		if d.Slots != nil && *d.Slots > 0 && *d.Slots <= SlotLimit {
			j.Slots = *d.Slots
		}
		if d.Status != nil && *d.Status != j.Status {
			if *d.Status == Scheduled && j.Status == Queued { // start_after moved later: out of the queue again
				j.Status = Scheduled
				j.Trail = append(j.Trail, Transition{At: e.At, From: Queued, To: Scheduled, By: e.Actor, Reason: "start_after"})
			} else {
				s.move(j, *d.Status, e, "start_after")
			}
		}
	case TypeMoved:
		var d MovedData
		if json.Unmarshal(e.Data, &d) != nil || !d.Tier.Valid() || j.Status.Terminal() {
			return
		}
		j.Order, j.Tier, j.Moved = d.Order, d.Tier, true
	case TypeDispatched:
		var d DispatchedData
		// A claim names its worker and lease (the invariants hold a held
		// job to them): one without is no claim.
		if json.Unmarshal(e.Data, &d) != nil || d.Worker == "" || d.LeaseUntil.IsZero() || !s.move(j, Dispatched, e, "") {
			return
		}
		j.Worker, j.LeaseUntil, j.Attempts, j.Holder = d.Worker, d.LeaseUntil, d.Attempt, nil
		if d.Holder != nil {
			h := *d.Holder
			j.Holder = &h
		}
		if j.FirstStart.IsZero() {
			j.FirstStart = e.At
		}
	case TypeSegmentStarted, TypeSegmentDone:
		var d SegmentData
		// Segments start in order: a start is of a segment that ran
		// before or of the next one, an end of one that started.
		if json.Unmarshal(e.Data, &d) != nil || d.Segment < 0 || d.Segment >= j.Segments || d.Segment > len(j.Segs) {
			return
		}
		if e.Type == TypeSegmentStarted {
			if j.Status == Dispatched && !s.move(j, Running, e, "") || j.Status != Running {
				return
			}
			if d.Segment == len(j.Segs) {
				j.Segs = append(j.Segs, Segment{})
			}
			j.Segs[d.Segment] = Segment{Started: e.At, Worker: d.Worker}
			return
		}
		if d.Segment == len(j.Segs) || j.Status != Running || j.Segs[d.Segment].Started.IsZero() {
			return
		}
		seg := &j.Segs[d.Segment]
		seg.Ended, seg.ExitCode, seg.OutputDir = e.At, d.ExitCode, d.OutputDir
		seg.Done = d.ExitCode != nil && *d.ExitCode == 0
		j.Runs = append(j.Runs, Run{Start: seg.Started, End: e.At})
	case TypeHeartbeat:
		var d LeaseData
		if j.Status.Held() && json.Unmarshal(e.Data, &d) == nil && !d.LeaseUntil.IsZero() {
			j.LeaseUntil = d.LeaseUntil
		}
	case TypeFinished:
		var d FinishedData
		if json.Unmarshal(e.Data, &d) != nil || d.Status != Complete && d.Status != Failed {
			return
		}
		if s.move(j, d.Status, e, d.Error) {
			j.Error = d.Error
		}
	case TypePauseRequested:
		if j.Status.Held() {
			j.PauseRequested = true
		}
	case TypePaused:
		s.move(j, Paused, e, "")
	case TypeResumed:
		if j.PauseRequested && j.Status.Held() {
			j.PauseRequested = false
		} else if j.Status == Paused {
			s.move(j, Queued, e, "resume") // its order, and so its place, is kept
		}
	case TypeCancelRequested:
		var d CancelData
		switch {
		case json.Unmarshal(e.Data, &d) != nil:
		case j.Status.Held():
			j.CancelRequested, j.GraceUntil = true, d.GraceUntil
		case !j.Status.Terminal():
			// Asked of a held job that another clone, which had not seen
			// it, gave back to the queue meanwhile (its worker lost): with
			// no worker left to stop, the cancel is done at once.
			s.move(j, Cancelled, e, "")
		}
	case TypeCancelled:
		s.move(j, Cancelled, e, "")
	case TypeYieldRequested:
		if j.Status.Held() {
			j.YieldRequested = true
		}
	case TypeRetried:
		if j.Status == Failed {
			s.move(j, Queued, e, "retry")
		}
	case TypeRequeued:
		var d RequeuedData
		switch {
		case json.Unmarshal(e.Data, &d) != nil:
		case j.CancelRequested:
			// Its cancel was asked: a clone that had not seen that when it
			// let the job go (its worker lost) ends it, as Tick and Release
			// would have had they known.
			s.move(j, Cancelled, e, "")
		default:
			s.move(j, Queued, e, d.Reason)
		}
	}
}

// move changes a job's status if the table allows it, with its audit line,
// and clears what belonged to the status it leaves.
func (s *State) move(j *Job, to Status, e *eventlog.Event, reason string) bool {
	if !CanTransition(j.Status, to) {
		return false
	}
	from := j.Status
	j.Trail = append(j.Trail, Transition{At: e.At, From: from, To: to, By: e.Actor, Reason: reason})
	j.Status = to
	if from.Held() && to != Running { // dispatched → running keeps its worker
		j.Worker, j.LeaseUntil, j.Holder = "", time.Time{}, nil
		j.PauseRequested, j.YieldRequested, j.CancelRequested, j.GraceUntil = false, false, false, time.Time{}
		for i := range j.Segs { // a segment cut short is run again
			if seg := &j.Segs[i]; !seg.Done && !seg.Started.IsZero() && seg.Ended.IsZero() {
				seg.Ended = e.At
				j.Runs = append(j.Runs, Run{Start: seg.Started, End: e.At})
			}
		}
	}
	switch {
	case to == Queued && (from == Scheduled || from == Failed):
		// It enters the queue now, at its tier's end; a retried job is no
		// longer ended, and its place is a new one.
		j.Entered, j.Order = e.At, e.At.UnixNano()
		if from == Failed {
			j.Ended, j.Error, j.Moved = time.Time{}, "", false
		}
	case to == Queued && j.Entered.IsZero():
		j.Entered = e.At
	case to.Terminal():
		j.Ended = e.At
		if sc := s.Schedules[j.Schedule]; sc != nil && sc.LastJob == j.ID {
			sc.LastFailed = to == Failed
			if to == Failed {
				sc.Failures++
			}
		}
	}
	return true
}

// Sorted returns the jobs by id.
func (s *State) Sorted() []*Job {
	s.all()
	out := make([]*Job, 0, len(s.Jobs))
	for _, j := range s.Jobs {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// MarshalState is the snapshot (codec.go).
func (p *Projection) MarshalState() ([]byte, error) { return p.full().marshal() }

// UnmarshalState reads the snapshot, every job decoded and checked. The
// state keeps b (its strings are b's bytes): the caller must not change b
// after.
func (p *Projection) UnmarshalState(b []byte) error {
	s, err := unmarshal(b)
	if err != nil {
		return err
	}
	p.s = s
	return nil
}

// UnmarshalChecked reads a snapshot whose checksum matched: its jobs are
// decoded when first read (full, Job), not now. At 10,000 jobs decoding
// them was most of a `job show`. It keeps b as UnmarshalState does.
func (p *Projection) UnmarshalChecked(b []byte) error {
	lz, s, err := index(b)
	if err != nil {
		return err
	}
	s.lazy = lz
	p.s, p.shared, p.copied = s, false, nil
	return nil
}

// UnmarshalMapped is UnmarshalChecked on a mapping of the snapshot file
// (projections.MappedUnmarshaler): the jobs are decoded from copies, and
// release unmaps it once the jobs left encoded are unreachable.
func (p *Projection) UnmarshalMapped(b []byte, release func()) error {
	if err := p.UnmarshalChecked(b); err != nil {
		return err
	}
	p.s.lazy.mapped = true
	runtime.AddCleanup(p.s.lazy, func(release func()) { release() }, release)
	return nil
}

// Files renders jobs.json (under the state directory): every job, by id,
// as json.MarshalIndent writes them with a newline after (Job.AppendJSON).
func (p *Projection) Files() ([]projections.File, error) {
	var b bytes.Buffer
	jobs := p.full().Sorted()
	b.Grow(800 * len(jobs)) // about what a job takes: not grown by doubling through 7 MB at 10,000
	err := jsonout.WriteList(&b, len(jobs), func(i int) any { return jobs[i] }, true)
	return []projections.File{{Path: "jobs.json", Data: b.Bytes()}}, err
}

// fork returns a copy of s that events can be folded into: the maps are
// its own and so are the schedules (a job's end changes its schedule's;
// they are few), the jobs are still s's until ownJob copies one.
func (s *State) fork() *State {
	s.decided()
	o := &State{Jobs: maps.Clone(s.Jobs), Quotas: maps.Clone(s.Quotas),
		Schedules: make(map[string]*Schedule, len(s.Schedules)), Workers: maps.Clone(s.Workers),
		lazy: s.lazy, taken: slices.Clone(s.taken), claimable: s.claimable}
	for k, v := range s.Schedules {
		c := *v
		o.Schedules[k] = &c
	}
	return o
}

// ownJob copies job id into s, deeply enough that folding events into the
// copy leaves the original as it was.
func (s *State) ownJob(id string) {
	if j := s.Jobs[id]; j != nil {
		c := *j
		c.Segs, c.Runs, c.Trail = slices.Clone(j.Segs), slices.Clone(j.Runs), slices.Clone(j.Trail)
		s.Jobs[id] = &c
	}
}

// Overlay returns a copy of s with drafts applied, s left as it was: a
// claim decides on the state after what the clock decided. Only the jobs
// and schedules drafts touch are copied deeply.
func (s *State) Overlay(drafts []eventlog.Draft, actor string, now time.Time) (*State, error) {
	o := s.fork()
	copied := map[string]bool{}
	for _, d := range drafts {
		if !copied[d.Subject] {
			o.take(d.Subject)
			o.ownJob(d.Subject)
			copied[d.Subject] = true
		}
		e, err := d.Event(actor, now)
		if err != nil {
			return nil, err
		}
		o.Apply(e)
	}
	return o, nil
}
