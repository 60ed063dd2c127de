package mergequeue

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/refname"
	"github.com/spoolhq/spool/internal/table"
	"github.com/spoolhq/spool/projections"
)

// Name is the projection's name; its public file is FilePath.
const (
	Name     = "merge-queue"
	FilePath = "merge-queue.json"
)

// Spec registers the projection (store.Specs lists it).
// Bump Version whenever the encoding of the state changes: snapshots of
// another version are rebuilt from the log, and open reuses the lines of
// a snapshot of this version as they are.
//
// The state grows with every entry ever queued, so saves are amortized (see
// projections.Spec.Amortize): a command catches up in memory from a
// snapshot a few events old rather than writing every entry's line twice
// (the snapshot and merge-queue.json) for the one it changed.
var Spec = projections.Spec{Name: Name, Version: 13, Amortize: 1000, New: func() projections.Projection { return New() }}

// State is the merge queue folded from the log.
type State struct {
	Frozen       bool       `json:"frozen"`
	FrozenReason string     `json:"frozen_reason,omitempty"`
	FrozenBy     string     `json:"frozen_by,omitempty"`
	FrozenAt     *time.Time `json:"frozen_at,omitempty"`
	PendingCount int        `json:"pending_count"`
	Skipped      int        `json:"skipped"` // events the fold could not use (diverged history)
	Applied      int        `json:"applied"` // merge events folded; numbers the audit steps

	// identities are the generated change ids by identity key (IdentityKey:
	// workspace id + "\x00" + branch). Read from a snapshot they stay the
	// bytes of its object (identitiesRaw), which identity searches, with
	// what the fold set since in identities, until a save that has to
	// render them together decodes them (allIdentities).
	identities    map[string]string
	identitiesRaw []byte

	// entries are by id (entries[i].ID == i+1). A slot is nil while its
	// entry is still a record of the snapshot it was read from (tbl): open
	// leaves the ended entries (merged, failed_terminal, cancelled) unread,
	// and Entry, EntryByRef, LatestByKey, Lookup and All decode one when
	// they need it (thaw). A command about the queue then pays for the
	// active entries, not for every entry ever queued.
	entries   []*Entry
	undecoded int          // nil slots of entries
	tbl       *table.Table // the snapshot; nil when no entry is left undecoded
	endedIDs  []int64      // the entries of tbl's last records, its ended ones, in order
	ended     endedIndex   // tbl's refs and dedupe keys of those entries
	endedRaw  string       // ended, still encoded (endedIndex)
	cold      [][]byte     // by id, the undecoded entries' lines once loadCold read them all

	ix *index // lookups the fold and the deciders need, kept along with entries
}

// index holds what is otherwise a scan of every entry, so that a fold stays
// linear in the log however many entries it has seen: active entries by dedupe
// key and by workspace (at most one active entry per key and per workspace)
// and by id, the decoded entries by ref and the newest of them by dedupe key,
// and the pending entries in position order. It is derived from the entries
// (reindex) and never encoded.
//
// The undecoded entries are found through the snapshot's index, by ref
// (coldRef) and the newest by dedupe key (coldKey), when a lookup misses
// the decoded entries. An entry decoded since stays in it, harmlessly:
// Entry finds it decoded.
type index struct {
	activeByKey map[string]*Entry
	activeByWS  map[string]*Entry
	active      []*Entry // active entries by id
	byRef       map[string]*Entry
	latestByKey map[string]*Entry
	queue       []*Entry // pending: queue[i].Position == i+1
}

// index returns the state's index, built from the entries when it has
// none (a State not made by New, Apply or UnmarshalState).
func (s *State) index() *index {
	if s.ix == nil {
		s.reindex()
	}
	return s.ix
}

