package workqueue

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/ids"
)

// The Decide functions are pure: state, command and clock in, events or a
// typed error out. A returned error means nothing is appended.

// NewTask is spool task add.
type NewTask struct {
	Title       string
	Description string
	Design      string
	Acceptance  string
	Notes       string
	ExternalRef string // bd's reference to another system's issue
	Assignee    string
	Owner       string // bd's owner, when not the actor (bd create: git user.email)
	Priority    int
	Type        string
	Labels      []string
	Deps        []string
	Parent      string
	Links       []Link // dependencies that do not block (bd create --deps related:ID): ID and Type
	// ID is the id to give the task; "" derives a new one. A PRD's epic
	// takes its key's (ids.ForKey).
	ID string
}

// ValidateLabel refuses labels people cannot type back: empty, whitespace or commas.
func ValidateLabel(l string) error {
	if l == "" || strings.ContainsFunc(l, func(r rune) bool { return unicode.IsSpace(r) || r == ',' }) {
		return fault.New(CodeInvalidLabel, nil,
			fmt.Sprintf("label %q must be non-empty, without whitespace or commas", l), "label", l)
	}
	return nil
}

// ValidateLabels is ValidateLabel of every label in lists (a command's
// label flags).
func ValidateLabels(lists ...[]string) error {
	for _, l := range lists {
		for _, label := range l {
			if err := ValidateLabel(label); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidatePriority refuses a priority outside 0 (most urgent) to 4.
func ValidatePriority(p int) error {
	if p < 0 || p > MaxPriority {
		return fault.New(fault.CodeInvalidPriority, nil, fmt.Sprintf("priority must be 0 (most urgent) to 4, got %d", p), "priority", p)
	}
	return nil
}

// Validate checks a new task's fields (usage errors).
func (n *NewTask) Validate() error {
	n.Title = strings.TrimSpace(n.Title)
	if n.Title == "" {
		return fault.Usagef(CodeEmptyTitle, "a task needs a non-empty title")
	}
	if err := ValidatePriority(n.Priority); err != nil {
		return err
	}
	if n.Type == "" {
		n.Type = "task"
	}
	if !slices.Contains(IssueTypes, n.Type) {
		return fault.New(CodeInvalidType, nil, fmt.Sprintf("type must be one of %s, got %q", strings.Join(IssueTypes, ", "), n.Type), "type", n.Type)
	}
	for _, l := range n.Links {
		if err := CheckDepType(l.Type); err != nil {
			return err
		}
		if l.Type == DepBlocks || l.Type == DepParentChild {
			return fault.Usagef(CodeUnsupportedDependency, "a link's type is not %s: that is a blocker or the parent", l.Type)
		}
	}
	return ValidateLabels(n.Labels)
}

// AddTask creates a task with a fresh id derived from the writer.
func AddTask(s TaskIndex, n NewTask, prefix, writer string, now time.Time) (eventlog.Draft, string, error) {
	if err := n.Validate(); err != nil {
		return eventlog.Draft{}, "", err
	}
	if !ValidPrefix(prefix) {
		return eventlog.Draft{}, "", fault.New(config.CodeInvalidConfigValue, nil,
			fmt.Sprintf("ids.prefix %q must be 1-16 lowercase letters and digits, starting with a letter", prefix), "key", "ids.prefix")
	}
	refs := append(slices.Clone(n.Deps), n.Parent)
	for _, l := range n.Links {
		refs = append(refs, l.ID)
	}
	for _, id := range refs {
		if id != "" && !s.HasTask(id) {
			return eventlog.Draft{}, "", NoTask(id)
		}
	}
	id := n.ID
	if id == "" {
		id = ids.New(prefix, writer, n.Title, now, s.TaskCount(), s.HasTask)
	} else if s.HasTask(id) {
		return eventlog.Draft{}, "", TaskExists(id)
	}
	deps := slices.Clone(n.Deps)
	sort.Strings(deps)
	d := CreatedData{Title: n.Title, Description: n.Description, Design: n.Design, Acceptance: n.Acceptance, Notes: n.Notes,
		ExternalRef: n.ExternalRef, Assignee: n.Assignee, Owner: n.Owner, Priority: n.Priority, IssueType: n.Type,
		Labels: NormLabels(n.Labels), Parent: n.Parent, Deps: slices.Compact(deps)}
	return eventlog.Draft{Type: TypeCreated, Subject: id, Data: d}, id, nil
}

// BatchIndex is a task index with the ids one decision makes, so that
// several AddTask calls in one append never reuse an id.
type BatchIndex struct {
	base TaskIndex
	made map[string]bool
}

// NewBatchIndex wraps the index the decision reads.
func NewBatchIndex(base TaskIndex) *BatchIndex {
	return &BatchIndex{base: base, made: map[string]bool{}}
}

// Made records an id this decision created.
func (b *BatchIndex) Made(id string)         { b.made[id] = true }
func (b *BatchIndex) HasTask(id string) bool { return b.made[id] || b.base.HasTask(id) }
func (b *BatchIndex) TaskCount() int         { return b.base.TaskCount() + len(b.made) }

// Update is spool task update; nil fields are left alone. SetLabels, when
// not nil, replaces every label (bd update --set-labels), then AddLabels
// are added and RemoveLabels removed. The blocked label is Blocked: adding
// it blocks the task (task.blocked), removing it unblocks it, and
// SetLabels without it leaves it as it is.
type Update struct {
	Title        *string
	Description  *string
	Design       *string
	Acceptance   *string
	Notes        *string
	ExternalRef  *string
	Assignee     *string
	Priority     *int
	Status       *string
	AddLabels    []string
	RemoveLabels []string
	SetLabels    []string
	Parent       *string // the new parent; "" removes it
}

// Statuses spool task update accepts.
var Statuses = []string{StatusOpen, StatusInProgress, StatusDeferred, StatusClosed}

// Validate checks an update's fields (usage errors).
func (u *Update) Validate() error {
	if err := u.ValidateFields(); err != nil {
		return err
	}
	if u.Empty() {
		return fault.Usagef(CodeNothingToUpdate, "give at least one of --title, -d, --design, --acceptance, --notes, --assignee, -p, --status, --add-label, --remove-label, --parent")
	}
	return nil
}

// ValidateFields checks the fields that are set; an empty update passes.
func (u *Update) ValidateFields() error {
	if u.Title != nil {
		title := strings.TrimSpace(*u.Title)
		if title == "" {
			return fault.Usagef(CodeEmptyTitle, "a task needs a non-empty title")
		}
		u.Title = &title
	}
	if u.Priority != nil {
		if err := ValidatePriority(*u.Priority); err != nil {
			return err
		}
	}
	if u.Status != nil && !slices.Contains(Statuses, *u.Status) {
		return fault.New(CodeInvalidStatus, nil,
			fmt.Sprintf("status must be one of %s, got %q", strings.Join(Statuses, ", "), *u.Status), "status", *u.Status)
	}
	return ValidateLabels(u.AddLabels, u.RemoveLabels, u.SetLabels)
}

// Empty reports whether the update sets nothing.
func (u *Update) Empty() bool {
	return u.Title == nil && u.Description == nil && u.Design == nil && u.Acceptance == nil && u.Notes == nil &&
		u.ExternalRef == nil && u.Assignee == nil && u.Priority == nil && u.Status == nil && len(u.AddLabels)+len(u.RemoveLabels) == 0 &&
		u.SetLabels == nil && u.Parent == nil
}

// TouchesBlocked reports whether the update adds or removes the blocked
// label, which blocks or unblocks the task (the queue's history decides
// with the tracker then).
func (u *Update) TouchesBlocked() bool {
	return slices.Contains(u.AddLabels, BlockedLabel) || slices.Contains(u.RemoveLabels, BlockedLabel) ||
		slices.Contains(u.SetLabels, BlockedLabel)
}

// UpdateTask changes a task's fields. A status change goes through the same
// rules as close and reopen (and is recorded as task.closed or task.reopened,
// so a claim is released); in_progress belongs to spool next.
func UpdateTask(s *State, id string, u Update) ([]eventlog.Draft, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	t, err := taskOf(s, id)
	if err != nil {
		return nil, err
	}
	var drafts []eventlog.Draft
	status := u.Status
	if status != nil {
		switch to := *status; {
		case to == t.Status:
			status = nil // no change; the other fields still apply
		case to == StatusInProgress:
			return nil, invalidTransition(id, "in_progress is set by claiming the task with spool next")
		case to == StatusClosed:
			closed, err := CloseTasks(s, []string{id}, "")
			if err != nil {
				return nil, err
			}
			drafts, status = append(drafts, closed...), nil
		case t.Status == StatusClosed && to == StatusOpen:
			reopened, err := Reopen(s, id)
			if err != nil {
				return nil, err
			}
			drafts, status = append(drafts, reopened), nil
		case t.Status == StatusClosed:
			return nil, invalidTransition(id, "is closed; reopen it first")
		}
	}
	// Only what changes is recorded: an update that changes nothing appends nothing.
	x := t.Detail()
	changed := func(to *string, cur string) *string {
		if to != nil && *to != cur {
			return to
		}
		return nil
	}
	d := UpdatedData{Status: status, Title: changed(u.Title, t.Title)}
	d.Description, d.Design, d.Acceptance = changed(u.Description, x.Description), changed(u.Design, x.Design), changed(u.Acceptance, x.Acceptance)
	d.Notes, d.Assignee = changed(u.Notes, x.Notes), changed(u.Assignee, x.Assignee)
	d.ExternalRef = changed(u.ExternalRef, x.ExternalRef)
	if u.Priority != nil && *u.Priority != t.Priority {
		d.Priority = u.Priority
	}
	// The fold adds, then removes: record only the difference that makes.
	// The blocked label is not a label here but Blocked, below.
	notBlocked := func(l string) bool { return l != BlockedLabel }
	labels := t.Labels
	if u.SetLabels != nil {
		labels = u.SetLabels
	}
	final := NormLabels(append(slices.Clone(labels), u.AddLabels...))
	final = slices.DeleteFunc(final, func(l string) bool { return slices.Contains(u.RemoveLabels, l) || !notBlocked(l) })
	for _, l := range final {
		if !t.HasLabel(l) {
			d.AddLabels = append(d.AddLabels, l)
		}
	}
	for _, l := range t.Labels {
		if !slices.Contains(final, l) && notBlocked(l) {
			d.RemoveLabels = append(d.RemoveLabels, l)
		}
	}
	var block []eventlog.Draft
	switch blocked := s.isBlocked(id); {
	case slices.Contains(u.RemoveLabels, BlockedLabel): // removing wins over adding, as in the fold
		if blocked {
			un, err := Unblock(s, id, false)
			if err != nil {
				return nil, err
			}
			block = append(block, un)
		}
	case slices.Contains(u.AddLabels, BlockedLabel) || slices.Contains(u.SetLabels, BlockedLabel):
		if !blocked {
			b, err := Block(s, id, "blocked label added")
			if err != nil {
				return nil, err
			}
			block = append(block, b)
		}
	}
	reparent, err := reparent(s, t, u.Parent)
	if err != nil {
		return nil, err
	}
	drafts = append(append(block, reparent...), drafts...)
	if !d.empty() {
		drafts = append([]eventlog.Draft{{Type: TypeUpdated, Subject: id, Data: d}}, drafts...)
	}
	return drafts, nil
}

// reparent moves t under parent ("": under none). A task cannot be its
// own ancestor, nor wait for itself through its parents and blockers (as
// AddDep refuses): its parent waits for it, or is it.
func reparent(s Tracker, t *Task, parent *string) ([]eventlog.Draft, error) {
	if parent == nil || *parent == t.Parent {
		return nil, nil
	}
	p := *parent
	if p != "" {
		if _, err := taskOf(s, p); err != nil {
			return nil, err
		}
		if p == t.ID || s.reaches(p, t.ID) {
			why := fmt.Sprintf("%s already waits for %s (through its parents or blockers)", p, t.ID)
			if p == t.ID {
				why = "a task cannot be its own parent"
			} else if s.descends(p, t.ID) {
				why = fmt.Sprintf("%s is under %s, and a task cannot be its own ancestor", p, t.ID)
			}
			return nil, fault.New(CodeDependencyCycle, fault.ErrConflict,
				fmt.Sprintf("%s cannot be a child of %s: %s", t.ID, p, why), "id", t.ID, "parent", p)
		}
	}
	return []eventlog.Draft{{Type: TypeReparented, Subject: t.ID, Data: ParentData{Parent: p}}}, nil
}

func invalidTransition(id, msg string) error {
	return fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition, fmt.Sprintf("task %s: %s", id, msg), "id", id)
}

// CloseTasks closes every task or none.
func CloseTasks(s Tracker, ids []string, reason string) ([]eventlog.Draft, error) {
	var drafts []eventlog.Draft
	seen := map[string]bool{}
	for _, id := range ids {
		t, err := taskOf(s, id)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			continue // named twice: closed once, as bd close does
		}
		if t.Status == StatusClosed {
			return nil, invalidTransition(id, "already closed")
		}
		seen[id] = true
		drafts = append(drafts, eventlog.Draft{Type: TypeClosed, Subject: id, Data: ClosedData{Reason: reason}})
	}
	return drafts, nil
}

// MayClose refuses to close a task another actor holds under a live claim:
// its claimant finishes it (done), or an admin closes it on purpose
// (override: task close --force by one of admins), so that a typo in an
// id never pulls work from under an agent.
func MayClose(s History, id, actor string, override bool, now time.Time) error {
	h := s.Entry(id)
	if override || h == nil || !h.leaseHeld(now) || h.Actor == actor || h.Worker == actor {
		return nil
	}
	return fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
		fmt.Sprintf("task %s is claimed by %s until %s: they finish it (spool done), or an admin closes it with --force", id, h.Actor, h.LeaseUntil.Format(time.RFC3339)),
		"id", id, "claimant", h.Actor, "actor", actor)
}

