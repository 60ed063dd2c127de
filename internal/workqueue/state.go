package workqueue

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/table"
	"github.com/spoolhq/spool/projections"
)

// Task is one task of the embedded tracker. The fields ready and next look
// at are in Task itself; the rest (TaskDetail) is decoded from the snapshot
// only when a command needs it: most commands never do, and decoding them
// for 10,000 tasks would cost more than the command's real work.
type Task struct {
	ID         string
	Title      string
	Status     string
	Priority   int
	Type       string
	Labels     []string // sorted, unique
	CreatedAt  time.Time
	Parent     string
	Blockers   []Dep     // sorted by ID
	Links      []Link    // dependencies that do not block (from a beads import)
	LeaseUntil time.Time // while a claim holds it (in_progress)

	detail    *TaskDetail // nil until Detail is called on a task read from a snapshot
	rawDetail string      // the encoded detail, while detail is nil
	baseRefs  []string    // read from a snapshot: the tasks that named it then (as parent, blocker or link)
	ord       int32       // its records' ordinal in a spill
	at        int32       // its record's position in the snapshot's table + 1; -1: none there; 0: not known

	listCore, listTail string // its listing (listing.go) as its record saved it; "" once changed
}

// TaskDetail holds the fields few commands need.
type TaskDetail struct {
	Description string
	Design      string
	Acceptance  string
	Notes       string
	ExternalRef string // bd's reference to another system's issue (gh-9, jira-ABC)
	Assignee    string
	CreatedBy   string
	Owner       string // bd's owner: the human responsible (bd: git user.email); spool task add: the creator
	UpdatedAt   time.Time
	ClosedAt    time.Time
	CloseReason string
	ParentAt    time.Time // when the parent was set, if not at creation (an import)
	ParentBy    string

	// comments are kept encoded, as the snapshot's records hold them:
	// half a million comments as Go values were the largest part of a
	// replay's heap, and most commands print none. Comments reads them.
	comments    []byte
	numComments int
}

// AddComment appends c to the task's comments.
func (x *TaskDetail) AddComment(c Comment) {
	w := table.Enc{Buf: x.comments}
	w.Int(c.ID)
	w.Str(c.Author)
	w.Str(c.Text)
	w.Time(c.At)
	x.comments = w.Buf
	x.numComments++
}

// NumComments is how many comments the task has.
func (x *TaskDetail) NumComments() int { return x.numComments }

// Comments yields the task's comments, oldest first.
func (x *TaskDetail) Comments() iter.Seq[Comment] {
	return func(yield func(Comment) bool) {
		r := table.NewDec(unsafe.String(unsafe.SliceData(x.comments), len(x.comments)))
		for range x.numComments {
			if !yield(readComment(r)) {
				return
			}
		}
	}
}

// readComment reads what AddComment appended.
func readComment(r *table.Dec) Comment {
	return Comment{ID: r.Int(), Author: r.Str(), Text: r.Str(), At: r.Time()}
}

// Link is a dependency that does not block: related, discovered-from, …
type Link struct {
	ID   string    `json:"id"`
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	By   string    `json:"by,omitempty"`
}

// Detail returns the task's detail, decoding it on first use.
func (t *Task) Detail() *TaskDetail {
	if t.detail == nil {
		t.detail = decodeDetail(t.ID, t.rawDetail)
		t.rawDetail = ""
	}
	return t.detail
}

// Dep is a "blocks" dependency: the task waits for Blocker to close.
type Dep struct {
	ID string
	At time.Time
	By string
}

// Comment is a note on a task; IDs run across all tasks, as beads' do.
type Comment struct {
	ID     int64
	Author string
	Text   string
	At     time.Time
}

// HasLabel reports whether the task carries label l. Tasks have a handful
// of labels: a plain loop beats a binary search.
func (t *Task) HasLabel(l string) bool {
	for _, x := range t.Labels {
		if x == l {
			return true
		}
	}
	return false
}

// Entry is the queue's history of one task (status, attempts, the last
// attempt and its error), for native tasks and for tasks of an external source alike.
type Entry struct {
	ID            string
	Status        HistStatus
	Attempts      int       // claims, reset by retry and unblock --reset-attempts
	Failures      int       // failed attempts (progressive policy's counter)
	LastAttempt   time.Time // when the last attempt was claimed
	LastEndedAt   time.Time // when it ended: succeeded, failed, lease expired, released
	LastFailureAt time.Time
	LastError     string
	Worker        string
	Actor         string // who claimed: only they may finish the attempt
	LeaseUntil    time.Time
	QueuedAt      time.Time // set when the progressive policy requeues
	Priority      int       // priority at the claim, lowered by demotion
	Blocked       bool
	BlockReason   string        // why it was blocked, while it is
	Pending       []PendingSync // requests to a bd/br source not yet done, oldest first
	SyncFailed    []PendingSync // requests given up after MaxSyncAttempts failures
	Hooks         []PendingHook // notification hooks not finished, oldest first
	// Demoted says the progressive policy lowered the priority since the
	// last retry or unblock: from PriorityBefore (where retry and unblock
	// put it back) to DemotedTo, its last demotion.
	Demoted        bool
	PriorityBefore int
	DemotedTo      int
}

func (h *Entry) dropPending(request string) {
	h.Pending = slices.DeleteFunc(h.Pending, func(p PendingSync) bool { return p.Request == request })
	if len(h.Pending) == 0 {
		h.Pending = nil
	}
}

// PendingSync is a task.sync_requested without its task.synced.
type PendingSync struct {
	Request      string // the request's event id
	Failures     int
	LastError    string
	LastFailedAt time.Time // when the source last refused it: the next try waits (SyncWait)
	SyncData
}

