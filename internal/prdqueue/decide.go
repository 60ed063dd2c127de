package prdqueue

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// The decide functions are pure: the state, the command (and what the PRD
// file says, read by the service) in, events or a typed error out. A
// returned error means nothing is appended.

// Facts is what a PRD file says, as internal/prd reads it.
type Facts struct {
	PRDGate       string
	BeadsGate     string
	OpenQuestions []string
	Hash          string
}

// StartFeature starts a feature run. Starting it again with the same
// settings changes nothing; with others it is refused.
func StartFeature(s *State, slug, mode string, workerCap int) ([]eventlog.Draft, error) {
	if err := CheckSlug("feature", slug); err != nil {
		return nil, err
	}
	if mode == "" {
		mode = ModeConflictAware
	}
	if mode != ModeConflictAware && mode != ModeSequential {
		return nil, fault.New(CodeInvalidMode, nil, fmt.Sprintf("mode must be %s or %s, got %q", ModeConflictAware, ModeSequential, mode), "mode", mode)
	}
	if workerCap < 1 || workerCap > MaxWorkerCap {
		return nil, fault.Usagef(fault.CodeUsage, "--worker-cap must be 1 to %d, got %d", MaxWorkerCap, workerCap)
	}
	if f := s.Features[slug]; f != nil {
		if f.Mode == mode && f.WorkerCap == workerCap {
			return nil, nil
		}
		return nil, fault.New(CodeFeatureExists, fault.ErrConflict,
			fmt.Sprintf("feature %s was started with mode %s and worker cap %d", slug, f.Mode, f.WorkerCap), "feature_slug", slug)
	}
	return []eventlog.Draft{{Type: TypeFeatureStarted, Subject: FeatureSubject(slug),
		Data: FeatureData{FeatureSlug: slug, Mode: mode, WorkerCap: workerCap}}}, nil
}

// AddItem adds a PRD to a feature run. Adding it again (same path) changes
// nothing. A PRD has one file: naming another path for it is refused.
func AddItem(s *State, feature, prd, path string) ([]eventlog.Draft, error) {
	if err := CheckSlug("feature", feature); err != nil {
		return nil, err
	}
	if err := CheckSlug("PRD", prd); err != nil {
		return nil, err
	}
	if path == "" {
		path = DefaultPath(prd)
	}
	clean, err := CheckPath(path)
	if err != nil {
		return nil, err
	}
	if s.Features[feature] == nil {
		return nil, fault.NotFound("feature", feature)
	}
	if p := s.PRDs[prd]; p != nil && p.Path != clean {
		return nil, fault.New(CodePathConflict, fault.ErrConflict, fmt.Sprintf("PRD %s is %s, not %s", prd, p.Path, clean),
			"prd_slug", prd, "prd_path", p.Path)
	}
	if s.Items[ItemKey{feature, prd}] != nil {
		return nil, nil
	}
	return []eventlog.Draft{{Type: TypeAdded, Subject: PRDSubject(prd), Data: AddedData{FeatureSlug: feature, PRDPath: clean}}}, nil
}

// FindItem returns the item of a PRD: in feature, or in the one feature that
// names it when feature is "".
func (s *State) FindItem(prd, feature string) (*Item, error) {
	if err := CheckSlug("PRD", prd); err != nil {
		return nil, err
	}
	if feature != "" {
		if err := CheckSlug("feature", feature); err != nil {
			return nil, err
		}
		if it := s.Items[ItemKey{feature, prd}]; it != nil {
			return it, nil
		}
		return nil, fault.NotFound("PRD", prd)
	}
	items := s.ItemsOf(prd)
	switch len(items) {
	case 0:
		return nil, fault.NotFound("PRD", prd)
	case 1:
		return items[0], nil
	}
	var names []string
	for _, it := range items {
		names = append(names, it.Feature)
	}
	return nil, fault.Usagef(fault.CodeUsage, "PRD %s is in features %s: name one with --feature", prd, strings.Join(names, ", "))
}