// Reopen opens a closed task again.
func Reopen(s Tracker, id string) (eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return eventlog.Draft{}, err
	}
	if t.Status != StatusClosed {
		return eventlog.Draft{}, invalidTransition(id, "is not closed")
	}
	return eventlog.Draft{Type: TypeReopened, Subject: id, Data: struct{}{}}, nil
}

// AddDep makes id wait for blocker; a cycle is refused.
func AddDep(s Tracker, id, blocker string) (eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return eventlog.Draft{}, err
	}
	if _, err := taskOf(s, blocker); err != nil {
		return eventlog.Draft{}, err
	}
	for _, d := range t.Blockers {
		if d.ID == blocker {
			return eventlog.Draft{}, fault.New(CodeDependencyExists, fault.ErrConflict,
				fmt.Sprintf("%s already depends on %s", id, blocker), "id", id, "blocker", blocker)
		}
	}
	if id == blocker {
		return eventlog.Draft{}, fault.New(CodeDependencyCycle, fault.ErrConflict,
			fmt.Sprintf("%s cannot depend on itself", id), "id", id, "blocker", blocker)
	}
	if s.reaches(blocker, id) {
		return eventlog.Draft{}, fault.New(CodeDependencyCycle, fault.ErrConflict,
			fmt.Sprintf("%s cannot depend on %s: %s already waits for %s", id, blocker, blocker, id), "id", id, "blocker", blocker)
	}
	return eventlog.Draft{Type: TypeDepAdded, Subject: id, Data: DepData{Blocker: blocker}}, nil
}

