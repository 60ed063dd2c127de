package mergequeue

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/refname"
)

// Policy is the configuration the deciders need.
type Policy struct {
	MaxAttempts int           // merge.max_attempts
	Capacity    int           // merge.capacity; 0 is unlimited
	Lease       time.Duration // merge.lease
	Admins      []string      // admins: may act on anyone's entries and workspaces
	Target      string        // merge.target: a submission of this branch is refused; "" checks nothing
	Aging       time.Duration // merge.aging: a pending entry's priority improves a level per this much waiting (OrderAt); 0 is off
}

// CheckBranch refuses a submission of the target branch itself
// (BranchIsTarget); the service asks it before touching the worktree, and
// DecideSubmit again.
func (p Policy) CheckBranch(workspace, branch string) error {
	if p.Target != "" && branch == p.Target {
		return BranchIsTarget(workspace, branch)
	}
	return nil
}

func (p Policy) admin(actor string) bool { return slices.Contains(p.Admins, actor) }

// SubmitRequest is a submission (QueueSubmissionRequest's fields, as
// merge-queue clients already send them), with the identity the edge read from
// git. ChangeID empty means "generate one" (a plain git repository whose
// commit has no Change-Id trailer); DedupeKey empty means "compute it from the
// workspace identity and change id".
type SubmitRequest struct {
	Workspace      string // display name: the worktree directory's base name
	WorkspaceID    string // identity (WorkspaceID); empty: the display name, as entries of older logs
	Worktree       string // absolute path, informational
	Branch         string
	HeadSHA        string
	ChangeID       string
	ChangeIDSource string
	DedupeKey      string
	Priority       *int // nil: DefaultPriority for a new entry, unchanged otherwise
	BeadID         string
	Actor          string
	// PendingPush, when set, is why the branch could not be pushed (the
	// remote did not answer): the entry is queued waiting for the push
	// (WaitPushPending), which the train retries.
	PendingPush string
}

// SubmissionType says what a submission did: a new entry, an update of the
// active one, or a terminal one resubmitted.
type SubmissionType string

const (
	SubmissionNew         SubmissionType = "new"
	SubmissionUpdated     SubmissionType = "updated"
	SubmissionResubmitted SubmissionType = "resubmitted"
)

// Submission is what DecideSubmit chose.
type Submission struct {
	Drafts    []eventlog.Draft
	EntryID   int64
	Type      SubmissionType
	DedupeKey string
}

// MinPriority and MaxPriority bound priorities (lower is more urgent).
const (
	MinPriority     = 0
	MaxPriority     = 4
	DefaultPriority = 2 // beads' "medium": room to jump ahead and to fall back
)

// P is a priority for SubmitRequest.Priority.
func P(n int) *int { return &n }

// ValidateWorkspaceName checks a workspace's display name: any text a
// directory may be named (spaces included), but not empty, not invalid
// UTF-8 and without control characters. The identity is WorkspaceID.
func ValidateWorkspaceName(ws string) error {
	switch {
	case ws == "":
		return InvalidWorkspaceName(ws, "it is empty")
	case !utf8.ValidString(ws):
		return InvalidWorkspaceName(ws, "it is not valid UTF-8")
	case len(ws) > 255:
		return InvalidWorkspaceName(ws, "it is longer than 255 bytes")
	case strings.IndexFunc(ws, unicode.IsControl) >= 0:
		return InvalidWorkspaceName(ws, "it contains a control character")
	}
	return nil
}

// ValidateWorkspaceID checks a workspace identity: the dedupe key's first
// part, so no ':' and nothing ValidateDedupeKey refuses.
func ValidateWorkspaceID(id string) error {
	switch {
	case id == "":
		return InvalidWorkspaceName(id, "its identity is empty")
	case !utf8.ValidString(id) || strings.ContainsAny(id, ": \t\n\x00") || strings.IndexFunc(id, unicode.IsControl) >= 0:
		return InvalidWorkspaceName(id, "its identity contains ':', whitespace, a control character or invalid UTF-8")
	}
	return nil
}

// ValidHeadSHA reports whether s is a full commit id (SHA-1 or SHA-256, lowercase hex).
func ValidHeadSHA(s string) bool { return refname.ObjectID(s) }

// ComputeDedupeKey is "workspace:change_id", the workspace being its identity
// (WorkspaceID, which holds no ':'): the same inputs always give the same key.
func ComputeDedupeKey(changeID, workspace string) string { return workspace + ":" + changeID }