// State is what the Decide functions see: the tracker's tasks and the
// queue's history. They are two projections ("tasks" and "history"), so
// that a command about tasks does not read the history, and the other way
// round; a side the command did not open holds nothing.
//
// Nothing outside the package reaches a side's maps: decisions read through
// Task, Entry and the rest (the Tracker and History interfaces name what
// each side offers), and only the fold writes. Read from a snapshot, a
// side keeps the snapshot's table open and decodes a task or an entry when
// it is first asked for; the side caches it, which is not a change of the
// state: the decoded value is the table's. Tasks and Entries decode
// the rest.
type State struct {
	trk *trackerSide
	hst *historySide
	// IDs answers whether a task exists when the tasks were not opened
	// (the task-ids projection: a few bytes a task rather than the tasks).
	IDs TaskIndex
}

// trackerSide is the tracker's side of a state. Combine shares it, so that
// what one holder decodes is decoded once for every state that holds it.
type trackerSide struct {
	m          map[string]*Task // decoded, changed or new since the table; nil: not opened
	lazy       *lazyTasks       // the snapshot's tasks not yet in m; nil: m is whole
	madeWhole  bool             // lazy was dropped by a read of every task (projections.Expander)
	spill      *spill           // where the tasks' titles and details are, in a fold that spills
	commentSeq int64            // the last comment's id
}

// historySide is the queue's side of a state, shared as trackerSide is.
type historySide struct {
	m         map[string]*Entry // decoded, changed or new since the table; nil: not opened
	table     *historyTable     // the snapshot's entries not yet in m; nil: m is whole
	madeWhole bool              // table was dropped by a read of every entry
}

// StateOf is a state holding these tasks and entries, shared rather than
// copied: for benchmarks and tests that build a state by hand.
func StateOf(tasks []*Task, entries []*Entry) *State {
	s := NewState()
	for _, t := range tasks {
		s.trk.m[t.ID] = t
	}
	for _, h := range entries {
		s.hst.m[h.ID] = h
	}
	return s
}

// Combine is the state a command decides on: the tracker's side of tasks
// and the queue's side of history; a side the command did not open is nil.
func Combine(tasks, history *State, ids TaskIndex) *State {
	s := &State{trk: &trackerSide{}, hst: &historySide{}, IDs: ids}
	if tasks != nil {
		s.trk = tasks.trk
	}
	if history != nil {
		s.hst = history.hst
	}
	return s
}

// Task returns the task with this id, or nil.
func (s *State) Task(id string) *Task {
	if t, ok := s.trk.m[id]; ok || s.trk.lazy == nil {
		return t
	}
	i, rec := s.trk.find(id)
	if i < 0 {
		return nil
	}
	t := decodeTask(rec())
	t.at = int32(i) + 1
	s.trk.m[id] = t
	return t
}

// position is where task id's record is in the snapshot's table (-1: it
// has none), as find says, but known without a read for a task decoded or
// made since: ready asks it of every such task.
func (s *State) position(id string) int {
	if t := s.trk.m[id]; t != nil && t.at != 0 {
		return max(int(t.at)-1, -1)
	}
	if s.trk.lazy == nil {
		return -1 // no table: every task is decoded, and each knows its place (allTasks)
	}
	i, _ := s.trk.find(id)
	return i
}

// decodeInto decodes id's record of t into m and returns it; nil when t
// has none.
func decodeInto[V any](m map[string]*V, t *table.Table, id string, decode func(*table.Dec) *V) *V {
	i := t.Find(id)
	if i < 0 {
		return nil
	}
	v := decode(t.Record(i))
	m[id] = v
	return v
}

// decodeAll decodes into m every record of t it does not hold yet.
func decodeAll[V any](m map[string]*V, t *table.Table, decode func(*table.Dec) *V) {
	for i, r := range t.All() {
		if _, ok := m[t.IDs[i]]; !ok {
			m[t.IDs[i]] = decode(r)
		}
	}
}

// notClosed reports whether task id exists and is not closed. A snapshot's
// task is not decoded for it (its index lists the tasks not closed): ready
// asks it of the blockers of every blocked task it passes, and in a queue
// whose ready work is done first, the top of the open tasks is blocked.
func (s *State) notClosed(id string) bool {
	if t, ok := s.trk.m[id]; ok || s.trk.lazy == nil {
		return t != nil && t.Status != StatusClosed
	}
	i, _ := s.trk.find(id)
	return i >= 0 && s.trk.isOpen(i)
}

// exists reports whether task id exists, as notClosed does, without
// decoding a snapshot's task.
func (s *State) exists(id string) bool {
	if t, ok := s.trk.m[id]; ok || s.trk.lazy == nil {
		return t != nil
	}
	i, _ := s.trk.find(id)
	return i >= 0
}

// closedTask reports whether task id exists and is closed, as notClosed
// does, without decoding a snapshot's task.
func (s *State) closedTask(id string) bool {
	if t, ok := s.trk.m[id]; ok || s.trk.lazy == nil {
		return t != nil && t.Status == StatusClosed
	}
	i, _ := s.trk.find(id)
	return i >= 0 && !s.trk.isOpen(i)
}

// Entry returns the task's history, or nil.
func (s *State) Entry(id string) *Entry {
	if h, ok := s.hst.m[id]; ok || s.hst.table == nil {
		return h
	}
	return decodeInto(s.hst.m, s.hst.table.Table, id, decodeEntry)
}