// Dependency types as bd 0.49.1 has them (its internal/types): blocks and
// parent-child are spool's blockers and parents; conditional-blocks and
// waits-for gate bd's ready work in ways spool does not (a blocker closed
// as a failure; a spawner's children), so they are refused rather than
// kept as links that would not block; every other type is a link, shown
// and exported, that blocks nothing.
const (
	DepConditionalBlocks = "conditional-blocks"
	DepWaitsFor          = "waits-for"
	DepRelatesTo         = "relates-to"
)

// CodeUnsupportedDependency is a dependency type spool does not keep.
var CodeUnsupportedDependency = fault.Register(fault.Usage, "unsupported_dependency_type")

// CheckDepType refuses a dependency type spool does not keep: bd's gates,
// and what bd would refuse (empty, over 50 characters), or spool could not
// print back (whitespace, a comma or colon, which --deps uses).
func CheckDepType(typ string) error {
	switch {
	case typ == DepConditionalBlocks, typ == DepWaitsFor:
		return fault.New(CodeUnsupportedDependency, nil,
			fmt.Sprintf("dependency type %s is not supported by spool: in bd it gates ready work on how or whether other issues close, which spool's ready does not do; use blocks", typ),
			"type", typ)
	case typ == "", len(typ) > 50, strings.ContainsFunc(typ, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ':' }):
		return fault.New(CodeUnsupportedDependency, nil,
			fmt.Sprintf("dependency type %q must be 1-50 characters without whitespace, commas or colons", typ), "type", typ)
	}
	return nil
}