// Remove takes an item out of its feature run.
func Remove(it *Item) eventlog.Draft {
	return eventlog.Draft{Type: TypeRemoved, Subject: PRDSubject(it.PRD), Data: ItemData{FeatureSlug: it.Feature}}
}

// Discover starts discovery: pending → in_discovery.
func Discover(it *Item) (eventlog.Draft, error) { return move(it, InDiscovery) }

// Retry is the manual intervention after queue_failed, and only that: the
// entry goes to the state its gates give now (approved, for the next
// promote, when both pass), so a retry never passes a gate.
func Retry(s *State, it *Item, now time.Time) ([]eventlog.Draft, error) {
	if it.State != QueueFailed {
		return nil, fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
			fmt.Sprintf("prd retry is only for a queue_failed PRD; %s is %s: %s", it.PRD, it.State, notRetried(s, it)),
			"prd_slug", it.PRD, "current_state", string(it.State), "target_state", string(Approved))
	}
	to := target(it, s.PRDs[it.PRD])
	if to == QueueFailed {
		to = Approved
	}
	sim := newSim(s, it.PRD, now)
	if !CanTransition(it.State, to) { // queued again with this key: through approved
		sim.emit(transition(it, Approved))
	}
	sim.emit(transition(sim.o.Items[ItemKey{it.Feature, it.PRD}], to))
	return sim.drafts, nil
}

// notRetried says what moves an entry prd retry does not.
func notRetried(s *State, it *Item) string {
	switch it.State {
	case Pending, InDiscovery:
		return "submit it (spool prd submit " + it.PRD + ")"
	case AwaitingPRDApproval:
		return "it goes on when its PRD gate is approved (spool prd approve " + it.PRD + " --gate prd, or commit the front matter)"
	case AwaitingBeadsApproval:
		return "it goes on when its beads gate is approved (spool prd approve " + it.PRD + " --gate beads, or commit the front matter)"
	case Queued:
		return "it is queued already"
	}
	if reason, _ := s.Blocked(it); reason != "" {
		return "it waits: " + reason + " (spool prd show " + it.PRD + ")"
	}
	return "spool prd promote enqueues it"
}

func move(it *Item, to Status) (eventlog.Draft, error) {
	if !CanTransition(it.State, to) {
		return eventlog.Draft{}, invalidTransition(it.PRD, it.State, to)
	}
	return transition(it, to), nil
}

func transition(it *Item, to Status) eventlog.Draft {
	return eventlog.Draft{Type: TypeTransitioned, Subject: PRDSubject(it.PRD), Data: TransitionData{FeatureSlug: it.Feature, From: it.State, To: to}}
}

// Submit sends a PRD for approval (→ awaiting_prd_approval) and then
// reconciles it with its file, which may move it further.
func Submit(s *State, it *Item, f Facts, now time.Time) ([]eventlog.Draft, error) {
	if it.State.Submitted() { // the table's other ways in are sync's
		return nil, invalidTransition(it.PRD, it.State, AwaitingPRDApproval)
	}
	sim := newSim(s, it.PRD, now)
	sim.emit(transition(it, AwaitingPRDApproval))
	sim.reconcile(f, false)
	return sim.drafts, nil
}

// Reconcile brings a PRD in step with its file: records what changed in it,
// records an approval (the PRD gate newly approved) or its invalidation (the
// content changed after it), and moves every submitted item of the PRD to
// the state its gates give. explicit is spool prd approve: an approval act
// even when the file said approved before an edit invalidated it.
func Reconcile(s *State, prd string, f Facts, explicit bool, now time.Time) []eventlog.Draft {
	sim := newSim(s, prd, now)
	sim.reconcile(f, explicit)
	return sim.drafts
}

// unreadableReasons are the reasons a prd.unreadable event gives: what is
// wrong with the file as committed (another checkout reads it the same way),
// never a failure of this machine's storage.
var unreadableReasons = map[string]bool{CodePRDFileMissing.Name: true, CodePRDFileOutside.Name: true, CodeInvalidFrontMatter.Name: true}

