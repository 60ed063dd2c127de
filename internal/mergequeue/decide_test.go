package mergequeue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// No entry has the key: a new pending entry, with what was submitted, a
// position and one audit step.
func TestSubmitNew(t *testing.T) {
	s := New()
	r := req("ws-a", 1, "ada")
	r.BeadID = "bd-1"
	sub := submit(t, s, r, t0)
	if sub.Type != SubmissionNew || sub.EntryID != 1 {
		t.Fatalf("got %+v", sub)
	}
	e := s.Entry(1)
	switch {
	case e == nil:
		t.Fatal("no entry")
	case e.ID <= 0:
		t.Error("id not positive")
	case e.Workspace != "ws-a":
		t.Error("workspace:", e.Workspace)
	case e.DedupeKey != "ws-a:Cws-a" || e.DedupeKey != sub.DedupeKey:
		t.Error("dedupe key:", e.DedupeKey)
	case e.HeadSHA != sha(1):
		t.Error("head:", e.HeadSHA)
	case e.Status != Pending:
		t.Error("status:", e.Status)
	case !e.AddedAt.Equal(t0):
		t.Error("added at:", e.AddedAt)
	case e.WorkspaceState != WorkspaceCreated:
		t.Error("workspace state:", e.WorkspaceState)
	case e.Position != 1 || s.PendingCount != 1:
		t.Errorf("position %d of %d pending, want 1 of 1", e.Position, s.PendingCount)
	case e.BeadID != "bd-1" || e.Owner != "ada":
		t.Error("bead and owner")
	}
	h := e.LastStep
	if e.Steps != 1 || h.Type != EvSubmitted || !h.At.Equal(t0) || h.Actor != "ada" || h.To != Pending {
		t.Errorf("want one submitted step at t0 by ada to pending: %d steps, %+v", e.Steps, h)
	}
	checkInvariants(t, s)
}

// An active entry, same key, same workspace: update head and time, keep the entry.
func TestSubmitUpdatesActive(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	submit(t, s, req("ws-b", 2, "ada"), t0.Add(time.Second))
	r := req("ws-a", 3, "ada")
	r.Priority = P(0)
	sub := submit(t, s, r, t0.Add(2*time.Second))
	e := s.Entry(1)
	if sub.Type != SubmissionUpdated || sub.EntryID != 1 || e.HeadSHA != sha(3) || !e.UpdatedAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("got %+v entry %+v", sub, e)
	}
	if s.Len() != 2 || e.Position != 1 || e.Priority != 0 {
		t.Errorf("entries %d, position %d, priority %d", s.Len(), e.Position, e.Priority)
	}
	if e.Steps != 2 || e.LastStep.Type != EvUpdated {
		t.Error("want an updated event")
	}
	r.Priority = nil // not given: the entry keeps its priority
	submit(t, s, r, t0.Add(3*time.Second))
	if e.Priority != 0 {
		t.Errorf("priority %d after an update that did not give one", e.Priority)
	}
	r2 := req("ws-c", 9, "ada")
	r2.Priority = nil
	if sub := submit(t, s, r2, t0); s.Entry(sub.EntryID).Priority != DefaultPriority {
		t.Error("a new entry without a priority gets the default")
	}
	checkInvariants(t, s)
}

// A failed_retryable entry submitted again goes back to pending with a fresh budget for new code.
func TestSubmitUpdatesFailedRetryable(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing, Testing, FailedRetryable}, t0)
	sub := submit(t, s, req("ws-a", 2, "ada"), t0.Add(time.Minute))
	e := s.Entry(1)
	if sub.Type != SubmissionUpdated || e.Status != Pending || e.Attempts != 0 || e.Position != 1 {
		t.Fatalf("got %+v, entry %s attempts %d", sub, e.Status, e.Attempts)
	}
	checkInvariants(t, s)
}

// While the train works on the old head, a new head is refused; the same head is an idempotent no-op update.
func TestSubmitWhileProcessing(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing, Testing}, t0)
	_, err := DecideSubmit(s, req("ws-a", 2, "ada"), pol, t0)
	wantCode(t, err, CodeConcurrentModification.Name)
	sub := submit(t, s, req("ws-a", 1, "ada"), t0)
	if sub.Type != SubmissionUpdated || s.Entry(1).Status != Testing {
		t.Fatalf("got %+v, %s", sub, s.Entry(1).Status)
	}
	checkInvariants(t, s)
}

// A terminal entry of the same workspace is reset to pending by a resubmission.
func TestSubmitResubmitsTerminal(t *testing.T) {
	for _, end := range []Status{Merged, FailedTerminal, Cancelled} {
		t.Run(string(end), func(t *testing.T) {
			s := New()
			submit(t, s, req("ws-a", 1, "ada"), t0)
			switch end {
			case Cancelled:
				d, err := DecideCancel(s, 1, "ada", "", pol)
				if err != nil {
					t.Fatal(err)
				}
				fold(t, s, t0, "ada", d)
			case Merged:
				drive(t, s, 1, []Status{Rebasing, Testing, ReadyToMerge, Merging, Merged}, t0)
			case FailedTerminal:
				drive(t, s, 1, []Status{Rebasing, FailedTerminal}, t0)
			}
			sub := submit(t, s, req("ws-a", 2, "ada"), t0.Add(time.Hour))
			e := s.Entry(1)
			if sub.Type != SubmissionResubmitted || s.Len() != 1 || e.Status != Pending || e.HeadSHA != sha(2) || e.Attempts != 0 {
				t.Fatalf("got %+v, entry %+v", sub, e)
			}
			if !e.AddedAt.Equal(t0.Add(time.Hour)) || e.Position != 1 {
				t.Error("a resubmitted entry queues at the back, by its new time")
			}
			checkInvariants(t, s)
		})
	}
}