// ValidateDedupeKey checks the format "workspace:change_id", both parts non-empty.
func ValidateDedupeKey(key string) error {
	ws, change, ok := strings.Cut(key, ":")
	switch {
	case !ok:
		return InvalidDedupeKey(key, "it has no ':'")
	case ws == "":
		return InvalidDedupeKey(key, "the workspace part is empty")
	case change == "":
		return InvalidDedupeKey(key, "the change id part is empty")
	case !utf8.ValidString(key) || strings.ContainsAny(key, " \t\n\x00"):
		return InvalidDedupeKey(key, "it contains whitespace, NUL or invalid UTF-8")
	}
	return nil
}

// GenerateChangeID makes the change id of a workspace+branch submitted for the
// first time without jj or a Change-Id trailer; it is remembered in the log,
// so amending or rebasing the branch keeps it. workspace is the identity.
func GenerateChangeID(workspace, branch, head string, now time.Time) string {
	sum := sha1.Sum([]byte(workspace + "\x00" + branch + "\x00" + head + "\x00" + now.UTC().Format(time.RFC3339Nano)))
	return "I" + hex.EncodeToString(sum[:])
}

// ResolveChangeID fills in the change id a request lacks from the remembered
// identities, or generates one.
func (s *State) ResolveChangeID(req *SubmitRequest, now time.Time) {
	if req.ChangeID != "" {
		return
	}
	req.ChangeIDSource = SourceGenerated
	if id, ok := s.identity(IdentityKey(req.WorkspaceID, req.Branch)); ok {
		req.ChangeID = id
		return
	}
	req.ChangeID = GenerateChangeID(req.WorkspaceID, req.Branch, req.HeadSHA, now)
}

// legacyEntry returns the active entry an older spool queued from the
// worktree req comes from, or nil. Such an entry has no workspace_id (its
// identity is the directory's name); it is the worktree's when the clone
// that queued it (LegacyWriter) is the request's (the identity's first
// part) and its worktree path is the request's, and no entry holds the
// request's own identity. Without this, the first submission after an
// upgrade would queue a second active entry for one worktree.
func (s *State) legacyEntry(req SubmitRequest) *Entry {
	if req.Worktree == "" || s.ActiveByWorkspace(req.WorkspaceID) != nil {
		return nil
	}
	writer, _, _ := strings.Cut(req.WorkspaceID, "/")
	for _, e := range s.index().active {
		if e.LegacyWriter != "" && e.LegacyWriter == writer && e.Worktree == req.Worktree && e.Status.Active() {
			return e
		}
	}
	return nil
}