// allTasks decodes every task and returns the side's map of them, by id,
// which only the package reads.
func (s *State) allTasks() map[string]*Task {
	if s.trk.lazy != nil {
		tt := s.trk.table()
		for i, r := range tt.All() {
			if _, ok := s.trk.m[tt.IDs[i]]; !ok {
				t := decodeTask(r)
				t.at = int32(i) + 1 // an overlay written later still names its place
				s.trk.m[tt.IDs[i]] = t
			}
		}
		s.trk.lazy, s.trk.madeWhole = nil, true
	}
	return s.trk.m
}

// eachTask yields every task in id order, given more, the ids of Tasks
// sorted (decodedIDs). A task the table holds and no command decoded yet
// is decoded for the yield alone, out of a buffer the next one reuses: the
// caller must not keep it or its strings. A save thus holds one such task
// at a time, not the table.
func (s *State) eachTask(more []string) iter.Seq[*Task] {
	return s.eachTaskOf(more, true)
}

// eachTaskOf is eachTask; without texts, a spilled task's texts and
// comments may be left out.
func (s *State) eachTaskOf(more []string, texts bool) iter.Seq[*Task] {
	if s.trk.spill != nil {
		return s.trk.spill.each(s, more, texts)
	}
	return func(yield func(*Task) bool) {
		k, ok := 0, true
		if tt := s.trk.table(); tt != nil {
			tt.Scan(func(i int, d *table.Dec) bool {
				id := tt.IDs[i]
				for ; ok && k < len(more) && more[k] < id; k++ {
					ok = yield(s.trk.m[more[k]])
				}
				switch {
				case !ok:
				case k < len(more) && more[k] == id:
					ok, k = yield(s.trk.m[id]), k+1
				default:
					ok = yield(decodeTask(d))
				}
				return ok
			})
		}
		for ; ok && k < len(more); k++ {
			ok = yield(s.trk.m[more[k]])
		}
	}
}

// decodedIDs are the ids of Tasks (decoded, changed or new since the
// table), sorted.
func (s *State) decodedIDs() []string {
	return slices.Sorted(maps.Keys(s.trk.m))
}

// allHistory decodes every entry and returns the side's map of them, as
// allTasks.
func (s *State) allHistory() map[string]*Entry {
	if s.hst.table != nil {
		decodeAll(s.hst.m, s.hst.table.Table, decodeEntry)
		s.hst.table, s.hst.madeWhole = nil, true
	}
	return s.hst.m
}

// baseRefs are the ids of the tasks that named id (as parent, blocker or
// link) when the snapshot was written.
func (s *State) baseRefs(id string) []string {
	if s.trk.lazy == nil {
		return nil
	}
	if t := s.trk.m[id]; t != nil {
		return t.baseRefs
	}
	i, rec := s.trk.find(id)
	if i < 0 {
		return nil
	}
	_, refs := decodeRecord(rec())
	return refs
}

// Projection names.
const (
	Name      = "tasks"   // the tracker: tasks.json in the state directory
	QueueName = "history" // the queue's history: history.json
)

// Their state grows with the number of tasks, so saves are amortized (see
// projections.Spec.Amortize).
var (
	Spec      = projections.Spec{Name: Name, Version: 24, Amortize: 1000, Overlay: overlayEvery, New: func() projections.Projection { return NewTasksProjection(NewState()) }}
	QueueSpec = projections.Spec{Name: QueueName, Version: 13, Amortize: 1000, Overlay: overlayEvery, New: func() projections.Projection { return NewQueueProjection(NewState()) }}
)

// TasksProjection folds the tracker's side of every event.
type TasksProjection struct {
	s *State
	// dups are creations of a task id that exists (forged, or two writers'
	// hashes colliding): the first creation stands and verify reports them.
	dups    []string
	cow     copyOnWrite
	scratch string  // where a save gathers the listings (ScratchIn); "" in memory
	changed changes // since the table was opened, for an overlay (overlay.go)
}

// NewTasksProjection wraps a state.
func NewTasksProjection(s *State) *TasksProjection { return &TasksProjection{s: s} }

// Expanded says whether a read decoded every task of the snapshot the
// state was opened on (projections.Expander).
func (p *TasksProjection) Expanded() bool { return p.s.trk.madeWhole }

// Expanded says whether a read decoded every entry of the snapshot the
// state was opened on.
func (p *QueueProjection) Expanded() bool { return p.s.hst.madeWhole }

// State is the tracker's state as the fold has it: what a decision reads
// under the log's lock. The next event changes it.
func (p *TasksProjection) State() *State { return p.s }

// Snapshot is the tracker's state now, for a reader to keep: later events
// fold into a copy, never into it.
func (p *TasksProjection) Snapshot() *State { return p.cow.share(p.s) }

func (p *TasksProjection) Apply(e *eventlog.Event) error {
	if e.Type == TypeCreated && e.Idem != KeyedCreation(e.Subject) && len(p.dups) < maxReported && p.s.HasTask(e.Subject) {
		p.dups = append(p.dups, fmt.Sprintf("task %s created again by event %s (writer %s, seq %d): the first creation stands", e.Subject, e.ID, e.Writer, e.Seq))
	}
	if p.s.trk.spill != nil {
		return p.s.trk.spill.apply(p.s, e) // a spilling fold is a rebuild's, never shared
	}
	if isTaskEvent(e) {
		p.s = p.cow.own(p.s, e.Subject)
		p.changed.add(e.Subject)
	}
	p.s.applyTask(e)
	return nil
}

// copyOnWrite folds events into a copy of a state that was handed out, so
// that what a reader holds never changes under it (git-bug's snapshots
// under a read lock are the model): the maps are copied when the first
// event after the hand-out arrives, a task or an entry when an event first
// changes it. Until a state is handed out it costs nothing.
type copyOnWrite struct {
	shared bool            // the state was handed out and not yet copied
	copied map[string]bool // ids the copy owns since; nil: no copy made
}