// A terminal entry of another workspace releases the key: a new entry may have it.
func TestSubmitTerminalOtherWorkspace(t *testing.T) {
	s := New()
	r := req("ws-a", 1, "ada")
	r.DedupeKey = "shared:K"
	submit(t, s, r, t0)
	fold(t, s, t0, "ada", must(DecideCancel(s, 1, "ada", "", pol)))
	r2 := req("ws-b", 2, "ada")
	r2.DedupeKey = "shared:K"
	sub := submit(t, s, r2, t0)
	if sub.Type != SubmissionNew || sub.EntryID != 2 || s.Entry(1).DedupeKey != s.Entry(2).DedupeKey {
		t.Fatalf("got %+v", sub)
	}
	checkInvariants(t, s)
}

// An active key of another workspace is a conflict: the key may name one
// active entry only.
func TestSubmitDedupeKeyConflict(t *testing.T) {
	s := New()
	r := req("ws-a", 1, "ada")
	r.DedupeKey = "shared:K"
	submit(t, s, r, t0)
	r2 := req("ws-b", 2, "ada")
	r2.DedupeKey = "shared:K"
	_, err := DecideSubmit(s, r2, pol, t0)
	wantCode(t, err, CodeDedupeKeyConflict.Name)
}

// A workspace has at most one active entry: with one for another change it is
// already in the queue.
func TestSubmitAlreadyInQueue(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	r := req("ws-a", 2, "ada")
	r.ChangeID = "other"
	_, err := DecideSubmit(s, r, pol, t0)
	wantCode(t, err, CodeAlreadyInQueue.Name)
}

func TestSubmitValidation(t *testing.T) {
	s := New()
	cases := []struct {
		name   string
		change func(*SubmitRequest)
		code   string
	}{
		{"empty workspace", func(r *SubmitRequest) { r.Workspace = "" }, CodeInvalidWorkspaceName.Name},
		{"control character", func(r *SubmitRequest) { r.Workspace = "a\tb" }, CodeInvalidWorkspaceName.Name},
		{"colon in the identity", func(r *SubmitRequest) { r.WorkspaceID = "w1/a:b" }, CodeInvalidWorkspaceName.Name},
		{"space in the identity", func(r *SubmitRequest) { r.WorkspaceID = "w1/a b" }, CodeInvalidWorkspaceName.Name},
		{"invalid utf-8", func(r *SubmitRequest) { r.Workspace = "a\xff" }, CodeInvalidWorkspaceName.Name},
		{"priority low", func(r *SubmitRequest) { r.Priority = P(-1) }, CodeInvalidPriority.Name},
		{"priority high", func(r *SubmitRequest) { r.Priority = P(5) }, CodeInvalidPriority.Name},
		{"no actor", func(r *SubmitRequest) { r.Actor = " " }, "no_actor"},
		{"detached", func(r *SubmitRequest) { r.Branch = "" }, CodeDetachedHead.Name},
		{"short sha", func(r *SubmitRequest) { r.HeadSHA = "abc123" }, CodeInvalidHeadSHA.Name},
		{"upper sha", func(r *SubmitRequest) { r.HeadSHA = "ABCDEF0123ABCDEF0123ABCDEF0123ABCDEF0123" }, CodeInvalidHeadSHA.Name},
		{"key without colon", func(r *SubmitRequest) { r.DedupeKey = "nocolon" }, CodeInvalidDedupeKey.Name},
		{"key empty workspace", func(r *SubmitRequest) { r.DedupeKey = ":C" }, CodeInvalidDedupeKey.Name},
		{"key empty change", func(r *SubmitRequest) { r.DedupeKey = "ws:" }, CodeInvalidDedupeKey.Name},
		{"key whitespace", func(r *SubmitRequest) { r.DedupeKey = "ws:a b" }, CodeInvalidDedupeKey.Name},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := req("ws-a", 1, "ada")
			c.change(&r)
			sub, err := DecideSubmit(s, r, pol, t0)
			wantCode(t, err, c.code)
			if len(sub.Drafts) != 0 {
				t.Error("a rejected submission decided events")
			}
		})
	}
	// positive: the boundaries are accepted
	for _, p := range []int{0, 4} {
		r := req("ws-a", 1, "ada")
		r.Priority = P(p)
		if _, err := DecideSubmit(s, r, pol, t0); err != nil {
			t.Errorf("priority %d: %v", p, err)
		}
	}
	r := req("a b;rm:x", 1, "ada") // a display name may be anything a directory is called
	r.WorkspaceID, r.ChangeID = "w1/a%20b%3Brm%3Ax", "Cx"
	if sub, err := DecideSubmit(s, r, pol, t0); err != nil || sub.DedupeKey != "w1/a%20b%3Brm%3Ax:Cx" {
		t.Errorf("name with spaces and ':': %+v, %v", sub, err)
	}
	r = req("a.b_c-9", 1, "ada")
	r.HeadSHA = sha(1) + sha(2)[:24]
	if _, err := DecideSubmit(s, r, pol, t0); err != nil {
		t.Errorf("sha-256 head: %v", err)
	}
}

// A change id is stable across amend and rebase: a generated one is
// remembered per workspace and branch, so amending (a new head) keeps the
// dedupe key, workspace:change_id.
func TestGeneratedChangeIDIsStable(t *testing.T) {
	s := New()
	r := req("ws-a", 1, "ada")
	r.ChangeID, r.ChangeIDSource = "", ""
	first := submit(t, s, r, t0)
	r.HeadSHA = sha(2)
	again := submit(t, s, r, t0.Add(time.Minute))
	if first.DedupeKey != again.DedupeKey || again.Type != SubmissionUpdated {
		t.Fatalf("keys %s then %s (%s)", first.DedupeKey, again.DedupeKey, again.Type)
	}
	if ComputeDedupeKey("C", "ws") != "ws:C" {
		t.Error("ComputeDedupeKey")
	}
	if s.Entry(1).ChangeIDSource != SourceGenerated {
		t.Error("source not recorded")
	}
	checkInvariants(t, s)
}