// DecideSubmit is the idempotent upsert, by dedupe key: no entry, a new one; a
// terminal entry of the same workspace is reset to pending, of another
// workspace releases the key to a new entry; an active entry of the same
// workspace is updated, of another workspace is a conflict. The workspace in
// these cases is the identity (req.WorkspaceID), which is also the dedupe
// key's first part; the display name only labels the entry.
func DecideSubmit(s *State, req SubmitRequest, pol Policy, now time.Time) (Submission, error) {
	if err := ValidateWorkspaceName(req.Workspace); err != nil {
		return Submission{}, err
	}
	if req.WorkspaceID == "" {
		req.WorkspaceID = req.Workspace
	} else if legacy := s.legacyEntry(req); legacy != nil {
		// Queued from this worktree by an older spool, under the name: the
		// workspace is that entry's until it ends, and so is its change id.
		req.WorkspaceID = legacy.WorkspaceID
	}
	if req.Priority != nil && (*req.Priority < MinPriority || *req.Priority > MaxPriority) {
		return Submission{}, InvalidPriority(*req.Priority)
	}
	if strings.TrimSpace(req.Actor) == "" {
		return Submission{}, fault.Usagef(fault.CodeNoActor, "no actor: pass --actor, set SPOOL_ACTOR, or set git user.email")
	}
	if req.Branch == "" {
		return Submission{}, DetachedHead(req.Workspace)
	}
	if err := pol.CheckBranch(req.Workspace, req.Branch); err != nil {
		return Submission{}, err
	}
	if !ValidHeadSHA(req.HeadSHA) {
		return Submission{}, InvalidHeadSHA(req.HeadSHA, "not a full lowercase hex commit id")
	}
	if req.DedupeKey == "" {
		// A workspace whose active entry was queued under a key given
		// (--dedupe-key) keeps it: submitting again without it updates
		// that entry rather than meeting it as another change.
		if held := s.ActiveByWorkspace(req.WorkspaceID); held != nil && held.ChangeIDSource == SourceDedupeKey {
			req.DedupeKey = held.DedupeKey
		}
	}
	if req.DedupeKey != "" { // given: the key is workspace:change_id, so it names the change
		if err := ValidateDedupeKey(req.DedupeKey); err != nil {
			return Submission{}, err
		}
		_, req.ChangeID, _ = strings.Cut(req.DedupeKey, ":")
		req.ChangeIDSource = SourceDedupeKey
	} else {
		if err := ValidateWorkspaceID(req.WorkspaceID); err != nil {
			return Submission{}, err
		}
		s.ResolveChangeID(&req, now)
		req.DedupeKey = ComputeDedupeKey(req.ChangeID, req.WorkspaceID)
		if err := ValidateDedupeKey(req.DedupeKey); err != nil {
			return Submission{}, err
		}
	}
	admin := pol.admin(req.Actor)
	active := s.ActiveByKey(req.DedupeKey)
	if active != nil && active.WorkspaceID != req.WorkspaceID {
		return Submission{}, DedupeKeyConflict(req.DedupeKey, active.Workspace, req.Workspace) // case 5
	}
	if held := s.ActiveByWorkspace(req.WorkspaceID); held != nil {
		if held.Owner != req.Actor && !admin {
			return Submission{}, UnauthorizedWorkspace(req.Actor, req.Workspace)
		}
		if held.DedupeKey != req.DedupeKey {
			return Submission{}, AlreadyInQueue(req.Workspace, held.DedupeKey, req.DedupeKey, held.ID)
		}
	}
	prio := DefaultPriority
	if req.Priority != nil {
		prio = *req.Priority
	}
	data := EntryData{Workspace: req.Workspace, WorkspaceID: req.WorkspaceID, Worktree: req.Worktree, Branch: req.Branch, ChangeID: req.ChangeID,
		ChangeIDSource: req.ChangeIDSource, DedupeKey: req.DedupeKey, HeadSHA: req.HeadSHA, Priority: &prio, BeadID: req.BeadID}
	if req.PendingPush != "" {
		data.Reason = WaitPushPending + ": " + req.PendingPush
	}
	if active != nil { // case 4: same workspace, update head and time
		if active.Status.Processing() && active.HeadSHA != req.HeadSHA {
			return Submission{}, ConcurrentModification(active.ID, "merge submit (the train is processing the previous head; wait or cancel it)")
		}
		data.EntryID, data.EntryRef, data.From, data.To, data.Priority = active.ID, active.Ref, active.Status, active.Status, req.Priority
		if active.Status == FailedRetryable {
			data.To = Pending // new or same code, back in line
		}
		return Submission{Drafts: []eventlog.Draft{{Type: EvUpdated, Subject: Subject(active.ID), Data: data}},
			EntryID: active.ID, Type: SubmissionUpdated, DedupeKey: req.DedupeKey}, nil
	}
	if pol.Capacity > 0 {
		if n := s.ActiveCount(); n >= pol.Capacity {
			return Submission{}, QueueFull(pol.Capacity, n)
		}
	}
	if last := s.LatestByKey(req.DedupeKey); last != nil && last.WorkspaceID == req.WorkspaceID { // case 2: reset
		if last.Owner != req.Actor && !admin {
			return Submission{}, UnauthorizedEntryModification(req.Actor, last.ID, last.Owner)
		}
		data.EntryID, data.EntryRef, data.From, data.To, data.Priority = last.ID, last.Ref, last.Status, Pending, req.Priority
		return Submission{Drafts: []eventlog.Draft{{Type: EvResubmitted, Subject: Subject(last.ID), Data: data}},
			EntryID: last.ID, Type: SubmissionResubmitted, DedupeKey: req.DedupeKey}, nil
	}
	// cases 1 and 3: a new entry (a terminal one of another workspace releases the key)
	id := int64(s.Len()) + 1
	data.EntryID, data.To = id, Pending
	return Submission{Drafts: []eventlog.Draft{{Type: EvSubmitted, Subject: Subject(id), Data: data}},
		EntryID: id, Type: SubmissionNew, DedupeKey: req.DedupeKey}, nil
}