// share marks s handed out and returns it.
func (c *copyOnWrite) share(s *State) *State {
	c.shared, c.copied = true, nil
	return s
}

// own returns the state to fold an event about id into: s itself, or the
// copy made when s was handed out, which then owns id's task and entry.
func (c *copyOnWrite) own(s *State, id string) *State {
	if c.shared {
		s, c.shared, c.copied = s.copyMaps(), false, map[string]bool{}
	}
	if c.copied == nil || c.copied[id] {
		return s
	}
	c.copied[id] = true
	s.ownRecords(id)
	return s
}

// copyMaps returns a copy of s whose maps are its own; the tasks and
// entries in them are still s's (ownRecords copies one).
func (s *State) copyMaps() *State {
	trk, hst := *s.trk, *s.hst
	trk.m, hst.m = maps.Clone(s.trk.m), maps.Clone(s.hst.m)
	return &State{trk: &trk, hst: &hst, IDs: s.IDs}
}

// ownRecords copies id's task and entry into s's maps, deeply enough that
// folding events into the copies leaves the originals as they were. A side
// the state did not open stays unopened.
func (s *State) ownRecords(id string) {
	if s.trk.m != nil {
		if t := s.Task(id); t != nil {
			s.trk.m[id] = t.clone()
		}
	}
	if s.hst.m != nil {
		if h := s.Entry(id); h != nil {
			s.hst.m[id] = h.clone()
		}
	}
}

// HasTask reports whether a task exists, decoding nothing.
func (p *TasksProjection) HasTask(id string) bool { return p.s.HasTask(id) }

// KeyedCreation is the idempotency key of a task whose id is derived from
// a key (ids.ForKey: a PRD's epic): every clone that makes it makes the
// same creation, so a second one is expected, not reported.
func KeyedCreation(id string) string { return "task:" + id }

// maxReported bounds what a fold keeps to report: a flood of bad events
// costs a line, not memory.
const maxReported = 100

// Invariants are what verify reports of a fresh replay: tasks created twice.
func (p *TasksProjection) Invariants() []string { return p.dups }

// TaskCount is how many tasks exist, decoding nothing.
func (p *TasksProjection) TaskCount() int { return p.s.TaskCount() }

// TaskIndex answers what spool task add needs to know.
type TaskIndex interface {
	HasTask(id string) bool
	TaskCount() int
}

func (s *State) HasTask(id string) bool {
	if s.trk.m == nil && s.IDs != nil {
		return s.IDs.HasTask(id)
	}
	if _, ok := s.trk.m[id]; ok {
		return true
	}
	if s.trk.lazy == nil {
		return false
	}
	i, _ := s.trk.find(id)
	return i >= 0
}

func (s *State) TaskCount() int {
	if s.trk.lazy == nil {
		return len(s.trk.m)
	}
	n := s.trk.lazy.sum.n
	for id := range s.trk.m {
		if s.position(id) < 0 {
			n++
		}
	}
	return n
}

// QueueProjection folds the queue's side of every event.
type QueueProjection struct {
	s       *State
	cow     copyOnWrite
	changed changes // as the TasksProjection's
}

// NewQueueProjection wraps a state.
func NewQueueProjection(s *State) *QueueProjection { return &QueueProjection{s: s} }

// State is the queue's state as the fold has it (TasksProjection.State).
func (p *QueueProjection) State() *State { return p.s }

// Snapshot is the queue's state now, for a reader to keep
// (TasksProjection.Snapshot).
func (p *QueueProjection) Snapshot() *State { return p.cow.share(p.s) }

func (p *QueueProjection) Apply(e *eventlog.Event) error {
	if isTaskEvent(e) {
		p.s = p.cow.own(p.s, e.Subject)
		p.changed.add(e.Subject)
	}
	p.s.applyEntry(e)
	return nil
}

// NewState returns an empty state.
func NewState() *State {
	return &State{trk: &trackerSide{m: map[string]*Task{}}, hst: &historySide{m: map[string]*Entry{}}}
}

func (s *State) entry(id string) *Entry {
	h := s.Entry(id)
	if h == nil {
		h = &Entry{ID: id, Status: HistPending}
		s.hst.m[id] = h
	}
	return h
}

// Apply folds one event into both sides. Unknown types and unusable data are skipped.
func (s *State) Apply(e *eventlog.Event) error {
	s.applyTask(e)
	s.applyEntry(e)
	return nil
}

// isTaskEvent reports whether e is a task's event, about a task id the
// fold takes (ValidID): an event about any other subject is skipped.
func isTaskEvent(e *eventlog.Event) bool {
	return len(e.Type) > 5 && e.Type[:5] == "task." && ValidID(e.Subject)
}

func (s *State) applyTask(e *eventlog.Event) {
	if isTaskEvent(e) {
		s.applyTaskTo(e, s.Task(e.Subject))
	}
}