// Positions are unique among pending entries: priority first, FIFO within a priority.
func TestPositions(t *testing.T) {
	s := New()
	for i, p := range []int{2, 0, 2, 1, 0} {
		r := req("ws-"+string(rune('a'+i)), i+1, "ada")
		r.Priority = P(p)
		submit(t, s, r, t0.Add(time.Duration(i)*time.Second))
	}
	var order []int64
	for _, e := range s.Queue() {
		order = append(order, e.ID)
	}
	want := []int64{2, 5, 4, 1, 3}
	for i := range want {
		if order[i] != want[i] || s.Entry(want[i]).Position != i+1 {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	drive(t, s, 2, nil, t0) // claim the first: positions close up
	if s.Entry(2).Position != 0 || s.Entry(5).Position != 1 || s.PendingCount != 4 {
		t.Errorf("after claim: %d %d %d", s.Entry(2).Position, s.Entry(5).Position, s.PendingCount)
	}
	checkInvariants(t, s)
}

func TestCapacity(t *testing.T) {
	s := New()
	p := pol
	p.Capacity = 2
	for i, ws := range []string{"a", "b"} {
		sub, err := DecideSubmit(s, req(ws, i+1, "ada"), p, t0)
		if err != nil {
			t.Fatal(err)
		}
		fold(t, s, t0, "ada", sub.Drafts)
	}
	_, err := DecideSubmit(s, req("c", 3, "ada"), p, t0)
	wantCode(t, err, CodeQueueFull.Name)
	// an update of an entry already in the queue is not refused
	if _, err := DecideSubmit(s, req("a", 9, "ada"), p, t0); err != nil {
		t.Fatal(err)
	}
}

// Only an entry's owner or an admin submits to its workspace or changes it.
func TestAuthorization(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	_, err := DecideSubmit(s, req("ws-a", 2, "bob"), pol, t0)
	wantCode(t, err, CodeUnauthorizedWorkspace.Name)
	_, err = DecideCancel(s, 1, "bob", "", pol)
	wantCode(t, err, CodeUnauthorizedEntryModified.Name)
	admin := pol
	admin.Admins = []string{"root"}
	if _, err := DecideSubmit(s, req("ws-a", 2, "root"), admin, t0); err != nil {
		t.Errorf("admin submit: %v", err)
	}
	d, err := DecideCancel(s, 1, "root", "admin says no", admin)
	if err != nil {
		t.Fatalf("admin cancel: %v", err)
	}
	fold(t, s, t0, "root", d)
	_, err = DecideSubmit(s, req("ws-a", 3, "bob"), pol, t0)
	wantCode(t, err, CodeUnauthorizedEntryModified.Name) // resubmitting ada's entry
	submit(t, s, req("ws-a", 3, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing, FailedRetryable}, t0)
	_, err = DecideRetry(s, 1, "bob", pol)
	wantCode(t, err, CodeUnauthorizedEntryModified.Name)
}

func TestCancelAndRetry(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	_, err := DecideRetry(s, 1, "ada", pol)
	wantCode(t, err, CodeInvalidStateTransition.Name) // pending → pending
	_, err = DecideCancel(s, 9, "ada", "", pol)
	wantCode(t, err, CodeEntryNotFound.Name)

	drive(t, s, 1, []Status{Rebasing, Testing, ReadyToMerge, Merging}, t0)
	_, err = DecideCancel(s, 1, "ada", "", pol)
	wantCode(t, err, CodeInvalidStateTransition.Name) // merging cannot be cancelled
	fold(t, s, t0, "train", must(DecideStep(s, Step{EntryID: 1, Runner: "r1", From: Merging, To: FailedRetryable, HeadSHA: sha(1)}, pol, t0)))
	fold(t, s, t0, "ada", must(DecideRetry(s, 1, "ada", pol)))
	if e := s.Entry(1); e.Status != Pending || e.Position != 1 {
		t.Fatalf("after retry: %s", e.Status)
	}
	// use up the attempts: the third failure is terminal
	drive(t, s, 1, []Status{Rebasing, FailedRetryable}, t0)
	fold(t, s, t0, "ada", must(DecideRetry(s, 1, "ada", pol)))
	drive(t, s, 1, []Status{Rebasing, FailedRetryable}, t0)
	if e := s.Entry(1); e.Status != FailedTerminal || e.Attempts != 3 {
		t.Fatalf("third failure: %s after %d attempts", e.Status, e.Attempts)
	}
	_, err = DecideCancel(s, 1, "ada", "", pol)
	wantCode(t, err, CodeEntryIsTerminal.Name)
	_, err = DecideRetry(s, 1, "ada", pol)
	wantCode(t, err, CodeEntryIsTerminal.Name)
	checkInvariants(t, s)
}

func TestRetryAttemptsExhausted(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing, FailedRetryable}, t0)
	low := pol
	low.MaxAttempts = 1 // lowered after the failure
	_, err := DecideRetry(s, 1, "ada", low)
	wantCode(t, err, CodeAttemptsExhausted.Name)
}

// Transitions are compare-and-set: a stale runner, head or status is refused.
func TestStepIsCompareAndSet(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	drive(t, s, 1, nil, t0)
	ok := Step{EntryID: 1, Runner: "r1", From: Claimed, To: Rebasing, HeadSHA: sha(1)}
	for name, st := range map[string]Step{
		"other runner": {EntryID: 1, Runner: "r2", From: Claimed, To: Rebasing, HeadSHA: sha(1)},
		"stale from":   {EntryID: 1, Runner: "r1", From: Testing, To: ReadyToMerge, HeadSHA: sha(1)},
		"other head":   {EntryID: 1, Runner: "r1", From: Claimed, To: Rebasing, HeadSHA: sha(2)},
	} {
		_, err := DecideStep(s, st, pol, t0)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		wantCode(t, err, CodeConcurrentModification.Name)
	}
	_, err := DecideStep(s, Step{EntryID: 1, Runner: "r1", From: Claimed, To: Merged, HeadSHA: sha(1)}, pol, t0)
	wantCode(t, err, CodeInvalidStateTransition.Name)
	_, err = DecideStep(s, Step{EntryID: 7}, pol, t0)
	wantCode(t, err, CodeEntryNotFound.Name)
	fold(t, s, t0, "train", must(DecideStep(s, ok, pol, t0)))
	// a second runner replaying the same step loses
	_, err = DecideStep(s, ok, pol, t0)
	wantCode(t, err, CodeConcurrentModification.Name)
	if _, err := DecideRenew(s, 1, "r2", pol, t0); err == nil {
		t.Error("renewed another runner's lease")
	}
	fold(t, s, t0.Add(time.Minute), "train", must(DecideRenew(s, 1, "r1", pol, t0.Add(time.Minute))))
	if !s.Entry(1).LeaseUntil.Equal(t0.Add(6 * time.Minute)) {
		t.Errorf("lease %v", s.Entry(1).LeaseUntil)
	}
}