// entryFor finds an entry an actor wants to change and checks ownership.
func entryFor(s *State, id int64, actor string, pol Policy) (*Entry, error) {
	e := s.Entry(id)
	if e == nil {
		return nil, EntryNotFound(id)
	}
	if e.Owner != actor && !pol.admin(actor) {
		return nil, UnauthorizedEntryModification(actor, id, e.Owner)
	}
	return e, nil
}

// DecideCancel moves an entry to cancelled.
func DecideCancel(s *State, id int64, actor, reason string, pol Policy) ([]eventlog.Draft, error) {
	e, err := entryFor(s, id, actor, pol)
	if err != nil {
		return nil, err
	}
	if e.Status.Terminal() {
		return nil, EntryIsTerminal(id, e.Status)
	}
	if !CanTransition(e.Status, Cancelled) {
		return nil, InvalidStateTransition(id, e.Status, Cancelled)
	}
	return []eventlog.Draft{{Type: EvCancelled, Subject: Subject(id),
		Data: EntryData{EntryID: id, EntryRef: e.Ref, From: e.Status, To: Cancelled, HeadSHA: e.HeadSHA, TestedSHA: e.TestedSHA, TestedAgainstSHA: e.TestedAgainstSHA, Reason: reason}}}, nil
}

// DecideRetry moves a failed_retryable entry back to pending while attempts remain.
func DecideRetry(s *State, id int64, actor string, pol Policy) ([]eventlog.Draft, error) {
	e, err := entryFor(s, id, actor, pol)
	if err != nil {
		return nil, err
	}
	if e.Status.Terminal() {
		return nil, EntryIsTerminal(id, e.Status)
	}
	if e.Status != FailedRetryable {
		return nil, InvalidStateTransition(id, e.Status, Pending)
	}
	if e.Attempts >= pol.MaxAttempts {
		return nil, AttemptsExhausted(id, e.Attempts, pol.MaxAttempts)
	}
	return []eventlog.Draft{{Type: EvRetried, Subject: Subject(id),
		Data: EntryData{EntryID: id, EntryRef: e.Ref, From: FailedRetryable, To: Pending, HeadSHA: e.HeadSHA, Reason: "retry"}}}, nil
}

// MayFreeze is who may freeze and unfreeze the train: with admins set,
// only they (it stops everyone's merges); with none, anyone.
func MayFreeze(p Policy, actor string) error {
	if len(p.Admins) == 0 || p.admin(actor) {
		return nil
	}
	return fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
		fmt.Sprintf("%s may not freeze or unfreeze the merge train: only admins may (config key admins)", actor), "actor", actor)
}

// DecideFreeze stops the train claiming; freezing a frozen queue appends nothing.
func DecideFreeze(s *State, reason string) []eventlog.Draft {
	if s.Frozen {
		return nil
	}
	return []eventlog.Draft{{Type: EvFrozen, Subject: "merge", Data: FreezeData{Reason: reason}}}
}

// DecideUnfreeze lets the train claim again.
func DecideUnfreeze(s *State) []eventlog.Draft {
	if !s.Frozen {
		return nil
	}
	return []eventlog.Draft{{Type: EvUnfrozen, Subject: "merge", Data: struct{}{}}}
}

// Target is the branch the train merges into and the commit it is at.
type Target struct {
	Branch string
	SHA    string // recorded as the claim's tested_against_sha; the rebase records what it really used
	// Dirty are the uncommitted paths of the worktree that has the target
	// checked out, when an entry waits for them (WaitCheckoutDirty).
	Dirty []string
	// Diverged says that the local target still lacks the remote tip the
	// train last saw, when an entry waits for it (WaitTargetDiverged).
	Diverged bool
	// Locked are the lock files entries wait for (WaitTargetLocked) that
	// still exist.
	Locked []string
	// Passed are entries to pass over whatever they wait for: those this
	// run of the train gave back already (merge run --once takes an entry
	// once, and so never loops on a condition it cannot see end).
	Passed map[int64]bool
}

// waits reports whether e, given back by the train, still waits for what
// it waited for (its reason's prefix).
func (t Target) waits(e *Entry) bool {
	switch {
	case t.Passed[e.ID]:
		return true
	case e.Waiting == "":
		return false
	case strings.HasPrefix(e.Waiting, WaitPushPending):
		return true // until merge.pushed
	case strings.HasPrefix(e.Waiting, WaitTargetDiverged):
		return t.Diverged
	case strings.HasPrefix(e.Waiting, WaitTargetLocked):
		return Overlap(e.ConflictPaths, t.Locked)
	}
	return Overlap(e.ConflictPaths, t.Dirty) // WaitCheckoutDirty
}