// AddDepOf makes id depend on other with bd's dependency type typ ("" is
// blocks). As bd, a dependency that would close a cycle through any
// dependencies is refused, but relates-to, which goes both ways.
func AddDepOf(s Tracker, id, other, typ string) (eventlog.Draft, error) {
	if typ == "" || typ == DepBlocks {
		if id != other && s.Task(id) != nil && s.Task(other) != nil && s.reachesAny(other, id) {
			return eventlog.Draft{}, fault.New(CodeDependencyCycle, fault.ErrConflict,
				fmt.Sprintf("cannot add dependency: would create a cycle (%s → %s → ... → %s)", id, other, id), "id", id, "blocker", other)
		}
		return AddDep(s, id, other)
	}
	if err := CheckDepType(typ); err != nil {
		return eventlog.Draft{}, err
	}
	t, err := taskOf(s, id)
	if err != nil {
		return eventlog.Draft{}, err
	}
	if _, err := taskOf(s, other); err != nil {
		return eventlog.Draft{}, err
	}
	exists := func() error {
		return fault.New(CodeDependencyExists, fault.ErrConflict,
			fmt.Sprintf("%s already depends on %s (%s)", id, other, typ), "id", id, "blocker", other, "type", typ)
	}
	if typ == DepParentChild && t.Parent == other || slices.ContainsFunc(t.Links, func(l Link) bool { return l.ID == other && l.Type == typ }) {
		return eventlog.Draft{}, exists()
	}
	if id == other {
		return eventlog.Draft{}, fault.New(CodeDependencyCycle, fault.ErrConflict,
			fmt.Sprintf("%s cannot depend on itself", id), "id", id, "blocker", other)
	}
	if typ == DepParentChild && t.Parent != "" {
		return eventlog.Draft{}, fault.New(CodeDependencyExists, fault.ErrConflict,
			fmt.Sprintf("%s has a parent already, %s: a task has one parent in spool (remove that dependency first)", id, t.Parent),
			"id", id, "blocker", other, "parent", t.Parent)
	}
	if typ != DepRelatesTo && s.reachesAny(other, id) {
		return eventlog.Draft{}, fault.New(CodeDependencyCycle, fault.ErrConflict,
			fmt.Sprintf("cannot add dependency: would create a cycle (%s → %s → ... → %s)", id, other, id), "id", id, "blocker", other)
	}
	return eventlog.Draft{Type: TypeDepAdded, Subject: id, Data: DepData{Blocker: other, Type: typ}}, nil
}

// RemoveDeps removes every dependency of id on other, whatever its type,
// as bd dep remove does: one event each.
func RemoveDeps(s Tracker, id, other string) ([]eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return nil, err
	}
	var drafts []eventlog.Draft
	if t.Parent == other {
		drafts = append(drafts, eventlog.Draft{Type: TypeDepRemoved, Subject: id, Data: DepData{Blocker: other, Type: DepParentChild}})
	}
	if slices.ContainsFunc(t.Blockers, func(d Dep) bool { return d.ID == other }) {
		drafts = append(drafts, eventlog.Draft{Type: TypeDepRemoved, Subject: id, Data: DepData{Blocker: other}})
	}
	for _, l := range t.Links {
		if l.ID == other {
			drafts = append(drafts, eventlog.Draft{Type: TypeDepRemoved, Subject: id, Data: DepData{Blocker: other, Type: l.Type}})
		}
	}
	if len(drafts) == 0 {
		return nil, fault.New(fault.CodeNotFound, ErrNoDependency,
			fmt.Sprintf("%s does not depend on %s", id, other), "id", id, "blocker", other)
	}
	return drafts, nil
}