// applyTaskTo is applyTask, given the task's state before (nil: none).
func (s *State) applyTaskTo(e *eventlog.Event, t *Task) {
	id := e.Subject
	if t != nil {
		t.listCore, t.listTail = "", "" // the saved listing is the task before this event
	}
	if e.Type == TypeCreated {
		var d CreatedData
		if t != nil || decodeCreated(e.Data, &d) != nil {
			return // a duplicate id or bad data: the first create wins
		}
		t = &Task{ID: id, at: -1, Title: d.Title, Status: StatusOpen, Priority: d.Priority, Type: strings.Clone(d.IssueType),
			Labels: cloneAll(NormLabels(d.Labels)), CreatedAt: e.At, Parent: strings.Clone(d.Parent),
			detail: &TaskDetail{Description: d.Description, Design: d.Design, Acceptance: d.Acceptance, Notes: d.Notes,
				ExternalRef: d.ExternalRef, Assignee: d.Assignee, CreatedBy: e.Actor, Owner: cmp.Or(d.Owner, e.Actor), UpdatedAt: e.At}}
		deps := make([]Dep, len(d.Deps))
		for i, b := range d.Deps {
			deps[i] = Dep{ID: strings.Clone(b), At: e.At, By: e.Actor}
		}
		t.addBlockers(deps)
		s.trk.m[id] = t
		return
	}
	if e.Type == TypeImported {
		var d ImportedData
		if json.Unmarshal(e.Data, &d) == nil && d.Title != "" && d.keptTimes() {
			n := s.imported(id, &d)
			n.at = -1
			if t != nil { // the task it replaces: its place in the table, and who named it there
				n.at, n.baseRefs = t.at, t.baseRefs
			}
			s.trk.m[id] = n
		}
		return
	}
	if t == nil {
		return
	}
	x := t.Detail()
	switch e.Type {
	case TypeUpdated:
		var d UpdatedData
		if decodeUpdated(e.Data, &d) != nil {
			return
		}
		if d.Title != nil {
			t.Title = *d.Title
		}
		if d.Description != nil {
			x.Description = *d.Description
		}
		if d.Design != nil {
			x.Design = *d.Design
		}
		if d.Acceptance != nil {
			x.Acceptance = *d.Acceptance
		}
		if d.Notes != nil {
			x.Notes = *d.Notes
		}
		if d.ExternalRef != nil {
			x.ExternalRef = *d.ExternalRef
		}
		if d.Assignee != nil {
			x.Assignee = *d.Assignee
		}
		if d.Priority != nil {
			t.Priority = *d.Priority
		}
		if d.Status != nil {
			t.setStatus(strings.Clone(*d.Status), e.At, "")
		}
		t.Labels = NormLabels(append(t.Labels, cloneAll(d.AddLabels)...))
		t.Labels = removeLabels(t.Labels, d.RemoveLabels)
		if d.labelsOnly() {
			return // labels are not the issue's row: bd leaves updated_at
		}
	case TypeClosed:
		var d ClosedData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		t.setStatus(StatusClosed, e.At, d.Reason)
	case TypeReopened:
		t.setStatus(StatusOpen, e.At, "")
	case TypeDepAdded, TypeDepRemoved:
		var d DepData
		if json.Unmarshal(e.Data, &d) != nil || d.Blocker == "" || d.Blocker == id {
			return
		}
		t.applyDep(x, d, e.Type == TypeDepAdded, e.At, e.Actor)
		return // as bd: a dependency, a comment or a label leaves updated_at
	case TypeReparented:
		var d ParentData
		if json.Unmarshal(e.Data, &d) != nil || d.Parent == id {
			return
		}
		t.Parent = strings.Clone(d.Parent)
		x.ParentAt, x.ParentBy = e.At, e.Actor // the parent-child dependency's time and author
		if d.Parent == "" {
			x.ParentAt, x.ParentBy = time.Time{}, ""
		}
		return // a dependency, as bd has it: updated_at stays
	case TypeCommented:
		var d CommentData
		if decodeComment(e.Data, &d) != nil {
			return
		}
		s.trk.commentSeq++
		x.AddComment(Comment{ID: s.trk.commentSeq, Author: e.Actor, Text: d.Text, At: e.At})
		return
	case TypeClaimed:
		var d ClaimedData
		if t.Status == StatusClosed || decodeClaimed(e.Data, &d) != nil || !kept(&d.LeaseUntil) {
			return // a claim made in another clone as this task was closed: closed wins
		}
		t.Status, x.Assignee, t.LeaseUntil = StatusInProgress, strings.Clone(d.Worker), d.LeaseUntil
	case TypeHeartbeat:
		var d HeartbeatData
		if t.Status != StatusInProgress || t.LeaseUntil.IsZero() || decodeHeartbeat(e.Data, &d) != nil || !kept(&d.LeaseUntil) {
			return
		}
		t.LeaseUntil = d.LeaseUntil
	case TypeSucceeded, TypeFailed, TypeLeaseExpired, TypeAbandoned, TypeReleased:
		t.unassign() // for a success, task.closed follows
	case TypeDemoted:
		var d DemotedData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		t.Priority = d.To
	case TypeBlocked:
		t.unassign()
		t.Labels = NormLabels(append(t.Labels, BlockedLabel))
	case TypeUnblocked, TypeRetried:
		t.Labels = slices.DeleteFunc(t.Labels, func(l string) bool { return l == BlockedLabel })
		if restore, ok := restoreOf(e); ok && restore != nil {
			t.Priority = *restore
		}
	default:
		return // a type from a newer spool: the task is unchanged
	}
	x.UpdatedAt = e.At
}