// DecideClaim gives the first pending entry to runner with a lease. It
// claims nothing when the queue is frozen or empty, or while another entry
// is being processed: the train takes one entry at a time, whoever runs it.
// An entry the train gave back is passed over while what it waits for
// holds: any of its paths still among target.Dirty (WaitCheckoutDirty),
// target.Diverged (WaitTargetDiverged), its lock file among target.Locked
// (WaitTargetLocked); and so is any entry in target.Passed.
func DecideClaim(s *State, runner string, target Target, pol Policy, now time.Time) ([]eventlog.Draft, *Entry) {
	return DecideClaimHeld(s, runner, nil, target, pol, now)
}

// DecideClaimHeld is DecideClaim recording the runner's process (holder,
// nil when unknown) in the claim, for DecideRecover's dead runners.
func DecideClaimHeld(s *State, runner string, holder *ProcRecord, target Target, pol Policy, now time.Time) ([]eventlog.Draft, *Entry) {
	if s.Frozen {
		return nil, nil
	}
	for _, e := range s.index().active {
		if e.Status.Processing() && e.leaseLive(now) {
			return nil, nil
		}
	}
	var e *Entry
	for _, p := range s.OrderAt(now, pol.Aging).Queue { // aging counted, so nothing starves
		if !target.waits(p) {
			e = p
			break
		}
	}
	if e == nil {
		return nil, nil
	}
	lease := now.Add(pol.Lease).UTC()
	return []eventlog.Draft{{Type: EvClaimed, Subject: Subject(e.ID), Data: EntryData{EntryID: e.ID, EntryRef: e.Ref, From: Pending, To: Claimed,
		HeadSHA: e.HeadSHA, TestedAgainstSHA: target.SHA, Target: target.Branch, Attempt: e.Attempts + 1, Runner: runner, LeaseUntil: &lease,
		Holder: holder}}}, e
}

// Overlap reports whether a path in a is, contains or is inside a path in b.
func Overlap(a, b []string) bool {
	return len(Overlapping(a, b)) > 0
}