// reindex builds the index from the decoded entries: where two active
// entries share a key or workspace (a state the fold never makes), the
// first is found, as a scan would. Undecoded entries have ended: no
// position, not active.
func (s *State) reindex() {
	active, pending := 0, 0
	for _, e := range s.entries {
		if e == nil {
			continue
		}
		if e.Status.Active() {
			active++
		}
		if e.Position > 0 {
			pending++
		}
	}
	decoded := len(s.entries) - s.undecoded
	ix := &index{activeByKey: make(map[string]*Entry, active), activeByWS: make(map[string]*Entry, active), active: make([]*Entry, 0, active),
		byRef: make(map[string]*Entry, decoded), latestByKey: make(map[string]*Entry, decoded), queue: make([]*Entry, pending)}
	inOrder := true // positions 1..pending, each once: place each entry at its own
	for _, e := range s.entries {
		if e == nil {
			continue
		}
		ix.byRef[e.Ref] = e
		ix.latestByKey[e.DedupeKey] = e
		if e.Status.Active() {
			ix.active = append(ix.active, e)
			if _, ok := ix.activeByKey[e.DedupeKey]; !ok {
				ix.activeByKey[e.DedupeKey] = e
			}
			if _, ok := ix.activeByWS[e.WorkspaceID]; !ok {
				ix.activeByWS[e.WorkspaceID] = e
			}
		}
		if p := e.Position; p > 0 {
			if inOrder && p <= pending && ix.queue[p-1] == nil {
				ix.queue[p-1] = e
			} else {
				inOrder = false
			}
		}
	}
	if !inOrder { // a snapshot the fold did not write: order them by position as well as it can
		ix.queue = ix.queue[:0]
		for _, e := range s.entries {
			if e != nil && e.Position > 0 {
				ix.queue = append(ix.queue, e)
			}
		}
		sort.SliceStable(ix.queue, func(i, j int) bool { return ix.queue[i].Position < ix.queue[j].Position })
	}
	s.ix = ix
}

// setStatus changes e's status and keeps the active lookups with it.
func (s *State) setStatus(e *Entry, to Status) {
	ix := s.index()
	was := e.Status.Active()
	e.Status = to
	switch now := to.Active(); {
	case was && !now:
		if ix.activeByKey[e.DedupeKey] == e {
			delete(ix.activeByKey, e.DedupeKey)
		}
		if ix.activeByWS[e.WorkspaceID] == e {
			delete(ix.activeByWS, e.WorkspaceID)
		}
		if i, ok := slices.BinarySearchFunc(ix.active, e.ID, byID); ok {
			ix.active = slices.Delete(ix.active, i, i+1)
		}
	case !was && now:
		ix.activeByKey[e.DedupeKey] = e
		ix.activeByWS[e.WorkspaceID] = e
		ix.addActive(e)
	}
}

func byID(e *Entry, id int64) int { return cmp.Compare(e.ID, id) }

// addActive puts e among the active entries, in id order.
func (ix *index) addActive(e *Entry) {
	if i, ok := slices.BinarySearchFunc(ix.active, e.ID, byID); !ok {
		ix.active = slices.Insert(ix.active, i, e)
	}
}