func (s *State) applyEntry(e *eventlog.Event) {
	if !isTaskEvent(e) {
		return
	}
	id := e.Subject
	switch e.Type {
	case TypeClosed:
		if h := s.Entry(id); h != nil && h.move(TypeClosed) {
			h.release() // closed under a worker: the claim ends
			h.LastEndedAt = e.At
		}
	case TypeReopened:
		if h := s.Entry(id); h != nil {
			h.move(TypeReopened)
		}
	case TypeImported:
		// An import sets the whole task, as the export had it: a live claim
		// ends (the task is no longer the claimant's, and no attempt is
		// counted), and Blocked is what the import says.
		h := s.Entry(id)
		var d ImportedData
		if h == nil || json.Unmarshal(e.Data, &d) != nil || d.Title == "" || !d.keptTimes() {
			return
		}
		claimEnds := h.Status == HistWorking
		unblocks := h.Blocked && d.Status != StatusBlocked && !slices.Contains(d.Labels, BlockedLabel)
		if claimEnds || unblocks {
			h.move(TypeImported) // working or blocked: pending; the flag alone goes from another
		}
		if claimEnds {
			h.release()
			h.LastEndedAt = e.At
		}
		if unblocks {
			h.Blocked, h.BlockReason = false, ""
		}
	case TypeClaimed:
		var d ClaimedData
		if decodeClaimed(e.Data, &d) != nil || !kept(&d.LeaseUntil) {
			return
		}
		h := s.entry(id)
		h.move(TypeClaimed)
		h.Attempts, h.LastAttempt = d.Attempt, e.At
		h.Worker, h.Actor, h.LeaseUntil, h.Priority = strings.Clone(d.Worker), e.Actor, d.LeaseUntil, d.Priority
	case TypeHeartbeat:
		var d HeartbeatData
		if h := s.Entry(id); h != nil && decodeHeartbeat(e.Data, &d) == nil && kept(&d.LeaseUntil) && h.move(TypeHeartbeat) {
			h.LeaseUntil = d.LeaseUntil
		}
	case TypeSucceeded:
		h := s.entry(id)
		h.move(TypeSucceeded)
		h.release()
		h.LastError, h.LastEndedAt = "", e.At
	case TypeFailed, TypeLeaseExpired:
		at, msg := e.At, ""
		if e.Type == TypeFailed {
			var d FailedData
			if decodeFailed(e.Data, &d) != nil {
				return
			}
			msg = strings.Clone(d.Error)
		} else {
			var d LeaseExpiredData
			if json.Unmarshal(e.Data, &d) != nil || !kept(&d.LeaseUntil) {
				return
			}
			at, msg = d.LeaseUntil, LeaseExpiredError
		}
		s.entry(id).fail(e.Type, at, msg)
	case TypeDemoted:
		var d DemotedData
		if json.Unmarshal(e.Data, &d) == nil {
			s.entry(id).demote(d)
		}
	case TypeAbandoned:
		s.entry(id).abandon()
	case TypeReleased:
		if h := s.Entry(id); h != nil && h.move(TypeReleased) {
			h.release()
			h.LastEndedAt = e.At
		}
	case TypeBlocked:
		var d BlockedData
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		s.entry(id).block(d, e.At)
	case TypeSyncRequested:
		var d SyncData
		if json.Unmarshal(e.Data, &d) == nil && d.Op != "" {
			h := s.entry(id)
			h.Pending = append(h.Pending, PendingSync{Request: e.ID, SyncData: d})
		}
	case TypeSynced:
		var d SyncedData
		if h := s.Entry(id); h != nil && json.Unmarshal(e.Data, &d) == nil {
			h.dropPending(d.Request)
		}
	case TypeSyncFailed:
		var d SyncFailedData
		if h := s.Entry(id); h != nil && json.Unmarshal(e.Data, &d) == nil {
			i := slices.IndexFunc(h.Pending, func(p PendingSync) bool { return p.Request == d.Request })
			if i < 0 {
				return
			}
			p := &h.Pending[i]
			p.Failures++
			p.LastError, p.LastFailedAt = d.Error, e.At
			if d.GaveUp {
				h.SyncFailed = append(h.SyncFailed, *p)
				h.dropPending(d.Request)
			}
		}
	case TypeHookRequested, TypeHookStarted, TypeHookFinished:
		s.applyHook(e)
	case TypeUnblocked, TypeRetried:
		reset := true
		restore, _ := restoreOf(e)
		if e.Type == TypeUnblocked {
			var d UnblockedData
			if json.Unmarshal(e.Data, &d) != nil {
				return
			}
			reset = d.ResetAttempts
		}
		h := s.entry(id)
		h.move(e.Type)
		h.release()
		h.Blocked, h.BlockReason = false, ""
		if restore != nil {
			h.Priority = *restore
		}
		h.Demoted, h.PriorityBefore, h.DemotedTo = false, 0, 0
		if reset {
			h.Attempts, h.Failures, h.LastError = 0, 0, ""
			h.LastFailureAt, h.QueuedAt = time.Time{}, time.Time{}
		}
	}
}

// fail records a failed attempt, by event typ (task.failed,
// task.lease_expired), that ended at at with error msg.
func (h *Entry) fail(typ string, at time.Time, msg string) {
	h.move(typ)
	h.release()
	h.Failures++
	h.LastFailureAt, h.LastEndedAt, h.LastError = at, at, msg
	if requeuedAfter(h.Failures) {
		h.QueuedAt = at
	}
}

// demote records the progressive policy lowering the priority (task.demoted).
func (h *Entry) demote(d DemotedData) {
	if !h.Demoted {
		h.Demoted, h.PriorityBefore = true, d.From
	}
	h.Priority, h.DemotedTo = d.To, d.To
}

// abandon records task.abandoned.
func (h *Entry) abandon() {
	h.move(TypeAbandoned)
	h.release()
}

// block records task.blocked, at at.
func (h *Entry) block(d BlockedData, at time.Time) {
	if h.Status == HistWorking {
		h.LastEndedAt = at // blocked under its claim: the attempt ends
	}
	h.move(TypeBlocked)
	h.release()
	h.Blocked, h.BlockReason = true, d.Reason
}