// Overlapping returns the paths of a that are, contain or are inside a path of b.
func Overlapping(a, b []string) []string {
	var out []string
	for _, p := range a {
		for _, q := range b {
			if p == q || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Step is one move of the train on an entry it holds.
type Step struct {
	EntryID          int64
	Runner           string
	From, To         Status
	HeadSHA          string // the head the runner claimed: a resubmitted head makes the step stale
	TestedSHA        string
	TestedAgainstSHA string
	TargetFromSHA    string // to merging: the local target's commit, when not TestedAgainstSHA
	Reason           string
	Paths            []string
	ExitCode         *int
	RunDir           string
	ScratchDir       string
}

// DecideStep is a compare-and-set: it succeeds only when the entry is still
// in step.From, held by the same runner, with the same head. A failure to
// failed_retryable becomes failed_terminal once the attempts are used up.
func DecideStep(s *State, st Step, pol Policy, now time.Time) ([]eventlog.Draft, error) {
	e := s.Entry(st.EntryID)
	if e == nil {
		return nil, EntryNotFound(st.EntryID)
	}
	if e.Status != st.From || e.Runner != st.Runner || e.HeadSHA != st.HeadSHA {
		return nil, ConcurrentModification(st.EntryID, "merge run: "+string(st.From)+" → "+string(st.To))
	}
	if !st.From.Processing() || !CanTransition(st.From, st.To) {
		return nil, InvalidStateTransition(st.EntryID, st.From, st.To) // only a claimed entry is the train's
	}
	to := st.To
	reason := st.Reason
	if to == FailedRetryable && e.Attempts >= pol.MaxAttempts {
		to = FailedTerminal
		reason += " (attempts used up)"
	}
	d := EntryData{EntryID: st.EntryID, EntryRef: e.Ref, From: st.From, To: to, Runner: st.Runner, HeadSHA: st.HeadSHA, TestedSHA: st.TestedSHA,
		TestedAgainstSHA: st.TestedAgainstSHA, TargetFromSHA: st.TargetFromSHA, Reason: reason, Paths: st.Paths, ExitCode: st.ExitCode, RunDir: st.RunDir,
		ScratchDir: st.ScratchDir}
	if to.Processing() {
		lease := now.Add(pol.Lease).UTC()
		d.LeaseUntil = &lease
	}
	return []eventlog.Draft{{Type: EvTransitioned, Subject: Subject(st.EntryID), Data: d}}, nil
}

// DecideRenew extends the lease of an entry runner still holds.
func DecideRenew(s *State, id int64, runner string, pol Policy, now time.Time) ([]eventlog.Draft, error) {
	e := s.Entry(id)
	if e == nil {
		return nil, EntryNotFound(id)
	}
	if !e.Status.Processing() || e.Runner != runner {
		return nil, ConcurrentModification(id, "merge run: renew lease")
	}
	lease := now.Add(pol.Lease).UTC()
	return []eventlog.Draft{{Type: EvLeaseRenewed, Subject: Subject(id), Data: EntryData{EntryID: id, EntryRef: e.Ref, Runner: runner, LeaseUntil: &lease}}}, nil
}

// DecideProcStarted records the process group a runner started for the
// entry's current step (the test command): a lease renewal carrying it.
func DecideProcStarted(s *State, id int64, runner string, p ProcRecord, pol Policy, now time.Time) ([]eventlog.Draft, error) {
	drafts, err := DecideRenew(s, id, runner, pol, now)
	if err != nil {
		return nil, err
	}
	d := drafts[0].Data.(EntryData)
	d.Proc = &p
	drafts[0].Data = d
	return drafts, nil
}

// Expired lists processing entries whose lease ran out at now.
func (s *State) Expired(now time.Time) []*Entry {
	var out []*Entry
	for _, e := range s.index().active {
		if e.leaseExpired(now) {
			out = append(out, e)
		}
	}
	return out
}

// leaseLive reports whether e holds a lease that has not run out at now.
// It is the one rule of a lease: it runs out at its end (at LeaseUntil
// itself, it has), for the claim that waits on it, for Expired and
// recovery that take it, and for NextExpiry that says when.
func (e *Entry) leaseLive(now time.Time) bool {
	return e.LeaseUntil != nil && now.Before(*e.LeaseUntil)
}

// leaseExpired reports whether e is processing with no live lease: what
// Expired lists and recovery takes.
func (e *Entry) leaseExpired(now time.Time) bool {
	return e.Status.Processing() && !e.leaseLive(now)
}

// Recoverable lists the processing entries recovery takes now: those whose
// lease ran out at now (Expired) and those held by a runner in dead, the
// runners the caller knows to be dead (their process on this machine
// ended), whatever their lease says.
func (s *State) Recoverable(now time.Time, dead map[string]bool) []*Entry {
	var out []*Entry
	for _, e := range s.index().active {
		if e.leaseExpired(now) || e.Status.Processing() && e.Runner != "" && dead[e.Runner] {
			out = append(out, e)
		}
	}
	return out
}

// Holders are the runners of processing entries whose process their claim
// recorded, with that record: what the service asks the machine about
// (proc.Gone) to tell DecideRecover which runners are dead.
func (s *State) Holders() map[string]ProcRecord {
	var out map[string]ProcRecord
	for _, e := range s.index().active {
		if e.Status.Processing() && e.Holder != nil && e.Runner != "" {
			if out == nil {
				out = map[string]ProcRecord{}
			}
			out[e.Runner] = *e.Holder
		}
	}
	return out
}

// NextExpiry is when the first live lease of a processing entry runs out
// (zero: none), the time Expired next lists something.
func (s *State) NextExpiry(now time.Time) time.Time {
	var at time.Time
	for _, e := range s.index().active {
		if e.Status.Processing() && e.leaseLive(now) && (at.IsZero() || e.LeaseUntil.Before(at)) {
			at = *e.LeaseUntil
		}
	}
	return at
}

// DecideRecover recovers every entry whose lease expired, and every entry
// held by a runner in dead (runner ids the service found certainly dead:
// their recorded process on this machine ended) without waiting for its
// lease. merged tells, for entries in merging, whether the target already
// contains the tested commit (the edge asks git); an entry in merging
// missing from it is left for the next recovery. Every other such entry
// goes to failed_retryable, its claim having counted the attempt, and
// straight back to pending; or to failed_terminal when its attempts are
// used up. Each move is its own event and each is in the transition table.
func DecideRecover(s *State, merged map[int64]bool, dead map[string]bool, pol Policy, now time.Time) []eventlog.Draft {
	var drafts []eventlog.Draft
	for _, e := range s.Recoverable(now, dead) {
		base := EntryData{EntryID: e.ID, EntryRef: e.Ref, From: e.Status, HeadSHA: e.HeadSHA, TestedSHA: e.TestedSHA, TestedAgainstSHA: e.TestedAgainstSHA, Runner: e.Runner}
		reason := "lease of runner " + e.Runner + " expired in " + string(e.Status)
		if e.leaseLive(now) {
			reason = "runner " + e.Runner + " died in " + string(e.Status) + " (its process on this machine is gone)"
		}
		if e.Status == Merging {
			contained, known := merged[e.ID]
			if !known {
				continue
			}
			if contained {
				d := base
				d.To, d.Reason = Merged, reason+"; the target already contains the tested commit"
				d.TargetFromSHA = e.TargetFromSHA // where recovery brings the checkout along from
				drafts = append(drafts, eventlog.Draft{Type: EvRecovered, Subject: Subject(e.ID), Data: d})
				continue
			}
		}
		d := base
		d.To, d.Reason = FailedRetryable, reason
		if e.Attempts >= pol.MaxAttempts {
			d.To, d.Reason = FailedTerminal, reason+" (attempts used up)"
		}
		drafts = append(drafts, eventlog.Draft{Type: EvRecovered, Subject: Subject(e.ID), Data: d})
		if d.To == FailedRetryable {
			drafts = append(drafts, eventlog.Draft{Type: EvRetried, Subject: Subject(e.ID),
				Data: EntryData{EntryID: e.ID, EntryRef: e.Ref, From: FailedRetryable, To: Pending, HeadSHA: e.HeadSHA, Reason: "recovered"}})
		}
	}
	return drafts
}

// Audited are the refusals of a submission the log records (a failed
// submission is logged with its full context, for the audit trail), each as a
// merge.refused event that creates no entry: the workspace could not be pushed
// or was not clean, or already has another change queued. Every other refusal
// (bad flags and values, an unknown workspace, the target branch) appends
// nothing, as a rejected command does.
var Audited = []fault.Code{CodeRemoteUnreachable, CodeBookmarkPushFailed, CodeWorkspaceNotClean, CodeAlreadyInQueue}

// Refusal is the workspace a refused submission was about.
type Refusal struct {
	Workspace, WorkspaceID, Worktree, Branch, HeadSHA string
}

// DecideRefused records a refused submission when err is one the log
// audits (Audited), and nothing otherwise.
func DecideRefused(r Refusal, err error) []eventlog.Draft {
	f, ok := fault.As(err)
	if !ok || !slices.ContainsFunc(Audited, func(c fault.Code) bool { return f.Has(c) }) {
		return nil
	}
	return []eventlog.Draft{{Type: EvRefused, Subject: SubjectRefused, Data: RefusedData{Code: f.Code, Message: f.Message,
		Workspace: r.Workspace, WorkspaceID: r.WorkspaceID, Worktree: r.Worktree, Branch: r.Branch, HeadSHA: r.HeadSHA, Fields: f.Fields}}}
}

// PushWaiting lists the pending entries whose branch waits to be pushed
// (WaitPushPending), by id.
func (s *State) PushWaiting() []*Entry {
	var out []*Entry
	for _, e := range s.index().active {
		if e.Status == Pending && strings.HasPrefix(e.Waiting, WaitPushPending) {
			out = append(out, e)
		}
	}
	return out
}

// DecidePushed records that the branch of an entry waiting for its push
// reached the remote at head (or that there is no remote to push to any
// more, note saying so): the entry stays pending and no longer waits. A
// compare-and-set on the head: an entry updated meanwhile waits for the
// push of its new head.
func DecidePushed(s *State, ref, head, note string) ([]eventlog.Draft, error) {
	e := s.EntryByRef(ref)
	if e == nil {
		return nil, EntryRefNotFound(ref)
	}
	if e.Status != Pending || !strings.HasPrefix(e.Waiting, WaitPushPending) || e.HeadSHA != head {
		return nil, ConcurrentModification(e.ID, "merge run: push of a pending_push entry")
	}
	return []eventlog.Draft{{Type: EvPushed, Subject: Subject(e.ID),
		Data: EntryData{EntryID: e.ID, EntryRef: e.Ref, From: Pending, To: Pending, HeadSHA: head, Branch: e.Branch, Reason: note}}}, nil
}
