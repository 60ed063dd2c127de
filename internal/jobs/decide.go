package jobs

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/ids"
)

// The decide functions are pure: state, command, policy and clock in,
// events or a typed error out. An error means nothing is appended.

// Submit is spool job submit.
type Submit struct {
	Name       string
	Project    string
	Tier       Tier // "" is normal
	Slots      int  // 0 is 1
	Segments   int  // 0 is 1
	Argv       []string
	StartAfter time.Time
	OffPeak    bool
	Every      string // daily, weekly or a cron expression: a recurring schedule
}

// Submitted is what submit made.
type Submitted struct {
	ID       string    `json:"id"`
	Status   Status    `json:"status,omitempty"`
	Schedule string    `json:"schedule,omitempty"`
	NextAt   time.Time `json:"next_at,omitzero"` // a schedule's first occurrence
	Warnings []string  `json:"warnings"`
}

func (s *State) exists(id string) bool {
	return s.Jobs[id] != nil || s.lazy != nil && s.lazy.has(id) || s.Schedules[id] != nil
}

// ValidateTier reads a tier name.
func ValidateTier(t string) (Tier, error) {
	if t == "" {
		return Normal, nil
	}
	if !Tier(t).Valid() {
		return "", fault.New(CodeInvalidTier, nil, fmt.Sprintf("priority must be urgent, normal or background, got %q", t), "priority", t)
	}
	return Tier(t), nil
}

func (s *State) validateSlots(p Policy, n int) error {
	if most := min(s.MaxSlots(p), SlotLimit); n < 1 || n > most {
		return InvalidGPUs(n, most)
	}
	return nil
}

// SubmitJob is spool job submit: a job, or with Every a schedule. s may
// be read lazily (Projection.Lazy): its jobs are read through jobCount and
// exists, or Sorted and usageSince, which decode them all.
func SubmitJob(s *State, p Policy, n Submit, actor, writer string, now time.Time) ([]eventlog.Draft, Submitted, error) {
	tier, err := ValidateTier(string(n.Tier))
	if err != nil {
		return nil, Submitted{}, err
	}
	if n.Slots == 0 {
		n.Slots = 1
	}
	if n.Segments == 0 {
		n.Segments = 1
	}
	switch {
	case len(n.Argv) == 0 || n.Argv[0] == "":
		return nil, Submitted{}, fault.Usagef(CodeEmptyArgv, "a job needs a command: spool job submit [flags] -- PROGRAM [ARGS...]")
	case n.Segments < 1 || n.Segments > SegmentLimit:
		return nil, Submitted{}, InvalidSegments(n.Segments)
	case tier == Urgent && n.Every != "" && !p.Admin(actor):
		return nil, Submitted{}, adminOnly(actor, "schedule recurring urgent work")
	}
	if tier == Urgent {
		if err := s.mayUrgent(p, actor, "", "submit an urgent job"); err != nil {
			return nil, Submitted{}, err
		}
	}
	if err := s.validateSlots(p, n.Slots); err != nil {
		return nil, Submitted{}, err
	}
	if n.Name = strings.TrimSpace(n.Name); n.Name == "" {
		n.Name = filepath.Base(n.Argv[0])
	}
	d := SubmittedData{Name: n.Name, Project: n.Project, Tier: tier, Slots: n.Slots, Segments: n.Segments,
		Argv: n.Argv, StartAfter: n.StartAfter.UTC(), OffPeak: n.OffPeak, Status: Queued}
	q := s.quotas(p, now)
	out := Submitted{Warnings: q.warnings(actor, n.Project)}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if n.Every != "" {
		spec, err := ParseEvery(n.Every)
		if err != nil {
			return nil, Submitted{}, err
		}
		id := ids.New("sched", writer, n.Name, now, len(s.Schedules), s.exists)
		sc := &Schedule{ID: id, Every: n.Every, Job: d, Owner: actor, Created: now}
		out.ID, out.Schedule, out.NextAt = id, id, spec.Next(sc.base(), p.Zone)
		return []eventlog.Draft{{Type: TypeScheduleCreated, Subject: id, Data: ScheduleData{Every: n.Every, Job: d}}}, out, nil
	}
	if n.StartAfter.After(now) {
		d.Status = Scheduled
	}
	out.ID, out.Status = ids.New("job", writer, n.Name, now, s.jobCount(), s.exists), d.Status
	return []eventlog.Draft{{Type: TypeSubmitted, Subject: out.ID, Data: d}}, out, nil
}