// Entry is one queue entry.
type Entry struct {
	ID          int64  `json:"entry_id"`
	Ref         string `json:"entry_ref"`    // id of the merge.submitted event: stable across clones
	Workspace   string `json:"workspace"`    // display name: the worktree directory's base name
	WorkspaceID string `json:"workspace_id"` // identity: writer id / git worktree id (WorkspaceID)
	// LegacyWriter is set on an entry an older spool queued (its
	// merge.submitted has no workspace_id, so the name is its identity): the
	// clone that queued it. A submission from the same worktree of that
	// clone finds the entry while it is active (DecideSubmit).
	LegacyWriter     string         `json:"legacy_writer,omitempty"`
	Worktree         string         `json:"worktree,omitempty"`
	Branch           string         `json:"branch"`
	ChangeID         string         `json:"change_id"`
	ChangeIDSource   string         `json:"change_id_source"`
	DedupeKey        string         `json:"dedupe_key"`
	HeadSHA          string         `json:"head_sha"`
	TestedSHA        string         `json:"tested_sha,omitempty"`
	TestedAgainstSHA string         `json:"tested_against_sha,omitempty"`
	TargetFromSHA    string         `json:"target_from_sha,omitempty"` // in merging: the local target's commit, when not tested_against_sha
	Target           string         `json:"target,omitempty"`
	Priority         int            `json:"priority"`
	BeadID           string         `json:"bead_id,omitempty"`
	Owner            string         `json:"owner"`
	Status           Status         `json:"status"`
	WorkspaceState   WorkspaceState `json:"workspace_state"`
	Position         int            `json:"position,omitempty"` // 1..N among pending entries; 0 otherwise
	Attempts         int            `json:"attempts"`
	Runner           string         `json:"runner,omitempty"`
	LeaseUntil       *time.Time     `json:"lease_until,omitempty"`
	ScratchDir       string         `json:"scratch_dir,omitempty"`
	RunDir           string         `json:"run_dir,omitempty"`
	Proc             *ProcRecord    `json:"proc,omitempty"`   // the process group of the current step (the test command), until the status changes
	Holder           *ProcRecord    `json:"holder,omitempty"` // the runner's process, from its claim, while it holds the entry
	LastError        string         `json:"last_error,omitempty"`
	ConflictPaths    []string       `json:"conflict_paths,omitempty"` // a rebase's conflicts; a waiting entry's dirty paths
	Waiting          string         `json:"waiting,omitempty"`        // why a pending entry the train gave back waits (WaitCheckoutDirty …)
	AddedAt          time.Time      `json:"added_at"`
	UpdatedAt        time.Time      `json:"updated_at"`
	Steps            int            `json:"steps"`     // audit steps so far; the full trail is in the log (Trail)
	LastStep         AuditStep      `json:"last_step"` // the latest of them
	// Conflicts are the entry's events that clones appended concurrently
	// and the fold resolved (see Apply): skipped, or applied otherwise.
	Conflicts []Resolution `json:"conflicts,omitempty"`

	encoded    []byte // this entry's line in merge-queue.json until it changes
	encodedPos int    // the position encoded has: positions shift without the entry changing
}

// Resolution is what the fold made of an event that conflicts with what
// another clone did concurrently: To is the status it gave the entry
// instead of the event's own, or empty when it skipped the event.
type Resolution struct {
	Event  string `json:"event"` // the event's id
	To     Status `json:"to,omitempty"`
	Reason string `json:"reason"`
}

// Conflict is the latest conflict the fold resolved on the entry, or "".
func (e *Entry) Conflict() string {
	if n := len(e.Conflicts); n > 0 {
		r := e.Conflicts[n-1]
		if r.To == "" {
			return "skipped " + r.Event + ": " + r.Reason
		}
		return string(r.To) + ": " + r.Reason
	}
	return ""
}

// AuditStep is one line of an entry's audit trail.
type AuditStep struct {
	N                int       `json:"n"` // increases along the log
	At               time.Time `json:"at"`
	Actor            string    `json:"actor"`
	Type             string    `json:"type"`
	From             Status    `json:"from,omitempty"`
	To               Status    `json:"to,omitempty"`
	HeadSHA          string    `json:"head_sha,omitempty"`
	TestedSHA        string    `json:"tested_sha,omitempty"`
	TestedAgainstSHA string    `json:"tested_against_sha,omitempty"`
	Reason           string    `json:"reason,omitempty"`
	Runner           string    `json:"runner,omitempty"`
	Skipped          string    `json:"skipped,omitempty"` // why the fold skipped this event (Trail)
	Event            string    `json:"event,omitempty"`   // the event's id (Trail)
	RunDir           string    `json:"run_dir,omitempty"` // the attempt's run directory, as the event recorded it (Trail)
}

// New returns an empty queue.
func New() *State {
	s := &State{entries: []*Entry{}, identities: map[string]string{}}
	s.reindex()
	return s
}

// Len is the number of entries ever queued: their ids are 1 to Len.
func (s *State) Len() int { return len(s.entries) }

// Entry returns the entry with id, or nil.
func (s *State) Entry(id int64) *Entry {
	if id < 1 || id > int64(len(s.entries)) {
		return nil
	}
	if e := s.entries[id-1]; e != nil {
		return e
	}
	return s.thaw(id)
}

// All returns every entry, by id (All()[i].ID == i+1), decoding those not
// decoded yet: merge list --all, verify's invariants. The slice is the
// state's own; the fold appends to it.
func (s *State) All() []*Entry {
	if s.undecoded > 0 {
		s.thawAll()
	}
	return s.entries
}