// RemoveDep removes a dependency.
func RemoveDep(s Tracker, id, blocker string) (eventlog.Draft, error) {
	t, err := taskOf(s, id)
	if err != nil {
		return eventlog.Draft{}, err
	}
	for _, d := range t.Blockers {
		if d.ID == blocker {
			return eventlog.Draft{Type: TypeDepRemoved, Subject: id, Data: DepData{Blocker: blocker}}, nil
		}
	}
	return eventlog.Draft{}, fault.New(fault.CodeNotFound, ErrNoDependency,
		fmt.Sprintf("%s does not depend on %s", id, blocker), "id", id, "blocker", blocker)
}

// Note is a comment spool itself leaves on a task, whichever tracker has
// it: with a bd/br source the comment goes to the bead (SyncRequests), and
// spool's tracker, which has no such task, passes it over.
func Note(id, text string) eventlog.Draft {
	return eventlog.Draft{Type: TypeCommented, Subject: id, Data: CommentData{Text: text}}
}

// AddComment notes text on a task.
func AddComment(s Tracker, id, text string) (eventlog.Draft, error) {
	if strings.TrimSpace(text) == "" {
		return eventlog.Draft{}, fault.Usagef(CodeEmptyComment, "a comment needs text")
	}
	if _, err := taskOf(s, id); err != nil {
		return eventlog.Draft{}, err
	}
	return eventlog.Draft{Type: TypeCommented, Subject: id, Data: CommentData{Text: text}}, nil
}

// failure returns the events of a failed attempt of h (already counted
// the claim) and its consequences under the policy.
func failure(p Policy, h Entry, prio int, first eventlog.Draft, msg string, now time.Time) []eventlog.Draft {
	drafts := []eventlog.Draft{first}
	h.Failures++
	out := p.AfterFailure(h, prio)
	switch {
	case out.Abandon:
		drafts = append(drafts, eventlog.Draft{Type: TypeAbandoned, Subject: h.ID,
			Data: AbandonedData{TaskID: h.ID, Attempts: h.Attempts, LastError: msg, MaxFailures: p.MaxFailures}})
	case out.Block:
		drafts = append(drafts, eventlog.Draft{Type: TypeBlocked, Subject: h.ID,
			Data: BlockedData{TaskID: h.ID, TotalAttempts: h.Failures, LastFailureReason: msg}})
	case out.DemoteTo >= 0:
		drafts = append(drafts, eventlog.Draft{Type: TypeDemoted, Subject: h.ID,
			Data: DemotedData{From: prio, To: out.DemoteTo, Failures: h.Failures}})
	}
	return drafts
}

// priorityOf is the task's current priority (native) or its priority at the claim.
func (s *State) priorityOf(h Entry) int {
	if t := s.Task(h.ID); t != nil {
		return t.Priority
	}
	return h.Priority
}