// Job returns a job or not_found.
func (s *State) Job(id string) (*Job, error) {
	if j := s.Jobs[id]; j != nil {
		return j, nil
	}
	return nil, fault.NotFound("job", id)
}

// mayAct is the rule for cancel, pause, resume and edit: its owner or an admin.
func (s *State) mayAct(p Policy, id, actor, what string) (*Job, error) {
	s.take(id)
	j, err := s.Job(id)
	if err != nil {
		return nil, err
	}
	if j.Owner != actor && !p.Admin(actor) {
		return nil, unauthorized(j, actor, what)
	}
	return j, nil
}

func draft(typ string, j *Job, data any) eventlog.Draft {
	if data == nil {
		data = struct{}{}
	}
	return eventlog.Draft{Type: typ, Subject: j.ID, Data: data}
}

// Edit changes what is set; nil fields are left alone.
type Edit struct {
	StartAfter *time.Time
	Tier       *Tier
	OffPeak    *bool
	Slots      *int
}

// EditJob is spool job edit: before the job runs (scheduled, queued or paused).
func EditJob(s *State, p Policy, id string, e Edit, actor string, now time.Time) ([]eventlog.Draft, error) {
	j, err := s.mayAct(p, id, actor, "edit")
	if err != nil {
		return nil, err
	}
	if j.Status != Scheduled && j.Status != Queued && j.Status != Paused {
		return nil, fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
			fmt.Sprintf("job %s is %s: a job is edited while scheduled, queued or paused", j.ID, j.Status),
			"job_id", j.ID, "current_state", string(j.Status))
	}
	d := EditedData{StartAfter: e.StartAfter, OffPeak: e.OffPeak, Slots: e.Slots}
	if e.Tier != nil {
		t, err := ValidateTier(string(*e.Tier))
		if err != nil {
			return nil, err
		}
		if t == Urgent && j.Tier != Urgent {
			if err := s.mayUrgent(p, actor, j.ID, "raise a job to urgent"); err != nil {
				return nil, err
			}
		}
		d.Tier = &t
	}
	if e.Slots != nil {
		if err := s.validateSlots(p, *e.Slots); err != nil {
			return nil, err
		}
	}
	if e.StartAfter != nil {
		at := e.StartAfter.UTC()
		d.StartAfter = &at
		to := j.Status
		switch {
		case j.Status == Queued && at.After(now):
			to = Scheduled
		case j.Status == Scheduled && !at.After(now):
			to = Queued
		}
		if to != j.Status {
			d.Status = &to
		}
	}
	if d == (EditedData{}) {
		return nil, fault.Usagef(CodeNothingToEdit, "nothing to edit: pass --start-after, --priority, --off-peak or --gpus")
	}
	return []eventlog.Draft{draft(TypeEdited, j, d)}, nil
}

// Move is where spool job move puts a job: exactly one of the four.
type Move struct {
	Before, After string
	Top, Bottom   bool
}