// Unreadable records that a submitted PRD's file could not be read (reason,
// an error code of unreadableReasons, and its message), unless that is
// recorded already. What the file said before stays, and nothing acts on
// it: the PRD's entries wait (Blocked) until a sync reads the file again.
// A PRD not yet submitted may have no file: nothing is recorded.
func Unreadable(s *State, prd, reason, msg string) []eventlog.Draft {
	p := s.PRDs[prd]
	if p == nil || !unreadableReasons[reason] || p.Unreadable == reason && p.UnreadableError == msg {
		return nil
	}
	for _, it := range s.ItemsOf(prd) {
		if it.State.Submitted() {
			return []eventlog.Draft{{Type: TypeUnreadable, Subject: PRDSubject(prd), Data: UnreadableData{Reason: reason, Error: msg}}}
		}
	}
	return nil
}

// sim applies the drafts it emits to a copy of the PRD's part of the state,
// so that each step decides on the state after the previous ones; the copy
// is made at the first emit (most reconciles emit nothing).
type sim struct {
	base, o *State
	prd     string
	now     time.Time
	drafts  []eventlog.Draft
}

func newSim(s *State, prd string, now time.Time) *sim { return &sim{base: s, o: s, prd: prd, now: now} }

func (m *sim) emit(d eventlog.Draft) {
	if m.o == m.base {
		m.o = m.base.cloneFor(m.prd)
	}
	m.drafts = append(m.drafts, d)
	if e, err := d.Event("", m.now); err == nil {
		m.o.Apply(e)
	}
}

func (m *sim) reconcile(f Facts, explicit bool) {
	p := m.o.PRDs[m.prd]
	if !p.Read || p.Unreadable != "" || p.PRDGate != f.PRDGate || p.BeadsGate != f.BeadsGate || p.Hash != f.Hash || !slices.Equal(p.OpenQuestions, f.OpenQuestions) {
		m.emit(eventlog.Draft{Type: TypeRead, Subject: PRDSubject(m.prd),
			Data: ReadData{PRDGate: f.PRDGate, BeadsGate: f.BeadsGate, OpenQuestions: f.OpenQuestions, ContentHash: f.Hash}})
		p = m.o.PRDs[m.prd]
	}
	if p.ApprovedHash != "" && p.ApprovedHash != p.Hash {
		m.emit(eventlog.Draft{Type: TypeApprovalInvalidated, Subject: PRDSubject(m.prd),
			Data: ApprovalData{ApprovalVersion: p.Version, ContentHash: p.Hash}})
		p = m.o.PRDs[m.prd]
	}
	if p.PRDGate == GateApproved && p.ApprovedHash == "" && p.Hash != "" {
		version := 0
		switch {
		case !p.Invalidated:
			version = p.Version // the first approval
		case explicit || p.SeenUnapproved:
			version = p.Version + 1 // approved again after an edit
		}
		if version > 0 {
			m.emit(eventlog.Draft{Type: TypeApproved, Subject: PRDSubject(m.prd), Data: ApprovalData{ApprovalVersion: version, ContentHash: p.Hash}})
			p = m.o.PRDs[m.prd]
		}
	}
	for _, it := range m.o.ItemsOf(m.prd) {
		if !it.State.Submitted() || it.InFlight {
			continue // not yet submitted, or an enqueue's outcome is due
		}
		to := target(it, p)
		if to == it.State {
			continue
		}
		if !CanTransition(it.State, to) { // e.g. awaiting_beads_approval → queued: through approved
			m.emit(transition(it, Approved))
		}
		m.emit(transition(m.o.Items[ItemKey{it.Feature, it.PRD}], to))
	}
}

// target is the state a submitted item's gates give it (the promotion rule).
func target(it *Item, p *PRD) Status {
	switch {
	case !p.PRDApproved():
		return AwaitingPRDApproval
	case !p.BeadsApproved():
		return AwaitingBeadsApproval
	case p.Epic != "" && it.EnqueuedKey == p.Key():
		return Queued // queued with this approval already: back to queued, no second enqueue
	case it.State == QueueFailed:
		return QueueFailed // waits for prd retry
	}
	return Approved
}