func TestFreezeStopsClaims(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	fold(t, s, t0, "ada", DecideFreeze(s, "release"))
	if len(DecideFreeze(s, "again")) != 0 {
		t.Error("freezing twice appended")
	}
	if d, e := DecideClaim(s, "r1", Target{Branch: "main"}, pol, t0); d != nil || e != nil {
		t.Fatal("claimed while frozen")
	}
	submit(t, s, req("ws-b", 2, "ada"), t0) // submissions continue
	fold(t, s, t0, "ada", DecideUnfreeze(s))
	if len(DecideUnfreeze(s)) != 0 {
		t.Error("unfreezing twice appended")
	}
	if _, e := DecideClaim(s, "r1", Target{Branch: "main"}, pol, t0); e == nil || e.ID != 1 {
		t.Fatal("no claim after unfreeze")
	}
}

func TestRecover(t *testing.T) {
	later := t0.Add(pol.Lease + time.Second)
	t.Run("not expired", func(t *testing.T) {
		s := New()
		submit(t, s, req("ws-a", 1, "ada"), t0)
		drive(t, s, 1, []Status{Rebasing}, t0)
		if d := DecideRecover(s, nil, nil, pol, t0.Add(time.Minute)); len(d) != 0 {
			t.Fatalf("recovered a live lease: %v", d)
		}
	})
	for _, at := range []Status{Claimed, Rebasing, Testing, ReadyToMerge, Merging} {
		t.Run(string(at), func(t *testing.T) {
			s := New()
			submit(t, s, req("ws-a", 1, "ada"), t0)
			path := map[Status][]Status{Claimed: nil, Rebasing: {Rebasing}, Testing: {Rebasing, Testing},
				ReadyToMerge: {Rebasing, Testing, ReadyToMerge}, Merging: {Rebasing, Testing, ReadyToMerge, Merging}}[at]
			drive(t, s, 1, path, t0)
			known := map[int64]bool{1: false}
			if at == Merging && len(DecideRecover(s, nil, nil, pol, later)) != 0 {
				t.Fatal("recovered merging without asking git")
			}
			d := DecideRecover(s, known, nil, pol, later)
			fold(t, s, later, "train", d)
			e := s.Entry(1)
			if e.Status != Pending || e.Attempts != 1 || e.Position != 1 || e.Runner != "" || e.LeaseUntil != nil {
				t.Fatalf("after recovery: %+v", e)
			}
			if d[0].Type != EvRecovered || d[1].Type != EvRetried {
				t.Errorf("events %s, %s", d[0].Type, d[1].Type)
			}
			checkInvariants(t, s)
		})
	}
	t.Run("merging, target has it", func(t *testing.T) {
		s := New()
		submit(t, s, req("ws-a", 1, "ada"), t0)
		drive(t, s, 1, []Status{Rebasing, Testing, ReadyToMerge, Merging}, t0)
		fold(t, s, later, "train", DecideRecover(s, map[int64]bool{1: true}, nil, pol, later))
		if s.Entry(1).Status != Merged {
			t.Fatalf("status %s", s.Entry(1).Status)
		}
		checkInvariants(t, s)
	})
	t.Run("attempts used up", func(t *testing.T) {
		s := New()
		submit(t, s, req("ws-a", 1, "ada"), t0)
		for i := 0; i < pol.MaxAttempts; i++ {
			drive(t, s, 1, []Status{Rebasing}, t0)
			fold(t, s, later, "train", DecideRecover(s, nil, nil, pol, later))
		}
		if e := s.Entry(1); e.Status != FailedTerminal || e.Attempts != pol.MaxAttempts {
			t.Fatalf("status %s after %d attempts", e.Status, e.Attempts)
		}
		checkInvariants(t, s)
	})
}

// A runner known dead (the service found its recorded process gone) loses
// its entries at once, lease or not; a live runner's entry, or one held by
// a runner the set does not name, waits for its lease; a dead runner's
// entry in merging still waits for git's answer.
func TestRecoverDeadHolder(t *testing.T) {
	holder := &ProcRecord{PID: 4242, PGID: 4242, Start: 99, Boot: "boot-a"}
	soon := t0.Add(time.Minute) // well within the lease
	for _, c := range []struct {
		name   string
		at     Status
		dead   map[string]bool
		merged map[int64]bool
		now    time.Time
		want   Status // "" : not recovered
		reason string
	}{
		{name: "live lease, nobody dead", at: Testing, now: soon},
		{name: "live lease, another runner dead", at: Testing, dead: map[string]bool{"r9": true}, now: soon},
		{name: "dead runner in claimed", at: Claimed, dead: map[string]bool{"r1": true}, now: soon, want: Pending, reason: "runner r1 died in claimed"},
		{name: "dead runner in testing", at: Testing, dead: map[string]bool{"r1": true}, now: soon, want: Pending, reason: "runner r1 died in testing"},
		{name: "dead runner in merging, git not asked", at: Merging, dead: map[string]bool{"r1": true}, now: soon},
		{name: "dead runner in merging, target has it", at: Merging, dead: map[string]bool{"r1": true}, merged: map[int64]bool{1: true}, now: soon, want: Merged},
		{name: "dead runner in merging, target lacks it", at: Merging, dead: map[string]bool{"r1": true}, merged: map[int64]bool{1: false}, now: soon, want: Pending},
		{name: "expired lease, not known dead", at: Testing, now: t0.Add(pol.Lease + time.Second), want: Pending, reason: "lease of runner r1 expired in testing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			submit(t, s, req("ws-a", 1, "ada"), t0)
			claim, _ := DecideClaimHeld(s, "r1", holder, Target{Branch: "main"}, pol, t0)
			fold(t, s, t0, "train", claim)
			if got := s.Holders()["r1"]; got != *holder {
				t.Fatalf("holders %v", s.Holders())
			}
			path := map[Status][]Status{Claimed: nil, Testing: {Rebasing, Testing}, Merging: {Rebasing, Testing, ReadyToMerge, Merging}}[c.at]
			drive(t, s, 1, path, t0)
			d := DecideRecover(s, c.merged, c.dead, pol, c.now)
			if c.want == "" {
				if len(d) != 0 {
					t.Fatalf("recovered: %+v", d)
				}
				if s.Entry(1).Holder == nil {
					t.Fatal("the holder was lost")
				}
				return
			}
			if len(d) == 0 || !strings.Contains(d[0].Data.(EntryData).Reason, c.reason) {
				t.Fatalf("drafts %+v, want a reason with %q", d, c.reason)
			}
			fold(t, s, c.now, "train", d)
			e := s.Entry(1)
			if e.Status != c.want || e.Holder != nil || e.Runner != "" || e.Attempts != 1 {
				t.Fatalf("after recovery: %s, holder %v, runner %q, %d attempts", e.Status, e.Holder, e.Runner, e.Attempts)
			}
			if len(s.Holders()) != 0 {
				t.Fatalf("holders after recovery %v", s.Holders())
			}
			checkInvariants(t, s)
		})
	}
}