// Active returns the active entries by id.
func (s *State) Active() []*Entry { return slices.Clone(s.index().active) }

// ActiveByKey returns the active entry holding dedupe key, or nil.
func (s *State) ActiveByKey(key string) *Entry { return s.index().activeByKey[key] }

// ActiveByWorkspace returns the active entry of the workspace with
// identity id, or nil.
func (s *State) ActiveByWorkspace(id string) *Entry { return s.index().activeByWS[id] }

// EntryByRef returns the entry whose merge.submitted event has id ref, or nil.
func (s *State) EntryByRef(ref string) *Entry {
	ix := s.index()
	if e := ix.byRef[ref]; e != nil {
		return e
	}
	return s.Entry(s.coldRef(ref))
}

// LatestByKey returns the newest entry with dedupe key, active or not.
func (s *State) LatestByKey(key string) *Entry {
	ix := s.index()
	e := ix.latestByKey[key]
	if id := s.coldKey(key); id > 0 && (e == nil || id > e.ID) {
		return s.Entry(id)
	}
	return e
}

// ActiveCount counts active entries.
func (s *State) ActiveCount() int { return len(s.index().active) }

// Queue returns the pending entries in position order.
func (s *State) Queue() []*Entry { return slices.Clone(s.index().queue) }

// queuedBefore is the queue order: priority (lower first), then submission
// time, then id so that equal times still order deterministically.
func queuedBefore(a, b *Entry) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if !a.AddedAt.Equal(b.AddedAt) {
		return a.AddedAt.Before(b.AddedAt)
	}
	return a.ID < b.ID
}

// leave takes a pending entry out of the positions: those behind it move up.
// Positions change in O(pending) per event (the index's queue), so
// replaying a long log stays linear in its length, whatever number of
// entries have ended.
func (s *State) leave(e *Entry) {
	if e.Position == 0 {
		return
	}
	ix := s.index()
	i := e.Position - 1
	if i >= len(ix.queue) || ix.queue[i] != e { // never, but a position must not name another entry
		i = slices.Index(ix.queue, e)
	}
	if i >= 0 {
		ix.queue = slices.Delete(ix.queue, i, i+1)
		for _, o := range ix.queue[i:] {
			o.Position--
		}
	}
	e.Position = 0
	s.PendingCount--
}

// enter gives a pending entry its position: those it goes before move down.
func (s *State) enter(e *Entry) {
	ix := s.index()
	i := sort.Search(len(ix.queue), func(k int) bool { return !queuedBefore(ix.queue[k], e) })
	ix.queue = slices.Insert(ix.queue, i, e)
	for _, o := range ix.queue[i+1:] {
		o.Position++
	}
	e.Position = i + 1
	s.PendingCount++
}

// IdentityKey is the key of the state's identities: a workspace identity and a branch.
func IdentityKey(workspaceID, branch string) string { return workspaceID + "\x00" + branch }

// Apply folds one event. Events of other namespaces and events whose data
// cannot be used are skipped; it never fails. Whatever clones appended
// concurrently, the fold of their merged log satisfies CheckInvariants: an
// event that conflicts with what another clone did first (in replay order)
// is skipped or applied otherwise, and recorded in the entry's Conflicts.
func (s *State) Apply(ev *eventlog.Event) error {
	s.index()
	switch ev.Type {
	case EvFrozen:
		var d FreezeData
		_ = json.Unmarshal(ev.Data, &d)
		at := ev.At
		s.Frozen, s.FrozenReason, s.FrozenBy, s.FrozenAt = true, d.Reason, ev.Actor, &at
		s.Applied++
		return nil
	case EvUnfrozen:
		s.Frozen, s.FrozenReason, s.FrozenBy, s.FrozenAt = false, "", "", nil
		s.Applied++
		return nil
	case EvSubmitted, EvResubmitted, EvUpdated, EvClaimed, EvTransitioned, EvLeaseRenewed, EvRecovered, EvRetried, EvCancelled, EvPushed:
	default:
		return nil
	}
	var d EntryData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		s.Skipped++
		return nil
	}
	if s.applyEntry(ev, &d) {
		s.Applied++
	} else {
		s.Skipped++
	}
	return nil
}