// MoveJob is spool job move (admins): the job takes a place next to
// another, and that job's tier. --before and --after are in the order job
// list shows (dispatch order, which fair share and quotas make differ from
// the order jobs entered the queue): the job lands as near that neighbour
// as the dispatch rule allows (place). --top and --bottom are before the
// first and after the last job of the queue.
func MoveJob(s *State, p Policy, id string, m Move, actor string, now time.Time) ([]eventlog.Draft, error) {
	n := 0
	for _, set := range []bool{m.Before != "", m.After != "", m.Top, m.Bottom} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fault.Usagef(CodeInvalidMove, "say where: exactly one of --before JOB, --after JOB, --top, --bottom")
	}
	if !p.Admin(actor) {
		return nil, adminOnly(actor, "reorder the queue")
	}
	j, err := s.Job(id)
	if err != nil {
		return nil, err
	}
	waiting := func(j *Job) bool { return j.Status == Queued || j.Status == Paused }
	if !waiting(j) {
		return nil, fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
			fmt.Sprintf("job %s is %s: only queued and paused jobs have a place in the queue", j.ID, j.Status),
			"job_id", j.ID, "current_state", string(j.Status))
	}
	var line []*Job // the queue without j, paused jobs in their places
	for _, o := range s.Jobs {
		if o != j && waiting(o) {
			line = append(line, o)
		}
	}
	if len(line) == 0 {
		return nil, nil
	}
	sortQueue(line)
	var d MovedData
	switch {
	case m.Top:
		d = MovedData{Order: line[0].Order - int64(time.Second), Tier: line[0].Tier}
	case m.Bottom:
		d = MovedData{Order: line[len(line)-1].Order + int64(time.Second), Tier: line[len(line)-1].Tier}
	default:
		other, before := m.Before, true
		if other == "" {
			other, before = m.After, false
		}
		if other == id {
			return nil, fault.Usagef(CodeInvalidMove, "a job cannot move next to itself")
		}
		o, err := s.Job(other)
		if err != nil {
			return nil, err
		}
		if !waiting(o) {
			return nil, fault.New(CodeInvalidMove, nil, fmt.Sprintf("job %s is %s: it has no place in the queue to move next to", o.ID, o.Status), "job_id", o.ID)
		}
		d = s.place(p, j, o, line, before, now)
	}
	return []eventlog.Draft{draft(TypeMoved, j, d)}, nil
}

// place finds j's order in ref's tier that lands it right before (or
// after) ref in the order job list shows. The slots are the gaps of line
// (the queue without j, in queue order) within ref's tier; a moved job
// goes no earlier for a later slot, so the gap is found by bisection,
// each probe a forecast of the queue with j there. The gap next to ref in
// queue order is tried first: without fair share or quotas in the way,
// it is the answer, and a paused job's list place is its queue place.
func (s *State) place(p Policy, j, ref *Job, line []*Job, before bool, now time.Time) MovedData {
	lo, hi, at := -1, 0, 0 // ref's tier is line[lo:hi]; ref is line[at]
	for i, x := range line {
		if x.Tier == ref.Tier {
			if lo < 0 {
				lo = i
			}
			hi = i + 1
		}
		if x == ref {
			at = i
		}
	}
	// gap k is just before line[k], lo <= k <= hi.
	order := func(k int) int64 {
		switch {
		case k == lo:
			return line[lo].Order - int64(time.Second)
		case k == hi:
			return line[hi-1].Order + int64(time.Second)
		}
		return mid(line[k-1].Order, line[k].Order)
	}
	// probe says where j lands for gap k: -1 just before ref, 1 just
	// after, -2 or 2 further from it on that side.
	probe := func(k int) int {
		moved := *j
		moved.Order, moved.Tier, moved.Moved = order(k), ref.Tier, true
		jobs := maps.Clone(s.Jobs)
		jobs[j.ID] = &moved
		alt := *s
		alt.Jobs = jobs
		v := alt.view(p, now)
		pj := slices.IndexFunc(v.order, func(w *waiting) bool { return w.j == &moved })
		pr := slices.IndexFunc(v.order, func(w *waiting) bool { return w.j == ref })
		switch {
		case pj == pr-1:
			return -1
		case pj < pr:
			return -2
		case pj == pr+1:
			return 1
		}
		return 2
	}
	want, k := -1, at
	if !before {
		want, k = 1, at+1
	}
	// A paused job keeps its place in queue order (list shows the paused
	// ones so): the gap next to ref is the answer.
	if j.Status == Queued && ref.Status == Queued && probe(k) != want {
		// The first gap that lands j after ref: before ref is the gap
		// before it.
		a, b := lo, hi+1
		for a < b {
			m := int(uint(a+b) >> 1)
			if probe(m) > 0 {
				b = m
			} else {
				a = m + 1
			}
		}
		k = a // j after ref from gap a on; none: a == hi+1
		if before || k > hi {
			k--
		}
		k = max(lo, min(k, hi))
	}
	return MovedData{Order: order(k), Tier: ref.Tier}
}