// The fold skips what it cannot use and never fails; replay is deterministic.
func TestApplyRobustAndDeterministic(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	for _, ev := range []*eventlog.Event{
		{Type: "deploy.started", Data: json.RawMessage(`{}`)},
		{Type: EvCancelled, Data: json.RawMessage(`not json`)},
		{Type: EvCancelled, Data: json.RawMessage(`{"entry_id":1,"from":"testing","to":"cancelled"}`)}, // stale from
		{Type: EvTransitioned, Data: json.RawMessage(`{"entry_id":1,"from":"pending","to":"merged"}`)}, // not in the table
		{Type: EvClaimed, Data: json.RawMessage(`{"entry_id":42,"from":"pending","to":"claimed"}`)},    // no such entry
		{Type: EvSubmitted, Data: json.RawMessage(`{"entry_id":2}`)},                                   // no workspace
	} {
		if err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if s.Skipped != 5 || s.Entry(1).Status != Pending {
		t.Fatalf("skipped %d, status %s", s.Skipped, s.Entry(1).Status)
	}
	a, _ := s.MarshalState()
	var back State
	if err := back.UnmarshalState(a); err != nil {
		t.Fatal(err)
	}
	b, _ := back.MarshalState()
	fa, _ := s.Files()
	fb, _ := back.Files()
	if !bytes.Equal(a, b) || !bytes.Equal(fa[0].Data, fb[0].Data) || fa[0].Path != FilePath {
		t.Error("state does not round-trip byte for byte")
	}
}

func TestErrorVariants(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Variants() {
		if seen[v.Code] {
			t.Errorf("code %s twice", v.Code)
		}
		seen[v.Code] = true
		if !snake.MatchString(v.Code) || v.Message == "" || v.Kind == 0 || len(v.Fields) == 0 {
			t.Errorf("%s: kind %d, message %q, fields %v", v.Code, v.Kind, v.Message, v.Fields)
		}
	}
	// QueueSubmissionError's 21 but database_open_failed,
	// schema_initialization_failed and transaction_failed (spool has no
	// database), and spool's 8.
	if len(seen) != 26 {
		t.Errorf("%d variants, want QueueSubmissionError's 18 that apply and spool's 8", len(seen))
	}
}

func must(d []eventlog.Draft, err error) []eventlog.Draft {
	if err != nil {
		panic(err)
	}
	return d
}

var snake = regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)

// One entry at a time: while one is processed (its lease alive), nobody claims another.
func TestClaimOneAtATime(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	submit(t, s, req("ws-b", 2, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing}, t0)
	if d, e := DecideClaim(s, "r2", Target{Branch: "main"}, pol, t0.Add(time.Minute)); d != nil || e != nil {
		t.Fatal("claimed a second entry while the first is processed")
	}
	later := t0.Add(pol.Lease + time.Second)
	fold(t, s, later, "train", DecideRecover(s, nil, nil, pol, later))
	if _, e := DecideClaim(s, "r2", Target{Branch: "main"}, pol, later); e == nil {
		t.Fatal("nothing claimed after the first entry was recovered")
	}
}

// Two clones number their entries independently; once their logs merge,
// replay renumbers them, and every event must still reach the entry its clone
// meant: by ref (the submit event's id), not by number, not by dedupe key.
func TestEventsFindTheirEntryAfterClonesMerge(t *testing.T) {
	for _, sameKey := range []bool{false, true} {
		var log []eventlog.Event // the merged log, in replay order
		clone := func(actor, ws string) (*State, func([]eventlog.Draft)) {
			s := New()
			return s, func(drafts []eventlog.Draft) {
				for _, d := range drafts {
					b, _ := json.Marshal(d.Data)
					e := eventlog.Event{V: 1, ID: fmt.Sprintf("%s-%d", actor, len(log)), Type: d.Type, Subject: d.Subject, At: t0, Actor: actor, Data: b}
					s.Apply(&e)
					log = append(log, e)
				}
			}
		}
		alice, toAlice := clone("alice", "ws-a")
		bob, toBob := clone("bob", "ws-b")
		ra, rb := req("ws-a", 1, "alice"), req("ws-b", 2, "bob")
		if sameKey { // both clones queue the same change under one explicit key
			ra.DedupeKey, rb.DedupeKey = "shared:K", "shared:K"
		}
		subA, err := DecideSubmit(alice, ra, pol, t0)
		if err != nil {
			t.Fatal(err)
		}
		toAlice(subA.Drafts)
		subB, err := DecideSubmit(bob, rb, pol, t0)
		if err != nil {
			t.Fatal(err)
		}
		toBob(subB.Drafts)
		cancel, err := DecideCancel(bob, subB.EntryID, "bob", "not needed", pol)
		if err != nil {
			t.Fatal(err)
		}
		toBob(cancel)
		claim, claimed := DecideClaim(alice, "r1", Target{Branch: "main"}, pol, t0)
		if claimed == nil {
			t.Fatal("alice's train claimed nothing")
		}
		toAlice(claim)
		if subA.EntryID != 1 || subB.EntryID != 1 {
			t.Fatalf("each clone should have numbered its entry 1, got %d and %d", subA.EntryID, subB.EntryID)
		}
		merged := New()
		for i := range log {
			skipped := merged.Skipped
			merged.Apply(&log[i])
			// With one key, bob's entry was cancelled as a duplicate when it
			// was queued, so his cancel has nothing left to do.
			if merged.Skipped != skipped && !(sameKey && log[i].Type == EvCancelled) {
				t.Fatalf("same key %v: the merged fold skipped %s %s", sameKey, log[i].Type, log[i].Data)
			}
		}
		var a, b *Entry
		for _, e := range merged.All() {
			switch e.Owner {
			case "alice":
				a = e
			case "bob":
				b = e
			}
		}
		if a.Status != Claimed || b.Status != Cancelled {
			t.Fatalf("same key %v: alice's entry is %s (want claimed), bob's %s (want cancelled)", sameKey, a.Status, b.Status)
		}
	}
}