func (s *State) applyEntry(ev *eventlog.Event, d *EntryData) bool {
	if ev.Type == EvSubmitted {
		// Only what DecideSubmit records: the identity the invariants
		// hold every entry to (a full commit id, a change id, a dedupe key
		// workspace:change_id, a branch).
		if d.Workspace == "" || refname.CheckBranch(d.Branch) != nil || d.ChangeID == "" || ValidateDedupeKey(d.DedupeKey) != nil ||
			!strings.HasSuffix(d.DedupeKey, ":"+d.ChangeID) || !ValidHeadSHA(d.HeadSHA) {
			return false
		}
		d.From, d.To = "", Pending // a new entry starts pending, whatever the data says, and its first audit step says so
		legacy := ""
		if d.WorkspaceID == "" { // an older spool's event: the name was the identity
			d.WorkspaceID, legacy = d.Workspace, ev.Writer
		}
		e := &Entry{ID: int64(len(s.entries)) + 1, Ref: ev.ID, Workspace: d.Workspace, WorkspaceID: d.WorkspaceID, LegacyWriter: legacy, Worktree: d.Worktree, Branch: d.Branch,
			ChangeID: d.ChangeID, ChangeIDSource: d.ChangeIDSource, DedupeKey: d.DedupeKey, HeadSHA: d.HeadSHA,
			BeadID: d.BeadID, Owner: ev.Actor, Status: Pending, AddedAt: ev.At, UpdatedAt: ev.At, Waiting: pushWait(d)}
		if d.Priority != nil {
			e.Priority = *d.Priority
		}
		if d.ChangeIDSource == SourceGenerated {
			s.identities[IdentityKey(d.WorkspaceID, d.Branch)] = d.ChangeID
		}
		s.entries = append(s.entries, e)
		if s.cold != nil {
			s.cold = append(s.cold, nil)
		}
		s.ix.byRef[e.Ref] = e
		s.ix.latestByKey[e.DedupeKey] = e
		if why := s.rival(e); why != "" {
			// Queued concurrently with an active entry of the same key or
			// workspace (on another clone): the later one in replay order
			// ends cancelled, saying so, so that a key and a workspace
			// each keep at most one active entry.
			e.Status, e.Waiting = Cancelled, "" // only pending entries wait
			e.Conflicts = append(e.Conflicts, Resolution{Event: ev.ID, To: Cancelled, Reason: why})
			instead := *d
			instead.To = Cancelled
			s.step(e, ev, &instead)
			return true
		}
		s.ix.activeByKey[e.DedupeKey], s.ix.activeByWS[e.WorkspaceID] = e, e // pending: active
		s.ix.active = append(s.ix.active, e)                                 // the highest id
		s.enter(e)
		s.step(e, ev, d)
		return true
	}
	// The ref names the entry (see EntryData.EntryRef); events without one
	// (older logs) use the number.
	e := s.Entry(d.EntryID)
	if d.EntryRef != "" {
		e = s.EntryByRef(d.EntryRef)
	}
	if e == nil {
		return false
	}
	e.encoded = nil
	if ev.Type == EvLeaseRenewed {
		if e.Status.Processing() && d.Runner == e.Runner && d.LeaseUntil != nil {
			lease := *d.LeaseUntil
			e.LeaseUntil = &lease
			if d.Proc != nil {
				p := *d.Proc
				e.Proc = &p
			}
			return true
		}
		return false
	}
	why := unsafeData(d)
	if why == "" {
		why = s.refusal(e, ev.Type, d)
	}
	if why != "" {
		e.Conflicts = append(e.Conflicts, Resolution{Event: ev.ID, Reason: why})
		return false
	}
	s.leave(e) // and enter again below if it is (still) pending: its place may change
	defer func() {
		if e.Status == Pending {
			s.enter(e)
		}
	}()
	if e.Waiting != "" { // whatever happens next, the entry no longer waits
		e.Waiting, e.ConflictPaths = "", nil
	}
	switch ev.Type {
	case EvResubmitted:
		e.HeadSHA, e.Attempts, e.AddedAt = d.HeadSHA, 0, ev.At
		e.TestedSHA, e.TestedAgainstSHA, e.LastError, e.ConflictPaths = "", "", "", nil
		e.setRequest(d)
		e.Waiting = pushWait(d)
	case EvUpdated:
		if d.HeadSHA != "" && d.HeadSHA != e.HeadSHA {
			e.HeadSHA, e.Attempts = d.HeadSHA, 0
		}
		e.setRequest(d)
		if d.To == Pending {
			e.Waiting = pushWait(d)
		}
	case EvClaimed:
		e.Attempts++
		e.Runner, e.Target, e.Holder = d.Runner, d.Target, nil
		if d.Holder != nil {
			h := *d.Holder
			e.Holder = &h
		}
		e.TestedSHA, e.TestedAgainstSHA, e.LastError, e.ConflictPaths = "", d.TestedAgainstSHA, "", nil
		e.TargetFromSHA = ""
	case EvTransitioned, EvRecovered:
		e.TargetFromSHA = d.TargetFromSHA // only the step to merging has one
		if d.TestedSHA != "" {
			e.TestedSHA = d.TestedSHA
		}
		if d.TestedAgainstSHA != "" {
			e.TestedAgainstSHA = d.TestedAgainstSHA
		}
		if d.ScratchDir != "" {
			e.ScratchDir = d.ScratchDir
		}
		if d.RunDir != "" {
			e.RunDir = d.RunDir
		}
		if d.To == FailedRetryable || d.To == FailedTerminal {
			e.LastError, e.ConflictPaths = d.Reason, d.Paths
		}
		if d.To == Pending { // the train gave the entry back (WaitCheckoutDirty …): the attempt does not count
			e.Waiting, e.ConflictPaths = d.Reason, d.Paths
			e.Attempts = max(e.Attempts-1, 0)
		}
	}
	if d.To != e.Status {
		e.Proc = nil // the step the process belonged to is over
	}
	s.setStatus(e, d.To)
	e.WorkspaceState = WorkspaceStateOf(e.Status)
	if e.Status.Processing() {
		if d.LeaseUntil != nil {
			lease := *d.LeaseUntil
			e.LeaseUntil = &lease
		}
	} else {
		e.Runner, e.LeaseUntil, e.ScratchDir, e.Holder = "", nil, "", nil
	}
	s.step(e, ev, d)
	return true
}