// Expire returns the events for every claim whose lease ran out by now
// (leaseRunOut), in id order.
func Expire(s *State, p Policy, now time.Time) []eventlog.Draft {
	var ids []string
	for id, until := range s.Claims() {
		if leaseRunOut(until, now) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var drafts []eventlog.Draft
	for _, id := range ids {
		h := *s.Entry(id)
		drafts = append(drafts, p.expiry(h, s.priorityOf(h), now)...)
	}
	return drafts
}

// expiry is the events of h's lease running out, for a task at priority
// prio: the attempt failed ("lease expired", dated at the lease's end),
// with the policy's consequences. The one place they are made: Expire
// records them, Effective folds them.
func (p Policy) expiry(h Entry, prio int, now time.Time) []eventlog.Draft {
	first := eventlog.Draft{Type: TypeLeaseExpired, Subject: h.ID,
		Data: LeaseExpiredData{Attempt: h.Attempts, Worker: h.Worker, LeaseUntil: h.LeaseUntil}}
	return failure(p, h, prio, first, LeaseExpiredError, now)
}

// NextExpiry is when the first live claim's lease runs out (zero: none),
// the time Expire next has something to record.
func NextExpiry(h History, now time.Time) time.Time {
	var at time.Time
	for _, until := range h.Claims() {
		if !leaseRunOut(until, now) && (at.IsZero() || until.Before(at)) {
			at = until
		}
	}
	return at
}

// Overlay returns the tasks and entries drafts touch, copied from s with
// the drafts applied, leaving s as it was: next decides its claim on the
// state after the expiries it records. Lookups try the overlay first.
func Overlay(s *State, drafts []eventlog.Draft, actor string, now time.Time) (*State, error) {
	o := NewState()
	for _, d := range drafts {
		if t := s.Task(d.Subject); t != nil && o.trk.m[d.Subject] == nil {
			o.trk.m[d.Subject] = t.clone() // deep: the drafts change the detail too (unassign)
		}
		if h := s.Entry(d.Subject); h != nil && o.hst.m[d.Subject] == nil {
			o.hst.m[d.Subject] = h.clone()
		}
		e, err := d.Event(actor, now)
		if err != nil {
			return nil, err
		}
		if err := o.Apply(e); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// layered looks tasks and entries up in the overlay, then in the base.
type layered struct{ base, over *State }

func (l layered) task(id string) *Task {
	if t := l.over.trk.m[id]; t != nil {
		return t
	}
	return l.base.Task(id)
}

func (l layered) entry(id string) *Entry {
	if h := l.over.hst.m[id]; h != nil {
		return h
	}
	return l.base.Entry(id)
}

func (l layered) isBlocked(id string) bool { return blockedIn(id, l.entry, l.task) }

// Claim is what next decided.
type Claim struct {
	Task       Candidate `json:"task"`
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
}

// Next records expired leases, then claims the first eligible candidate for
// worker. cands nil means the native tracker's ready tasks. A nil claim means
// nothing is eligible (the expiries are still returned).
func Next(s *State, cands []Candidate, native bool, p Policy, g Gate, worker, actor string, now time.Time) ([]eventlog.Draft, *Claim, error) {
	drafts := Expire(s, p, now)
	if !native {
		drafts = append(drafts, UnblockedAtSource(s, cands)...)
	}
	over, err := Overlay(s, drafts, actor, now)
	if err != nil {
		return nil, nil, err
	}
	view := layered{s, over}
	var c Candidate
	if native {
		var ok bool
		if c, ok = view.firstEligible(p, g, now); !ok {
			return drafts, nil, nil
		}
	} else {
		// The policy's demotion holds whatever the source reports (its
		// update may have failed): a bead is never more urgent in spool's
		// queue than the priority the policy last gave it.
		cands = slices.Clone(cands)
		for i := range cands {
			if h := view.entry(cands[i].ID); h != nil && h.Demoted && cands[i].Priority < h.DemotedTo {
				cands[i].Priority = h.DemotedTo
			}
		}
		eligible := p.Select(cands, view.entry, g, now, 1)
		if len(eligible) == 0 {
			return drafts, nil, nil
		}
		c = eligible[0]
	}
	attempt := 1
	if h := view.entry(c.ID); h != nil {
		attempt = h.Attempts + 1
	}
	claim := &Claim{Task: c, Attempt: attempt, Worker: worker, LeaseUntil: now.Add(p.Lease)}
	source := SourceNative
	if !native {
		source = "external"
	}
	drafts = append(drafts, eventlog.Draft{Type: TypeClaimed, Subject: c.ID,
		Data: ClaimedData{Attempt: attempt, Worker: worker, LeaseUntil: claim.LeaseUntil, Priority: c.Priority, Source: source}})
	return drafts, claim, nil
}

// held returns the live claim of id that actor holds: they claimed it, or
// it was claimed for them (next -w, bd update -a), so that a worker an
// orchestrator claimed for finishes its own attempt.
func held(s *State, id, actor string, now time.Time) (Entry, error) {
	h := s.Entry(id)
	if h == nil {
		if !s.HasTask(id) {
			return Entry{}, NoTask(id)
		}
		return Entry{}, notClaimed(id, "it was never claimed")
	}
	if h.Status != HistWorking {
		return Entry{}, notClaimed(id, "it is "+string(h.Status))
	}
	if h.leaseExpired(now) {
		return Entry{}, notClaimed(id, "its lease expired at "+h.LeaseUntil.Format(time.RFC3339))
	}
	if h.Actor != actor && h.Worker != actor {
		by := h.Actor
		if h.Worker != h.Actor {
			by += " for " + h.Worker
		}
		return Entry{}, fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
			fmt.Sprintf("task %s is claimed by %s, not %s", id, by, actor), "id", id, "claimant", h.Actor, "worker", h.Worker, "actor", actor)
	}
	return *h, nil
}

func notClaimed(id, why string) error {
	return fault.New(CodeNotClaimed, fault.ErrInvalidTransition,
		fmt.Sprintf("task %s is not claimed: %s", id, why), "id", id)
}

// Heartbeat extends the lease of a claim the actor holds.
func Heartbeat(s *State, p Policy, id, actor string, now time.Time) (eventlog.Draft, time.Time, error) {
	if _, err := held(s, id, actor, now); err != nil {
		return eventlog.Draft{}, time.Time{}, err
	}
	until := now.Add(p.Lease)
	return eventlog.Draft{Type: TypeHeartbeat, Subject: id, Data: HeartbeatData{LeaseUntil: until}}, until, nil
}

// Done records a successful attempt (RecordSuccess); a native task is closed.
func Done(s *State, p Policy, id, actor, reason string, now time.Time) ([]eventlog.Draft, error) {
	h, err := held(s, id, actor, now)
	if err != nil {
		return nil, err
	}
	drafts := []eventlog.Draft{{Type: TypeSucceeded, Subject: id, Data: AttemptData{Attempt: h.Attempts}}}
	if t := s.Task(id); t != nil && t.Status != StatusClosed {
		drafts = append(drafts, eventlog.Draft{Type: TypeClosed, Subject: id, Data: ClosedData{Reason: reason}})
	}
	return drafts, nil
}

// Fail records a failed attempt (RecordFailure) and the policy's consequences.
func Fail(s *State, p Policy, id, actor, msg string, now time.Time) ([]eventlog.Draft, error) {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return nil, fault.Usagef(CodeEmptyError, "--error needs a description of the failure")
	}
	h, err := held(s, id, actor, now)
	if err != nil {
		return nil, err
	}
	first := eventlog.Draft{Type: TypeFailed, Subject: id, Data: FailedData{Attempt: h.Attempts, Error: msg}}
	return failure(p, h, s.priorityOf(h), first, msg, now), nil
}

// Rejected is done that did not merge: the merge train refused the branch
// of id's successful attempt for good (failed_terminal). The task is
// reopened and that attempt counts as failed with the train's reason msg,
// under the policy (retry, demotion, Blocked) as an agent's failure would.
// Only a completed task can be: one reopened since is no longer that done.
func Rejected(s *State, p Policy, id, msg string, now time.Time) ([]eventlog.Draft, error) {
	h := s.Entry(id)
	if h == nil {
		if !s.HasTask(id) {
			return nil, NoTask(id)
		}
		return nil, invalidTransition(id, "was never claimed")
	}
	if _, ok := h.Status.after(TypeReopened); !ok { // only a completed entry is reopened
		return nil, invalidTransition(id, "is "+string(h.Status)+", not completed")
	}
	drafts := []eventlog.Draft{{Type: TypeReopened, Subject: id, Data: ReopenedData{Reason: msg}}}
	first := eventlog.Draft{Type: TypeFailed, Subject: id, Data: FailedData{Attempt: h.Attempts, Error: msg}}
	return append(drafts, failure(p, *h, s.priorityOf(*h), first, msg, now)...), nil
}

// Retry puts an abandoned, blocked or failed task back to pending, attempts reset.
func Retry(s *State, p Policy, id string, now time.Time) (eventlog.Draft, error) {
	h := s.Entry(id)
	if h == nil {
		if s.Task(id) == nil {
			return eventlog.Draft{}, NoTask(id)
		}
		if s.Task(id).HasLabel(BlockedLabel) {
			return eventlog.Draft{Type: TypeRetried, Subject: id, Data: RetriedData{PreviousStatus: HistBlocked}}, nil
		}
		return eventlog.Draft{}, invalidTransition(id, "has no failed attempts to retry")
	}
	e := p.Effective(*h, now)
	status := e.Status
	if e.blocked() {
		status = HistBlocked
	}
	if slices.Contains(retriedFrom, status) {
		return eventlog.Draft{Type: TypeRetried, Subject: id, Data: RetriedData{PreviousStatus: status, PreviousAttempts: e.Attempts,
			RestorePriority: s.restorable(id)}}, nil
	}
	return eventlog.Draft{}, invalidTransition(id, "is "+string(status)+"; only abandoned, blocked or failed tasks can be retried")
}

func (s *State) isBlocked(id string) bool { return blockedIn(id, s.Entry, s.Task) }

// blockedIn is the rule of a Blocked task, given where to look it up: the
// queue holds it Blocked, or the task carries the blocked label (an
// import's, or bd's). The task is not looked up when the entry says so.
func blockedIn(id string, entry func(string) *Entry, task func(string) *Task) bool {
	if h := entry(id); h != nil && h.blocked() {
		return true
	}
	t := task(id)
	return t != nil && t.HasLabel(BlockedLabel)
}

// blocked reports whether the queue holds h Blocked. (The fold sets the
// status blocked only with the flag; Effective's view of an entry does too.)
func (h *Entry) blocked() bool { return h.Blocked || h.Status == HistBlocked }

// Block marks a task Blocked by hand.
func Block(s *State, id, reason string) (eventlog.Draft, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return eventlog.Draft{}, fault.Usagef(CodeEmptyReason, "--reason needs text")
	}
	h := s.Entry(id)
	if h == nil && s.Task(id) == nil {
		return eventlog.Draft{}, NoTask(id)
	}
	if s.isBlocked(id) {
		return eventlog.Draft{}, invalidTransition(id, "is already blocked")
	}
	d := BlockedData{TaskID: id, Reason: reason}
	if h != nil {
		d.TotalAttempts, d.LastFailureReason = h.Failures, h.LastError
	}
	return eventlog.Draft{Type: TypeBlocked, Subject: id, Data: d}, nil
}