// cloneFor copies the part of s that events about prd change.
func (s *State) cloneFor(prd string) *State {
	o := &State{Features: maps.Clone(s.Features), Items: maps.Clone(s.Items), PRDs: maps.Clone(s.PRDs), Keys: s.Keys,
		byPRD: maps.Clone(s.byPRD)}
	if p := s.PRDs[prd]; p != nil {
		c := *p
		o.PRDs[prd] = &c
	}
	o.byPRD[prd] = nil
	for _, it := range s.ItemsOf(prd) {
		c := *it
		o.Items[ItemKey{it.Feature, it.PRD}] = &c
		o.byPRD[prd] = append(o.byPRD[prd], &c)
		f := *s.Features[it.Feature]
		o.Features[it.Feature] = &f
	}
	return o
}

// Candidate is an item promote enqueues.
type Candidate struct {
	Item  *Item
	Key   string // the idempotency key
	Epic  string // the PRD's epic when it has one already (see EpicFor)
	Title string
}

// EpicFor is the epic a candidate is queued onto, given what the tracker
// says of the PRD's epic (its status, and whether it has it at all): the
// PRD's own while it is open, so that a new approval version's work joins
// the work under way; "" for a new one when the PRD has none or the
// tracker has it closed or not at all, so that a new version of a finished
// PRD gets work someone can take (an epic of its own, whose id is its
// key's: two clones promoting that key make one).
func (c Candidate) EpicFor(status string, found bool) string {
	if c.Epic == "" || !found || status == "closed" || status == "tombstone" {
		return ""
	}
	return c.Epic
}

// Refusal is why promote leaves an entry that is otherwise runnable where it
// is: its code (duplicate_active_entry, duplicate_idempotency_key) and a
// message that says what to do. It concerns that entry alone: the others
// are promoted, and the entry's blocked_reason and last_error say it.
type Refusal struct {
	Item    *Item
	Code    fault.Code
	Message string
	fields  []any
}

// Err is the refusal as an error, with the code's fields.
func (r Refusal) Err() error {
	return fault.New(r.Code, fault.ErrConflict, r.Message, r.fields...)
}

// Runnable returns the items promote enqueues, in manifest order (features
// by slug, items in the order added): approved, nothing holding them, no
// enqueue in flight; and the items it refuses (Refusal), in the same order.
func Runnable(s *State, feature string) ([]Candidate, []Refusal, error) {
	slugs := s.FeatureSlugs()
	if feature != "" {
		if s.Features[feature] == nil {
			return nil, nil, fault.NotFound("feature", feature)
		}
		slugs = []string{feature}
	}
	var out []Candidate
	var refused []Refusal
	for _, slug := range slugs {
		for _, prd := range s.Features[slug].Items {
			it := s.Items[ItemKey{slug, prd}]
			if it.State != Approved || it.InFlight || s.waitReason(it) != "" {
				continue
			}
			if r := s.refusal(it); r != nil {
				refused = append(refused, *r)
				continue
			}
			p := s.PRDs[prd]
			out = append(out, Candidate{Item: it, Key: p.Key(), Epic: p.Epic, Title: prd})
		}
	}
	return out, refused, nil
}