// pushWait is the wait a submission records when its branch could not be
// pushed (WaitPushPending), or "".
func pushWait(d *EntryData) string {
	if strings.HasPrefix(d.Reason, WaitPushPending) {
		return d.Reason
	}
	return ""
}

// rival describes another active entry holding e's dedupe key or
// workspace, or returns "": of two, the one with the lower id (the first
// a scan of the entries would meet), by key when one holds both.
func (s *State) rival(e *Entry) string {
	ix := s.index()
	byKey, byWS := ix.activeByKey[e.DedupeKey], ix.activeByWS[e.WorkspaceID]
	if byKey == e {
		byKey = nil
	}
	if byWS == e {
		byWS = nil
	}
	switch {
	case byKey != nil && (byWS == nil || byKey.ID <= byWS.ID):
		return fmt.Sprintf("duplicate of entry %d (ref %s): dedupe key %s was queued concurrently on another clone", byKey.ID, ShortRef(byKey.Ref), e.DedupeKey)
	case byWS != nil:
		return fmt.Sprintf("workspace %s already has entry %d (ref %s), queued concurrently on another clone", e.Workspace, byWS.ID, ShortRef(byWS.Ref))
	}
	return ""
}

// refusal says why the fold cannot apply a status-changing event to e, or
// returns "". Decide functions run under the log's lock against the
// caught-up fold, so a clone never appends such an event against its own
// log; they come from clones that acted concurrently, whose logs git merged.
// Each is a compare-and-set on what the clone saw: the status, the head
// (claims and train steps) and the runner holding the entry (train steps
// and recoveries; events of older logs carry no runner and are not checked).
func (s *State) refusal(e *Entry, typ string, d *EntryData) string {
	if d.From != e.Status {
		why := "the entry was " + string(e.Status) + ", not " + string(d.From)
		if e.Runner != "" {
			why += " (held by runner " + e.Runner + ")"
		}
		return why
	}
	if !allowed(typ, d.From, d.To) {
		return string(d.From) + " → " + string(d.To) + " is not a move the table allows"
	}
	switch typ {
	case EvClaimed, EvTransitioned, EvPushed:
		if d.HeadSHA != "" && d.HeadSHA != e.HeadSHA {
			return "the entry's head is " + shortSHA(e.HeadSHA) + ", not " + shortSHA(d.HeadSHA)
		}
	}
	switch typ {
	case EvTransitioned, EvRecovered:
		if d.Runner != "" && d.Runner != e.Runner {
			return "the entry is held by runner " + e.Runner + ", not " + d.Runner
		}
	case EvResubmitted:
		if why := s.rival(e); why != "" {
			return why
		}
	}
	return ""
}