func mid(a, b int64) int64 { return a + (b-a)/2 }

// CancelJob is spool job cancel: at once unless it runs; a running job
// gets the grace to finish its segment, then its worker stops it.
func CancelJob(s *State, p Policy, id, actor string, now time.Time) ([]eventlog.Draft, error) {
	j, err := s.mayAct(p, id, actor, "cancel")
	if err != nil {
		return nil, err
	}
	switch {
	case j.Status.Held():
		if j.CancelRequested {
			return nil, nil
		}
		return []eventlog.Draft{draft(TypeCancelRequested, j, CancelData{GraceUntil: now.Add(p.CancelGrace).UTC()})}, nil
	case !CanTransition(j.Status, Cancelled):
		return nil, invalidTransition(j, Cancelled)
	}
	return []eventlog.Draft{draft(TypeCancelled, j, nil)}, nil
}

// PauseJob is spool job pause: a queued job at once, a running one after
// its current segment.
func PauseJob(s *State, p Policy, id, actor string) ([]eventlog.Draft, error) {
	j, err := s.mayAct(p, id, actor, "pause")
	if err != nil {
		return nil, err
	}
	switch {
	case j.Status.Held():
		if j.PauseRequested || j.CancelRequested {
			return nil, nil
		}
		return []eventlog.Draft{draft(TypePauseRequested, j, nil)}, nil
	case !CanTransition(j.Status, Paused):
		return nil, invalidTransition(j, Paused)
	}
	return []eventlog.Draft{draft(TypePaused, j, nil)}, nil
}

// ResumeJob is spool job resume: a paused job goes back to its place in
// the queue; a running job asked to pause goes on.
func ResumeJob(s *State, p Policy, id, actor string) ([]eventlog.Draft, error) {
	j, err := s.mayAct(p, id, actor, "resume")
	if err != nil {
		return nil, err
	}
	if j.PauseRequested && j.Status.Held() {
		return []eventlog.Draft{draft(TypeResumed, j, nil)}, nil
	}
	if j.Status != Paused {
		return nil, invalidTransition(j, Queued)
	}
	return []eventlog.Draft{draft(TypeResumed, j, nil)}, nil
}

// RetryJob is spool job retry: a failed job goes back to the queue, at its
// tier's end, keeping its completed segments; its next dispatch starts the
// first unfinished one (the one that failed). Its owner or an admin; an
// urgent job counts against scheduler.urgent_limit again.
func RetryJob(s *State, p Policy, id, actor string) ([]eventlog.Draft, error) {
	j, err := s.mayAct(p, id, actor, "retry")
	if err != nil {
		return nil, err
	}
	if j.Status != Failed {
		return nil, fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
			fmt.Sprintf("job %s is %s: only a failed job is retried", j.ID, j.Status),
			"job_id", j.ID, "current_state", string(j.Status), "target_state", string(Queued))
	}
	if j.Tier == Urgent {
		if err := s.mayUrgent(p, actor, j.ID, "retry an urgent job"); err != nil {
			return nil, err
		}
	}
	return []eventlog.Draft{draft(TypeRetried, j, RetriedData{Segment: j.NextSegment(), Done: j.DoneSegments()})}, nil
}