// Unblock clears Blocked, optionally resetting the attempt counters.
func Unblock(s *State, id string, reset bool) (eventlog.Draft, error) {
	if s.Entry(id) == nil && s.Task(id) == nil {
		return eventlog.Draft{}, NoTask(id)
	}
	if !s.isBlocked(id) {
		return eventlog.Draft{}, invalidTransition(id, "is not blocked")
	}
	return eventlog.Draft{Type: TypeUnblocked, Subject: id, Data: UnblockedData{ResetAttempts: reset, RestorePriority: s.restorable(id)}}, nil
}

// restorable is the priority retry and unblock put back: the one the task
// had before the progressive policy demoted it, unless someone set another
// since (spool's own tracker: its priority is no longer the policy's). A
// bd/br source's priority spool does not see; there it always puts it back.
func (s *State) restorable(id string) *int {
	h := s.Entry(id)
	if h == nil || !h.Demoted {
		return nil
	}
	if t := s.Task(id); t != nil && t.Priority != h.DemotedTo {
		return nil
	}
	p := h.PriorityBefore
	return &p
}

// UnblockedAtSource returns the unblocks of every Blocked task a bd/br
// source offers as ready again, its blocked label gone, when spool's own
// request to add the label reached the source: someone removed it there,
// which is an unblock (removing the label is how a person unblocks a task). A label spool's request has not put
// on the bead yet (pending, or given up) is not one someone took off.
func UnblockedAtSource(s *State, cands []Candidate) []eventlog.Draft {
	var out []eventlog.Draft
	for _, c := range cands {
		if slices.Contains(c.Labels, BlockedLabel) || !LabelledAtSource(s.Entry(c.ID)) {
			continue
		}
		out = append(out, eventlog.Draft{Type: TypeUnblocked, Subject: c.ID,
			Data: UnblockedData{RestorePriority: s.restorable(c.ID), FromSource: true}})
	}
	return out
}