// foldDecided folds into h a draft of the kinds expiry makes, by its data
// as decided rather than its JSON: the changes applyEntry makes of its
// event, through the same methods. Effective asks it of every expired
// claim it is shown, often, and the JSON round trip of a Fork would cost
// a fifth of a selection (BenchmarkSelectExternal); TestEffectiveIsFoldOfExpire
// holds the two equal. It reports false for a draft it does not know.
func (h *Entry) foldDecided(d eventlog.Draft, at time.Time) bool {
	switch data := d.Data.(type) {
	case LeaseExpiredData:
		h.fail(TypeLeaseExpired, data.LeaseUntil, LeaseExpiredError)
	case AbandonedData:
		h.abandon()
	case BlockedData:
		h.block(data, at)
	case DemotedData:
		h.demote(data)
	default:
		return false
	}
	return true
}

// restoreOf reads the priority an unblock or a retry puts back (nil:
// none); ok is false for data that cannot be read.
func restoreOf(e *eventlog.Event) (restore *int, ok bool) {
	var d struct {
		RestorePriority *int `json:"restore_priority"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return nil, false
	}
	if p := d.RestorePriority; p != nil && (*p < 0 || *p > MaxPriority) {
		return nil, true // a priority no task can have: the rest of the event stands
	}
	return d.RestorePriority, true
}

// kept puts each time in UTC and reports whether a snapshot keeps them all
// (projections.KeptTime): an event with a time no snapshot keeps is
// skipped, so that a fold restored from its snapshot is the fold.
func kept(ts ...*time.Time) bool {
	for _, t := range ts {
		v, ok := projections.KeptTime(*t)
		if !ok {
			return false
		}
		*t = v
	}
	return true
}

// keptTimes is kept for every time of an import, as spool import's
// checkTimes refuses the others.
func (d *ImportedData) keptTimes() bool {
	ts := []*time.Time{&d.CreatedAt, &d.UpdatedAt}
	if d.ClosedAt != nil {
		ts = append(ts, d.ClosedAt)
	}
	if d.Parent != nil {
		ts = append(ts, &d.Parent.At)
	}
	for i := range d.Blockers {
		ts = append(ts, &d.Blockers[i].At)
	}
	for i := range d.Links {
		ts = append(ts, &d.Links[i].At)
	}
	for i := range d.Comments {
		ts = append(ts, &d.Comments[i].At)
	}
	return kept(ts...)
}

// LeaseExpiredError is the last_error of an attempt whose lease ran out.
const LeaseExpiredError = "lease expired"

// release clears what belongs to a claim, as every move out of working
// (and into any status but working) does.
func (h *Entry) release() {
	h.Worker, h.Actor, h.LeaseUntil = "", "", time.Time{}
}

func (t *Task) unassign() {
	if t.Status == StatusInProgress {
		t.Status = StatusOpen
	}
	t.Detail().Assignee, t.LeaseUntil = "", time.Time{}
}

// cloneAll gives each string its own bytes: the fold's payload strings
// share the payload's (see unmarshal), and a label kept for as long as
// the task lives must not keep the payload, texts and all.
func cloneAll(ss []string) []string {
	for i, s := range ss {
		ss[i] = strings.Clone(s)
	}
	return ss
}

func (t *Task) setStatus(status string, at time.Time, reason string) {
	x := t.Detail()
	t.Status = status
	if status == StatusClosed {
		x.ClosedAt, x.CloseReason = at, reason
	} else {
		x.ClosedAt, x.CloseReason = time.Time{}, ""
	}
	if status != StatusInProgress {
		x.Assignee, t.LeaseUntil = "", time.Time{}
	}
}

// applyDep adds or removes one dependency of t on d.Blocker, of d's type.
func (t *Task) applyDep(x *TaskDetail, d DepData, add bool, at time.Time, by string) {
	other := strings.Clone(d.Blocker)
	switch d.Type {
	case "", DepBlocks:
		if add {
			t.addBlocker(Dep{ID: other, At: at, By: by})
		} else {
			t.Blockers = slices.DeleteFunc(t.Blockers, func(b Dep) bool { return b.ID == other })
		}
	case DepParentChild:
		switch {
		case add:
			t.Parent, x.ParentAt, x.ParentBy = other, at, by
		case t.Parent == other:
			t.Parent, x.ParentAt, x.ParentBy = "", time.Time{}, ""
		}
	default:
		i := slices.IndexFunc(t.Links, func(l Link) bool { return l.ID == other && l.Type == d.Type })
		switch {
		case add && i < 0:
			t.Links = append(t.Links, Link{ID: other, Type: strings.Clone(d.Type), At: at, By: by})
		case !add && i >= 0:
			t.Links = slices.Delete(t.Links, i, i+1)
		}
	}
}

func (t *Task) addBlocker(d Dep) {
	i, found := slices.BinarySearchFunc(t.Blockers, d.ID, func(a Dep, id string) int { return cmpString(a.ID, id) })
	if !found && d.ID != t.ID {
		t.Blockers = slices.Insert(t.Blockers, i, d)
	}
}

// addBlockers adds many blockers at once, as addBlocker would one by one
// (the first of an id wins), in O(n log n): an event's list, however long
// and in whatever order, never costs a fold n² moves.
func (t *Task) addBlockers(deps []Dep) {
	if len(deps) < 8 {
		for _, d := range deps {
			t.addBlocker(d)
		}
		return
	}
	all := append(slices.Clip(t.Blockers), deps...) // the existing ones first: they win
	slices.SortStableFunc(all, func(a, b Dep) int { return cmpString(a.ID, b.ID) })
	all = slices.CompactFunc(all, func(a, b Dep) bool { return a.ID == b.ID })
	if t.Blockers = slices.DeleteFunc(all, func(d Dep) bool { return d.ID == t.ID }); len(t.Blockers) == 0 {
		t.Blockers = nil // as addBlocker leaves a task with none
	}
}

// removeLabels drops the labels in remove, by a set when remove is long:
// one event's list never costs a fold labels × removals comparisons.
func removeLabels(labels, remove []string) []string {
	if len(remove) <= 8 {
		return slices.DeleteFunc(labels, func(l string) bool { return slices.Contains(remove, l) })
	}
	set := make(map[string]bool, len(remove))
	for _, r := range remove {
		set[r] = true
	}
	return slices.DeleteFunc(labels, func(l string) bool { return set[l] })
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// NormLabels sorts labels and drops duplicates and empty ones.
func NormLabels(labels []string) []string {
	out := slices.Clone(labels)
	sort.Strings(out)
	out = slices.Compact(out)
	out = slices.DeleteFunc(out, func(l string) bool { return l == "" })
	if len(out) == 0 {
		return nil
	}
	return out
}

// SortedIDs returns the task ids in order.
func (s *State) SortedIDs() []string {
	s.allTasks()
	return s.decodedIDs()
}

// Freeze makes the tasks safe to write side by side, tasks.json and the
// table (projections.Freezer): the decoded tasks' details are decoded now;
// the others each writer decodes for itself as it streams (eachTask). It
// reports a table of 10,000 tasks or more as large: its save streams
// hundreds of megabytes of short-lived values through the heap.
func (p *TasksProjection) Freeze() (large bool) {
	s := p.State()
	if s.trk.spill != nil {
		return len(s.trk.m) >= 10_000 // the first writer to need them whole seals the spill
	}
	for _, t := range s.trk.m {
		t.Detail()
	}
	return s.trk.lazy != nil && s.trk.lazy.sum.n >= 10_000
}

// Freeze decodes every entry (projections.Freezer).
func (p *QueueProjection) Freeze() (large bool) {
	p.State().allHistory()
	return false
}

// Files renders tasks.json (beads' shape, by id).
func (p *TasksProjection) Files() ([]projections.File, error) {
	return filesOf(p)
}

// WriteFiles streams tasks.json: at 100,000 tasks with their comments it
// is 190 MB, which Save and Verify need never hold.
func (p *TasksProjection) WriteFiles(emit func(path string, workTree bool, write func(w io.Writer) error) error) error {
	return emit("tasks.json", false, func(w io.Writer) error {
		s := p.State()
		ids := s.decodedIDs()
		if err := s.trk.spill.seal(s, ids); err != nil {
			return err
		}
		return jsonout.WriteSeq(w, func(yield func(any) bool) {
			var j TaskJSON // each written before the next
			for t := range s.eachTask(ids) {
				t.recordInto(&j)
				if !yield(&j) {
					return
				}
			}
		}, true)
	})
}

// Files renders history.json, by id.
func (p *QueueProjection) Files() ([]projections.File, error) {
	return filesOf(p)
}

// WriteFiles streams history.json.
func (p *QueueProjection) WriteFiles(emit func(path string, workTree bool, write func(w io.Writer) error) error) error {
	return emit("history.json", false, func(w io.Writer) error {
		all := p.State().allHistory()
		ids := make([]string, 0, len(all))
		for id := range all {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return jsonout.WriteList(w, len(ids), func(i int) any { return all[ids[i]].JSON() }, true)
	})
}

// filesOf renders what p's WriteFiles streams.
func filesOf(p projections.FileWriter) ([]projections.File, error) {
	var files []projections.File
	err := p.WriteFiles(func(path string, workTree bool, write func(w io.Writer) error) error {
		var buf bytes.Buffer
		err := write(&buf)
		files = append(files, projections.File{Path: path, Data: buf.Bytes(), WorkTree: workTree})
		return err
	})
	return files, err
}

// imported is the task an import event describes, whole.
func (s *State) imported(id string, d *ImportedData) *Task {
	t := &Task{ID: id, Title: d.Title, Status: d.Status, Priority: d.Priority, Type: d.IssueType,
		Labels: NormLabels(d.Labels), CreatedAt: d.CreatedAt.UTC()}
	if t.Status == "blocked" {
		t.Status, t.Labels = StatusOpen, NormLabels(append(t.Labels, BlockedLabel))
	}
	if d.Parent != nil {
		t.Parent = d.Parent.ID
	}
	deps := make([]Dep, len(d.Blockers))
	for i, b := range d.Blockers {
		deps[i] = Dep{ID: b.ID, At: b.At.UTC(), By: b.By}
	}
	t.addBlockers(deps)
	x := &TaskDetail{Description: d.Description, Design: d.Design, Acceptance: d.AcceptanceCriteria, Notes: d.Notes,
		ExternalRef: d.ExternalRef, Assignee: d.Assignee, CreatedBy: d.CreatedBy, Owner: d.CreatedBy, UpdatedAt: d.UpdatedAt.UTC(), CloseReason: d.CloseReason}
	if d.Owner != nil { // recorded as the export had it; before owner was kept, the creator stood for it
		x.Owner = *d.Owner
	}
	if d.Parent != nil {
		x.ParentAt, x.ParentBy = d.Parent.At.UTC(), d.Parent.By
	}
	for _, l := range d.Links {
		l.At = l.At.UTC()
		t.Links = append(t.Links, l)
	}
	if d.ClosedAt != nil {
		x.ClosedAt = d.ClosedAt.UTC()
	}
	for _, c := range d.Comments {
		x.AddComment(Comment{ID: c.ID, Author: c.Author, Text: c.Text, At: c.At.UTC()})
		s.trk.commentSeq = max(s.trk.commentSeq, c.ID)
	}
	t.detail = x
	return t
}