// The test command's process group rides on a lease renewal; the entry
// keeps it until its status changes.
func TestProcStarted(t *testing.T) {
	s := New()
	submit(t, s, req("a", 1, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing, Testing}, t0)
	rec := ProcRecord{PID: 42, PGID: 42, Start: 7, Boot: "b"}
	if _, err := DecideProcStarted(s, 1, "r2", rec, pol, t0); err == nil {
		t.Fatal("another runner recorded a process")
	}
	drafts, err := DecideProcStarted(s, 1, "r1", rec, pol, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fold(t, s, t0.Add(time.Minute), "train", drafts)
	e := s.Entry(1)
	if e.Proc == nil || *e.Proc != rec || !e.LeaseUntil.Equal(t0.Add(time.Minute+pol.Lease)) {
		t.Fatalf("proc %+v, lease %v", e.Proc, e.LeaseUntil)
	}
	// A plain renewal keeps it; the next step clears it.
	drafts, _ = DecideRenew(s, 1, "r1", pol, t0.Add(2*time.Minute))
	fold(t, s, t0.Add(2*time.Minute), "train", drafts)
	if e.Proc == nil {
		t.Fatal("a renewal dropped the process")
	}
	drive(t, s, 1, []Status{ReadyToMerge}, t0.Add(3*time.Minute))
	if e.Proc != nil {
		t.Fatalf("proc %+v after the test", e.Proc)
	}
	checkInvariants(t, s)
}

// The workspace the upsert's cases compare is the identity, not the display
// name: worktrees x/dupe and y/dupe, or two clones' worktrees named wt, are
// different workspaces with different dedupe keys.
func TestSubmitSameNameOtherIdentity(t *testing.T) {
	s := New()
	a, b := req("dupe", 1, "ada"), req("dupe", 2, "ada")
	a.WorkspaceID, a.Branch, a.ChangeID, a.ChangeIDSource = "w1/dupe", "dupe1", "", ""
	b.WorkspaceID, b.Branch, b.ChangeID, b.ChangeIDSource = "w1/dupe1", "dupe2", "", ""
	sa := submit(t, s, a, t0)
	sb := submit(t, s, b, t0.Add(time.Second))
	if sa.EntryID == sb.EntryID || sb.Type != SubmissionNew || sa.DedupeKey == sb.DedupeKey {
		t.Fatalf("%+v then %+v", sa, sb)
	}
	if e := s.Entry(sa.EntryID); e.Branch != "dupe1" || e.HeadSHA != sha(1) || e.WorkspaceID != "w1/dupe" || e.Workspace != "dupe" {
		t.Fatalf("x/dupe's entry: %+v", e)
	}
	// each finds its own entry again
	b.HeadSHA = sha(3)
	if sub := submit(t, s, b, t0.Add(2*time.Second)); sub.EntryID != sb.EntryID || sub.Type != SubmissionUpdated || s.Entry(sa.EntryID).HeadSHA != sha(1) {
		t.Fatalf("resubmitting y/dupe: %+v", sub)
	}
	// the same worktree on another clone is another workspace too
	c := req("dupe", 4, "ada")
	c.WorkspaceID, c.Branch = "w2/dupe", "dupe1"
	if sub := submit(t, s, c, t0.Add(3*time.Second)); sub.Type != SubmissionNew {
		t.Fatalf("another clone's dupe: %+v", sub)
	}
	checkInvariants(t, s)
}

// Commands name an entry by number or by a unique prefix of its entry_ref.
func TestLookup(t *testing.T) {
	s := New()
	for i, ref := range []string{"5f1c2a9b0d3e4f5a6b7c8d9e", "5f1c77aa0d3e4f5a6b7c8d9e", "12345678aaaabbbbccccdddd"} {
		r := req(fmt.Sprintf("ws-%d", i), i+1, "ada")
		sub, err := DecideSubmit(s, r, pol, t0)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(sub.Drafts[0].Data)
		s.Apply(&eventlog.Event{V: 1, ID: ref, Type: EvSubmitted, At: t0, Actor: "ada", Data: b})
	}
	for handle, want := range map[string]int64{"1": 1, "3": 3, "5f1c2": 1, "5F1C7": 2, "5f1c2a9b0d3e4f5a6b7c8d9e": 1, "1234": 3, "12345678": 3} {
		e, err := s.Lookup(handle)
		if err != nil || e.ID != want {
			t.Errorf("Lookup(%q) = %v, %v; want entry %d", handle, e, err, want)
		}
	}
	for handle, code := range map[string]string{"5f1c": CodeAmbiguousEntryRef.Name, "9": CodeEntryNotFound.Name, "0": CodeEntryNotFound.Name,
		"abcdef": CodeEntryNotFound.Name, "99999": CodeEntryNotFound.Name, "abc": CodeInvalidEntryRef.Name, "nine": CodeInvalidEntryRef.Name, "": CodeInvalidEntryRef.Name, "-1": CodeEntryNotFound.Name} {
		_, err := s.Lookup(handle)
		wantCode(t, err, code)
	}
}

// The train gives an entry back from ready_to_merge or merging when the
// target's checkout has uncommitted changes to paths the merge changes: it
// waits, pending, without using an attempt, and is passed over while those
// paths are dirty.
func TestWaitForTheTargetCheckout(t *testing.T) {
	for _, from := range []Status{ReadyToMerge, Merging} {
		s := New()
		submit(t, s, req("ws-a", 1, "ada"), t0)
		submit(t, s, req("ws-b", 2, "ada"), t0.Add(time.Second))
		path := []Status{Rebasing, Testing, ReadyToMerge}
		if from == Merging {
			path = append(path, Merging)
		}
		drive(t, s, 1, path, t0)
		reason := WaitCheckoutDirty + ": /repo has uncommitted changes to README"
		fold(t, s, t0, "train", must(DecideStep(s, Step{EntryID: 1, Runner: "r1", From: from, To: Pending, HeadSHA: sha(1),
			Reason: reason, Paths: []string{"README"}}, pol, t0)))
		e := s.Entry(1)
		if e.Status != Pending || e.Position != 1 || e.Attempts != 0 || e.Waiting != reason || e.ConflictPaths[0] != "README" || e.Runner != "" {
			t.Fatalf("from %s: %+v", from, e)
		}
		checkInvariants(t, s)
		// still dirty: the next entry goes first
		if _, c := DecideClaim(s, "r1", Target{Branch: "main", Dirty: []string{"README", "x"}}, pol, t0); c == nil || c.ID != 2 {
			t.Fatalf("from %s: claimed %v while README is dirty", from, c)
		}
		// a directory holding the path counts too
		if d, _ := DecideClaim(s, "r1", Target{Branch: "main", Dirty: []string{"x"}}, pol, t0); d == nil {
			t.Fatal("nothing claimed with README clean")
		}
		drafts, c := DecideClaim(s, "r1", Target{Branch: "main"}, pol, t0)
		if c == nil || c.ID != 1 {
			t.Fatalf("clean checkout: claimed %v", c)
		}
		fold(t, s, t0, "train", drafts)
		if e := s.Entry(1); e.Waiting != "" || e.Attempts != 1 {
			t.Fatalf("after the claim: waiting %q, attempts %d", e.Waiting, e.Attempts)
		}
		checkInvariants(t, s)
	}
	if !Overlap([]string{"d"}, []string{"d/f"}) || !Overlap([]string{"d/f"}, []string{"d"}) || Overlap([]string{"d"}, []string{"dx"}) {
		t.Error("Overlap")
	}
}

// An entry the train gave back waits for what its reason names: a diverged
// target until the local target has the remote's tip, a lock file until it
// is gone. An entry a run already gave back is passed over in that run,
// whatever it waits for. Otherwise it is claimed in its turn.
func TestWaitsForWhatItWaitsFor(t *testing.T) {
	lock := "/repo/.git/refs/heads/main.lock"
	for _, c := range []struct {
		name    string
		wait    string
		paths   []string
		target  Target
		claimed int64 // 2: the entry behind it
	}{
		{"diverged, still", WaitTargetDiverged + ": pull", nil, Target{Diverged: true, Dirty: []string{"README"}}, 2},
		{"diverged, pulled", WaitTargetDiverged + ": pull", nil, Target{Dirty: []string{"README"}}, 1},
		{"locked, still", WaitTargetLocked + ": " + lock, []string{lock}, Target{Locked: []string{lock}}, 2},
		{"locked, another lock file", WaitTargetLocked + ": " + lock, []string{lock}, Target{Locked: []string{"/repo/.git/HEAD.lock"}, Diverged: true}, 1},
		{"locked, gone", WaitTargetLocked + ": " + lock, []string{lock}, Target{}, 1},
		{"dirty checkout, other paths", WaitCheckoutDirty + ": edits", []string{"README"}, Target{Locked: []string{"README"}, Diverged: true}, 1},
		{"given back in this run", WaitTargetLocked + ": " + lock, []string{lock}, Target{Passed: map[int64]bool{1: true}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			submit(t, s, req("ws-a", 1, "ada"), t0)
			submit(t, s, req("ws-b", 2, "ada"), t0.Add(time.Second))
			drive(t, s, 1, []Status{Rebasing, Testing, ReadyToMerge, Merging}, t0)
			fold(t, s, t0, "train", must(DecideStep(s, Step{EntryID: 1, Runner: "r1", From: Merging, To: Pending, HeadSHA: sha(1),
				Reason: c.wait, Paths: c.paths}, pol, t0)))
			if e := s.Entry(1); e.Status != Pending || e.Attempts != 0 || e.Waiting != c.wait {
				t.Fatalf("given back: %s, %d attempts, waiting %q", e.Status, e.Attempts, e.Waiting)
			}
			c.target.Branch = "main"
			if _, e := DecideClaim(s, "r1", c.target, pol, t0); e == nil || e.ID != c.claimed {
				t.Fatalf("claimed %v, want entry %d", e, c.claimed)
			}
		})
	}
}

// The remote refused the push because its target moved: from merging the
// train goes back to rebasing, holding the entry, its attempt still the
// claim's.
func TestMergingBackToRebasing(t *testing.T) {
	s := New()
	submit(t, s, req("ws-a", 1, "ada"), t0)
	drive(t, s, 1, []Status{Rebasing, Testing, ReadyToMerge, Merging, Rebasing, Testing}, t0)
	if e := s.Entry(1); e.Status != Testing || e.Attempts != 1 || e.Runner != "r1" {
		t.Fatalf("%s, %d attempts, runner %q", e.Status, e.Attempts, e.Runner)
	}
	checkInvariants(t, s)
}

// The target branch itself is refused: queued, it would be rebased onto
// itself and "merged" with nothing to merge.
func TestSubmitTargetBranchRefused(t *testing.T) {
	s := New()
	p := pol
	p.Target = "main"
	r := req("ws", 1, "ada")
	r.Branch = "main"
	_, err := DecideSubmit(s, r, p, t0)
	wantCode(t, err, CodeBranchIsTarget.Name)
	r.Branch = "feature"
	if _, err := DecideSubmit(s, r, p, t0); err != nil {
		t.Fatal(err)
	}
}

// Only the refusals worth auditing (Audited) become merge.refused; bad
// input and every other refusal append nothing.
func TestDecideRefused(t *testing.T) {
	about := Refusal{Workspace: "ws", WorkspaceID: "w1/ws", Branch: "feat", HeadSHA: sha(1)}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{RemoteUnreachable("origin", "no route"), true},
		{BookmarkPushFailed("ws", "feat", "hook declined"), true},
		{WorkspaceNotClean("ws", []string{"a"}), true},
		{AlreadyInQueue("ws", "w1/ws:I1", "w1/ws:I2", 3), true},
		{InvalidPriority(7), false},
		{SessionNotFound("ws"), false},
		{BranchIsTarget("ws", "main"), false},
		{UnauthorizedWorkspace("bob", "ws"), false},
		{DedupeKeyConflict("k:c", "a", "b"), false},
		{fmt.Errorf("plain"), false},
	} {
		drafts := DecideRefused(about, c.err)
		if got := len(drafts) == 1; got != c.want {
			t.Errorf("%v: recorded %v, want %v", c.err, got, c.want)
			continue
		}
		if !c.want {
			continue
		}
		d := drafts[0].Data.(RefusedData)
		f, _ := fault.As(c.err)
		if drafts[0].Type != EvRefused || drafts[0].Subject != SubjectRefused || d.Code != f.Code || d.Message != f.Message ||
			d.Workspace != "ws" || d.WorkspaceID != "w1/ws" || d.HeadSHA != sha(1) || len(d.Fields) == 0 {
			t.Errorf("%v: %+v", c.err, drafts[0])
		}
		// The fold creates no entry for it.
		s := New()
		b, _ := json.Marshal(d)
		s.Apply(&eventlog.Event{V: 1, ID: "r1", Type: EvRefused, Subject: SubjectRefused, At: t0, Actor: "ada", Data: b})
		if s.Len() != 0 || s.Skipped != 0 {
			t.Errorf("the fold made %d entries, skipped %d", s.Len(), s.Skipped)
		}
	}
}