// Tick is what the clock alone decides: scheduled jobs whose time came
// enter the queue, jobs whose worker's lease ran out, or whose worker's
// process is in gone (the service found it dead on this machine), go back
// to it (or end, when cancelled), and due occurrences of schedules are
// submitted, once each however many processes tick.
func Tick(s *State, p Policy, now time.Time, gone Gone) []eventlog.Draft {
	var out []eventlog.Draft
	for _, j := range s.decided().Jobs {
		held := j.Status.Held()
		switch {
		case j.Status == Scheduled && !j.StartAfter.After(now):
			out = append(out, draft(TypeReleased, j, nil))
		case held && (j.leaseRunOut(now) || j.Holder != nil && gone[*j.Holder]):
			reason := ReasonLeaseExpired
			if !j.leaseRunOut(now) {
				reason = ReasonWorkerGone // dead before its lease ran out
			}
			if j.CancelRequested {
				out = append(out, draft(TypeCancelled, j, nil))
			} else {
				out = append(out, draft(TypeRequeued, j, RequeuedData{Reason: reason}))
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Subject < out[b].Subject })
	for _, id := range slices.Sorted(maps.Keys(s.Schedules)) {
		sc := s.Schedules[id]
		at, ok := sc.Due(p.Zone, now)
		if !ok {
			continue
		}
		d := sc.Job
		d.Owner, d.Schedule, d.Occurrence, d.StartAfter, d.Status = sc.Owner, sc.ID, at, time.Time{}, Queued
		occ := at.UTC().Format(time.RFC3339)
		jid := "job-" + strings.TrimPrefix(sc.ID, "sched-") + "-" + occurrenceID(at)
		out = append(out, eventlog.Draft{Type: TypeSubmitted, Subject: jid, Idem: "schedule:" + sc.ID + ":" + occ, Data: d})
	}
	return out
}

// leaseRunsOutAt is the first instant at which j's lease has run out: a
// job's lease holds through LeaseUntil itself.
func (j *Job) leaseRunsOutAt() time.Time { return j.LeaseUntil.Add(time.Nanosecond) }

// leaseRunOut reports whether j's lease has run out at now (Tick requeues
// it; NextTick wakes at leaseRunsOutAt).
func (j *Job) leaseRunOut(now time.Time) bool { return !now.Before(j.leaseRunsOutAt()) }

// NextTick is the first time after now at which Tick has something to
// decide (zero: nothing waits on the clock): a start_after reached, a lease
// run out, a schedule's next occurrence.
func NextTick(s *State, p Policy, now time.Time) time.Time {
	var at time.Time
	earliest := func(t time.Time) {
		if t.After(now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, j := range s.Jobs {
		switch {
		case j.Status == Scheduled:
			earliest(j.StartAfter)
		case j.Status.Held():
			earliest(j.leaseRunsOutAt())
		}
	}
	for _, sc := range s.Schedules {
		if e, err := ParseEvery(sc.Every); err == nil {
			earliest(e.Next(sc.base(), p.Zone))
		}
	}
	return at
}

// occurrenceID names an occurrence in its job's id: to the minute, or to
// the second for a schedule finer than a minute (@every 30s), whose
// occurrences in one minute would otherwise share an id, and all but the
// first be dropped when folded.
func occurrenceID(at time.Time) string {
	at = at.UTC()
	if at.Second() == 0 {
		return at.Format("20060102t1504")
	}
	return at.Format("20060102t150405")
}

// Claim is one dispatch: yields requested, and the job handed out.
type Claim struct {
	Job        *Job      `json:"job"`
	Segment    int       `json:"segment"`
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
}

// ClaimJob records what the clock decided (Tick), then dispatches the
// next job for a worker with total slots, its first unfinished segment
// started. A nil claim means nothing fits now.
func ClaimJob(s *State, p Policy, worker string, total int, now time.Time) ([]eventlog.Draft, *Claim, error) {
	return ClaimJobHeld(s, p, worker, nil, nil, total, now)
}

// ClaimJobHeld is ClaimJob by a worker whose process is holder (nil: not
// recorded, as for a process that does not run the job itself), ticking
// with gone, the worker processes known dead (Tick).
func ClaimJobHeld(s *State, p Policy, worker string, holder *ProcRecord, gone Gone, total int, now time.Time) ([]eventlog.Draft, *Claim, error) {
	if total < 1 || total > SlotLimit {
		return nil, nil, InvalidGPUs(total, 0)
	}
	drafts := Tick(s, p, now, gone)
	if w := s.Workers[worker]; w == nil || w.Slots != total {
		drafts = append(drafts, eventlog.Draft{Type: TypeWorkerSeen, Subject: "worker/" + worker, Data: WorkerData{Slots: total}})
	}
	o := s
	if len(drafts) > 0 { // most claims find nothing for the clock: no copy
		var err error
		if o, err = s.Overlay(drafts, "", now); err != nil {
			return nil, nil, err
		}
	}
	dec := o.Decide(p, Offer{Worker: worker, Free: total - o.Busy(worker), Total: total}, now)
	for _, y := range dec.Yield {
		drafts = append(drafts, draft(TypeYieldRequested, y, nil))
	}
	if dec.Job == nil {
		return drafts, nil, nil
	}
	j := dec.Job
	c := &Claim{Job: j, Segment: j.NextSegment(), Attempt: j.Attempts + 1, Worker: worker, LeaseUntil: now.Add(p.Lease).UTC()}
	drafts = append(drafts,
		draft(TypeDispatched, j, DispatchedData{Worker: worker, LeaseUntil: c.LeaseUntil, Attempt: c.Attempt, Holder: holder}),
		draft(TypeSegmentStarted, j, SegmentData{Segment: c.Segment, Worker: worker}))
	return drafts, c, nil
}

// Release gives back the jobs a worker holds when it stops, or when it
// starts again after a crash (it runs none of them): back to the queue at
// their first unfinished segment, or cancelled when that was asked.
func Release(s *State, worker string) []eventlog.Draft {
	var out []eventlog.Draft
	for _, j := range s.Sorted() {
		if j.Worker != worker || !j.Status.Held() {
			continue
		}
		if j.CancelRequested {
			out = append(out, draft(TypeCancelled, j, nil))
		} else {
			out = append(out, draft(TypeRequeued, j, RequeuedData{Reason: ReasonWorkerGone}))
		}
	}
	return out
}

// held returns a job the worker holds (dispatched or running), taken out
// of a snapshot read lazily if need be: a worker's step reads its job
// alone.
func (s *State) held(id, worker string) (*Job, error) {
	s.take(id)
	j, err := s.Job(id)
	if err != nil {
		return nil, err
	}
	if !j.Status.Held() {
		return nil, fault.New(CodeNotRunning, nil, fmt.Sprintf("job %s is %s, not running", j.ID, j.Status), "job_id", j.ID, "status", string(j.Status))
	}
	if j.Worker != worker {
		return nil, notYours(j, worker)
	}
	return j, nil
}

// Heartbeat renews a worker's lease on a job.
func Heartbeat(s *State, p Policy, id, worker string, now time.Time) (eventlog.Draft, time.Time, error) {
	j, err := s.held(id, worker)
	if err != nil {
		return eventlog.Draft{}, time.Time{}, err
	}
	until := now.Add(p.Lease).UTC()
	return draft(TypeHeartbeat, j, LeaseData{LeaseUntil: until}), until, nil
}

// SegmentEnd is a segment's outcome as its worker saw it.
type SegmentEnd struct {
	Segment   int
	ExitCode  int
	OutputDir string
	Killed    bool // stopped for a cancel: not a failure of the job
}

// SegmentDone records a segment's end and what follows at this boundary:
// cancelled, failed, complete, paused, yielded, or the next segment started
// (next is its number, or -1 when the worker lets the job go).
func SegmentDone(s *State, id, worker string, end SegmentEnd) (drafts []eventlog.Draft, next int, err error) {
	j, err := s.held(id, worker)
	if err != nil {
		return nil, -1, err
	}
	if j.Status != Running || end.Segment != j.NextSegment() || end.Segment >= len(j.Segs) || j.Segs[end.Segment].Started.IsZero() {
		return nil, -1, fault.New(CodeNotRunning, nil, fmt.Sprintf("segment %d of job %s is not running (segment %d is next)", end.Segment, j.ID, j.NextSegment()),
			"job_id", j.ID, "segment", end.Segment)
	}
	code := end.ExitCode
	drafts = []eventlog.Draft{draft(TypeSegmentDone, j, SegmentData{Segment: end.Segment, Worker: worker, ExitCode: &code, OutputDir: end.OutputDir})}
	next = -1
	switch {
	case j.CancelRequested:
		drafts = append(drafts, draft(TypeCancelled, j, nil))
	case code != 0:
		drafts = append(drafts, draft(TypeFinished, j, FinishedData{Status: Failed, Error: fmt.Sprintf("segment %d exited with code %d", end.Segment, code)}))
	case end.Segment+1 >= j.Segments:
		drafts = append(drafts, draft(TypeFinished, j, FinishedData{Status: Complete}))
	case j.PauseRequested:
		drafts = append(drafts, draft(TypePaused, j, nil))
	case j.YieldRequested:
		drafts = append(drafts, draft(TypeRequeued, j, RequeuedData{Reason: ReasonYield}))
	default:
		next = end.Segment + 1
		drafts = append(drafts, draft(TypeSegmentStarted, j, SegmentData{Segment: next, Worker: worker}))
	}
	return drafts, next, nil
}

// Finish is an external engine's word that a job it claimed ended.
func Finish(s *State, id, worker string, status Status, msg string) (eventlog.Draft, error) {
	j, err := s.held(id, worker)
	if err != nil {
		return eventlog.Draft{}, err
	}
	if status != Complete && status != Failed {
		return eventlog.Draft{}, fault.New(CodeInvalidStatus, nil, fmt.Sprintf("--status must be complete or failed, got %q", status), "status", string(status))
	}
	return draft(TypeFinished, j, FinishedData{Status: status, Error: msg}), nil
}

// StoppedForCancel is a worker's word that it stopped a cancelled job mid-segment.
func StoppedForCancel(s *State, id, worker string) (eventlog.Draft, error) {
	j, err := s.held(id, worker)
	if err != nil {
		return eventlog.Draft{}, err
	}
	return draft(TypeCancelled, j, nil), nil
}

// SetQuota is spool job quota set (admins).
func SetQuota(s *State, p Policy, q Quota, actor string) (eventlog.Draft, error) {
	if !p.Admin(actor) {
		return eventlog.Draft{}, adminOnly(actor, "set quotas")
	}
	switch {
	case q.Scope != "user" && q.Scope != "project" || strings.TrimSpace(q.Name) == "":
		return eventlog.Draft{}, fault.Usagef(CodeInvalidQuota, "a quota is on a user (--user U) or a project (--project P)")
	case q.Daily < 0 || q.Weekly < 0 || q.Daily == 0 && q.Weekly == 0:
		return eventlog.Draft{}, fault.Usagef(CodeInvalidQuota, "a quota needs --daily or --weekly, a positive duration such as 8h")
	}
	return eventlog.Draft{Type: TypeQuotaSet, Subject: "quota/" + q.Key(), Data: QuotaData(q)}, nil
}

// RemoveQuota is spool job quota rm (admins).
func RemoveQuota(s *State, p Policy, scope, name, actor string) (eventlog.Draft, error) {
	if !p.Admin(actor) {
		return eventlog.Draft{}, adminOnly(actor, "remove quotas")
	}
	q := s.Quotas[scope+"/"+name]
	if q == nil {
		return eventlog.Draft{}, fault.NotFound("quota", scope+"/"+name)
	}
	return eventlog.Draft{Type: TypeQuotaRemoved, Subject: "quota/" + q.Key(), Data: QuotaData{Scope: q.Scope, Name: q.Name}}, nil
}

// RemoveSchedule is spool job schedule rm: its owner or an admin. Jobs it
// submitted stay.
func RemoveSchedule(s *State, p Policy, id, actor string) (eventlog.Draft, error) {
	sc := s.Schedules[id]
	if sc == nil {
		return eventlog.Draft{}, fault.NotFound("schedule", id)
	}
	if sc.Owner != actor && !p.Admin(actor) {
		return eventlog.Draft{}, fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
			fmt.Sprintf("%s may not remove schedule %s (owned by %s): only its owner or an admin may", actor, id, sc.Owner),
			"schedule", id, "owner", sc.Owner, "actor", actor)
	}
	return eventlog.Draft{Type: TypeScheduleRemoved, Subject: id, Data: struct{}{}}, nil
}