// LabelledAtSource says whether h is Blocked with its blocked label on the
// bead, as far as spool knows: its request to add it was carried out.
func LabelledAtSource(h *Entry) bool {
	if h == nil || !h.Blocked {
		return false
	}
	labelled := func(p PendingSync) bool { return p.Op == SyncLabelAdd && p.Label == BlockedLabel }
	return !slices.ContainsFunc(h.Pending, labelled) && !slices.ContainsFunc(h.SyncFailed, labelled)
}

// firstEligible is Select over the tracker's ready tasks without building
// the candidate list: it keeps the best task of a walk in ready's order
// (openOrderBy, which passes over what the gate does not admit unread),
// which stops at the first task that cannot beat it.
func (l layered) firstEligible(p Policy, g Gate, now time.Time) (Candidate, bool) {
	s := l.base
	memo := map[string]bool{}
	var best Candidate
	found := false
	consider := func(t *Task) bool {
		if o := l.over.trk.m[t.ID]; o != nil {
			t = o
		}
		c := Candidate{ID: t.ID, Priority: t.Priority, Labels: t.Labels, CreatedAt: t.CreatedAt, queuedAt: t.CreatedAt}
		if found && !candidateLess(c, best) {
			return false // a requeue only moves a task later: neither it nor any after it can beat the best
		}
		if s.EffectiveStatus(t, now) != StatusOpen || !g.Admits(t.Labels) || !g.AdmitsType(t.Type) || s.blockedBy(t, memo, 0) {
			return true // blocked first: it needs no history entry read
		}
		h := l.entry(t.ID)
		if h != nil {
			if p.Skip(c, h, g, now) != "" {
				return true
			}
			c.queuedAt = p.queuedAt(t.CreatedAt, h, now)
		}
		if found && !candidateLess(c, best) {
			return true
		}
		best, found = c, true
		return true
	}
	s.openOrderBy(l.over.trk.m, nil, s.admitted(g, ReadyFilter{}), consider)
	if found {
		best = Candidates([]*Task{l.task(best.ID)})[0]
	}
	return best, found
}

// SyncRequests are the requests a bd/br source must be told of for drafts
// the queue decided: done closes the bead (with reason), a rejected done
// reopens it, Blocked adds the blocked label, unblock and retry of a
// blocked task remove it, demotion (and its undoing) sets the priority,
// spool's own notes are comments. Appended with the drafts, they are the intent the
// service carries out afterwards.
func SyncRequests(drafts []eventlog.Draft, reason string) []eventlog.Draft {
	var out []eventlog.Draft
	req := func(id string, d SyncData) {
		out = append(out, eventlog.Draft{Type: TypeSyncRequested, Subject: id, Data: d})
	}
	for _, d := range drafts {
		switch data := d.Data.(type) {
		case AttemptData:
			if d.Type == TypeSucceeded {
				req(d.Subject, SyncData{Op: SyncClose, Reason: reason})
			}
		case BlockedData:
			req(d.Subject, SyncData{Op: SyncLabelAdd, Label: BlockedLabel})
		case UnblockedData:
			if !data.FromSource {
				req(d.Subject, SyncData{Op: SyncLabelRemove, Label: BlockedLabel})
			}
			if data.RestorePriority != nil {
				req(d.Subject, SyncData{Op: SyncPriority, Priority: data.RestorePriority})
			}
		case RetriedData:
			if data.PreviousStatus == HistBlocked {
				req(d.Subject, SyncData{Op: SyncLabelRemove, Label: BlockedLabel})
			}
			if data.RestorePriority != nil {
				req(d.Subject, SyncData{Op: SyncPriority, Priority: data.RestorePriority})
			}
		case CommentData:
			req(d.Subject, SyncData{Op: SyncComment, Reason: data.Text})
		case ReopenedData:
			req(d.Subject, SyncData{Op: SyncReopen})
		case DemotedData:
			to := data.To
			req(d.Subject, SyncData{Op: SyncPriority, Priority: &to})
		}
	}
	return out
}