// A key given with --dedupe-key names the change whichever workspace
// submits it, and the workspace's active entry keeps it.
func TestSubmitGivenDedupeKey(t *testing.T) {
	s := New()
	a := req("a", 1, "ada")
	a.DedupeKey = "team:c1"
	sub := submit(t, s, a, t0)
	if e := s.Entry(sub.EntryID); e.ChangeID != "c1" || e.ChangeIDSource != SourceDedupeKey || e.DedupeKey != "team:c1" {
		t.Fatalf("entry %+v", e)
	}
	again := req("a", 2, "ada") // no key: the active entry's
	if sub := submit(t, s, again, t0.Add(time.Minute)); sub.Type != SubmissionUpdated || sub.DedupeKey != "team:c1" {
		t.Fatalf("again: %+v", sub)
	}
	b := req("b", 3, "ada")
	b.DedupeKey = "team:c1"
	_, err := DecideSubmit(s, b, pol, t0)
	wantCode(t, err, CodeDedupeKeyConflict.Name)
	checkInvariants(t, s)
}

// Offline: an entry queued while the remote did not answer waits as
// pending_push, passed over by the train, until merge.pushed of its head.
func TestPendingPush(t *testing.T) {
	s := New()
	r := req("off", 1, "ada")
	r.PendingPush = "remote origin did not answer"
	submit(t, s, r, t0)
	submit(t, s, req("on", 2, "ada"), t0.Add(time.Second))
	off := s.ActiveByWorkspace("off")
	if off.Status != Pending || !strings.HasPrefix(off.Waiting, WaitPushPending) || len(s.PushWaiting()) != 1 {
		t.Fatalf("entry %s waiting %q", off.Status, off.Waiting)
	}
	checkInvariants(t, s)
	if _, claimed := DecideClaim(s, "r1", Target{Branch: "main"}, pol, t0); claimed == nil || claimed.Workspace != "on" {
		t.Fatalf("claimed %v, want the entry that was pushed", claimed)
	}
	// a stale head is refused; the right one clears the wait
	if _, err := DecidePushed(s, off.Ref, sha(9), "pushed"); err == nil {
		t.Fatal("pushed a head the entry does not have")
	}
	fold(t, s, t0, "train", must(DecidePushed(s, off.Ref, sha(1), "pushed b-off to origin")))
	if off.Waiting != "" || off.Status != Pending || len(s.PushWaiting()) != 0 {
		t.Fatalf("after the push: %s waiting %q", off.Status, off.Waiting)
	}
	if _, err := DecidePushed(s, off.Ref, sha(1), "again"); err == nil {
		t.Fatal("pushed twice")
	}
	// an update that could not be pushed either waits again; one that was does not
	again := req("off", 3, "ada")
	again.PendingPush = "still offline"
	submit(t, s, again, t0.Add(time.Minute))
	if !strings.HasPrefix(off.Waiting, WaitPushPending) {
		t.Fatalf("updated offline: waiting %q", off.Waiting)
	}
	submit(t, s, req("off", 4, "ada"), t0.Add(2*time.Minute))
	if off.Waiting != "" {
		t.Fatalf("updated and pushed: waiting %q", off.Waiting)
	}
	checkInvariants(t, s)
}

func TestMayFreeze(t *testing.T) {
	for _, c := range []struct {
		admins []string
		actor  string
		may    bool
	}{{nil, "anyone", true}, {[]string{"boss"}, "boss", true}, {[]string{"boss"}, "bob", false}} {
		err := MayFreeze(Policy{Admins: c.admins}, c.actor)
		if (err == nil) != c.may {
			t.Errorf("admins %v, %s: %v", c.admins, c.actor, err)
		}
	}
}