// unsafeData says why an event's values cannot be handed to git: the
// train and recovery pass its commits and its target branch to git (a
// commit "--index-output=…" would be an option), and anyone who can push
// can write an event. The deciders only ever record commit ids and a
// branch merge.target's check allows.
func unsafeData(d *EntryData) string {
	for _, c := range []struct{ name, sha string }{{"head_sha", d.HeadSHA}, {"tested_sha", d.TestedSHA},
		{"tested_against_sha", d.TestedAgainstSHA}, {"target_from_sha", d.TargetFromSHA}} {
		if c.sha != "" && !ValidHeadSHA(c.sha) {
			return c.name + " is not a commit id"
		}
	}
	if d.Target != "" && refname.CheckBranch(d.Target) != nil {
		return "target is not a branch name"
	}
	return ""
}

// ShortRef is the first 12 characters of an entry ref, as output shows it.
func ShortRef(ref string) string {
	if len(ref) > 12 {
		return ref[:12]
	}
	return ref
}

func shortSHA(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// allowed checks an event's from → to against the table; resubmission and
// an update that keeps the status are the only moves outside it.
func allowed(typ string, from, to Status) bool {
	switch typ {
	case EvResubmitted:
		return CanResubmit(from) && to == Pending
	case EvUpdated:
		return from.Active() && (to == from || from == FailedRetryable && to == Pending)
	case EvClaimed:
		return from == Pending && to == Claimed
	case EvRetried:
		return from == FailedRetryable && to == Pending
	case EvPushed:
		return from == Pending && to == Pending
	case EvCancelled:
		return to == Cancelled && CanTransition(from, to)
	case EvRecovered:
		return from.Processing() && (to == FailedRetryable || to == FailedTerminal || from == Merging && to == Merged) && CanTransition(from, to)
	case EvTransitioned:
		return from.Processing() && CanTransition(from, to)
	}
	return false
}

func (e *Entry) setRequest(d *EntryData) {
	if d.Priority != nil {
		e.Priority = *d.Priority
	}
	if d.BeadID != "" {
		e.BeadID = d.BeadID
	}
	if d.Worktree != "" {
		e.Worktree = d.Worktree
	}
	if d.Workspace != "" { // git worktree move renames the directory; the identity stays
		e.Workspace = d.Workspace
	}
}

func (s *State) step(e *Entry, ev *eventlog.Event, d *EntryData) {
	// The audit trail's times never go backwards even if a
	// writer's clock did; the event itself keeps the time it was written.
	at := ev.At
	if e.Steps > 0 && at.Before(e.LastStep.At) {
		at = e.LastStep.At
	}
	e.UpdatedAt = at
	e.WorkspaceState = WorkspaceStateOf(e.Status)
	e.Steps++
	e.LastStep = AuditStep{N: s.Applied + 1, At: at, Actor: ev.Actor, Type: ev.Type, From: d.From, To: d.To}
}

// StepOf is the audit step an entry event records.
func StepOf(ev *eventlog.Event, d *EntryData) AuditStep {
	return AuditStep{At: ev.At, Actor: ev.Actor, Type: ev.Type, From: d.From, To: d.To, HeadSHA: d.HeadSHA,
		TestedSHA: d.TestedSHA, TestedAgainstSHA: d.TestedAgainstSHA, Reason: d.Reason, Runner: d.Runner, Event: ev.ID, RunDir: d.RunDir}
}