// refusal is why promote refuses an approved entry nothing else holds: the
// PRD is active in another feature run (queued or being enqueued there, or
// runnable in a feature before this one), or its key was enqueued already.
// It is a function of the state, so that every view (manifest, report,
// board) says it, and it lifts itself when the other entry is removed or a
// new approval gives a new key.
func (s *State) refusal(it *Item) *Refusal {
	p := s.PRDs[it.PRD]
	active := func(other *Item, how string) *Refusal {
		return &Refusal{Item: it, Code: CodeDuplicateActiveEntry,
			Message: fmt.Sprintf("PRD %s is active in feature %s already (%s); this entry waits: take one out with spool prd remove %s --feature %s",
				it.PRD, other.Feature, how, it.PRD, it.Feature),
			fields: []any{"prd_slug", it.PRD, "feature_slug", it.Feature, "active_in", other.Feature}}
	}
	others := s.ItemsOf(it.PRD)
	for _, other := range others {
		switch {
		case other == it:
		case other.InFlight:
			return active(other, "being enqueued")
		case other.State == Queued:
			return active(other, string(Queued))
		}
	}
	if epic, ok := s.Keys[p.Key()]; ok {
		return &Refusal{Item: it, Code: CodeDuplicateIdempotencyKey,
			Message: fmt.Sprintf("idempotency key %s was enqueued already (epic %s), and a key is enqueued once; this entry waits: "+
				"take it out (spool prd remove %s --feature %s), or edit the PRD and approve it again (a new approval_version)",
				p.Key(), epic, it.PRD, it.Feature),
			fields: []any{"prd_slug", it.PRD, "feature_slug", it.Feature, "idempotency_key", p.Key(), "epic_id", epic}}
	}
	for _, other := range others {
		if other != it && other.State == Approved && other.Feature < it.Feature {
			return active(other, "runnable") // the first in manifest order goes
		}
	}
	return nil
}

// InFlight returns the items whose enqueue recorded its intent and no
// outcome (spool died in between), in manifest order.
func InFlight(s *State, feature string) []Candidate {
	var out []Candidate
	for _, slug := range s.FeatureSlugs() {
		if feature != "" && slug != feature {
			continue
		}
		for _, prd := range s.Features[slug].Items {
			if it := s.Items[ItemKey{slug, prd}]; it.InFlight {
				out = append(out, Candidate{Item: it, Key: it.Key, Epic: s.PRDs[prd].Epic, Title: prd})
			}
		}
	}
	return out
}

// Started is the intent of an enqueue, appended before the work source is asked.
func (c Candidate) Started() eventlog.Draft {
	return c.event(TypeEnqueueStarted, EnqueueData{Attempt: 1})
}

// Enqueued is its outcome: the epic.
func (c Candidate) Enqueued(epic string, attempt int) eventlog.Draft {
	return c.event(TypeEnqueued, EnqueueData{EpicID: epic, Attempt: attempt})
}

// Failed is a failed attempt; final when it was the retry.
func (c Candidate) Failed(attempt int, err string, final bool) eventlog.Draft {
	return c.event(TypeEnqueueFailed, EnqueueData{Attempt: attempt, Error: err, Final: final})
}

func (c Candidate) event(typ string, d EnqueueData) eventlog.Draft {
	d.FeatureSlug, d.IdempotencyKey = c.Item.Feature, c.Key
	return eventlog.Draft{Type: typ, Subject: PRDSubject(c.Item.PRD), Data: d}
}

// Check records the queue-ready checks of a queued item when they changed.
func Check(it *Item, selectable, doctorPass bool) []eventlog.Draft {
	if it.Selectable == selectable && it.DoctorPass == doctorPass {
		return nil
	}
	return []eventlog.Draft{{Type: TypeChecked, Subject: PRDSubject(it.PRD),
		Data: CheckData{FeatureSlug: it.Feature, Selectable: selectable, DoctorPass: doctorPass}}}
}

// Rechecks are the queued items whose readiness, as recorded, says a check
// passes: watch and the git hooks check again whether their epic still has
// ready work and record what changed (Check, with the doctor_pass the last
// prd check found), so that a readiness that no longer holds is withdrawn
// without anyone running prd check.
func Rechecks(s *State) []*Item {
	var out []*Item
	for _, slug := range s.FeatureSlugs() {
		for _, prd := range s.Features[slug].Items {
			if it := s.Items[ItemKey{slug, prd}]; it.State == Queued && (it.Selectable || it.DoctorPass) && s.PRDs[prd].Epic != "" {
				out = append(out, it)
			}
		}
	}
	return out
}

// QueueReady reports whether a PRD is ready for agents: queued, with a
// handle, and both readiness checks passing.
func (s *State) QueueReady(it *Item) bool {
	return it.State == Queued && s.PRDs[it.PRD].Epic != "" && it.Selectable && it.DoctorPass
}
