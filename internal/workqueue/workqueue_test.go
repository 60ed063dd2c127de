package workqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/projections"
)

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// DefaultPolicy is the exponential policy's defaults: 1m, doubling, capped
// at 1h, abandoned after 5 failures.
func DefaultPolicy() Policy {
	return Policy{Kind: Exponential, Initial: time.Minute, Max: time.Hour, Multiplier: 2, MaxFailures: 5, Lease: time.Hour}
}

// world folds drafts the way the log would, numbering events.
type world struct {
	t   testing.TB
	s   *State
	seq uint64
	log []eventlog.Event
}

func newWorld(t testing.TB) *world { return &world{t: t, s: NewState()} }

func (w *world) apply(actor string, at time.Time, drafts ...eventlog.Draft) {
	w.t.Helper()
	for _, d := range drafts {
		data, err := json.Marshal(d.Data)
		if err != nil {
			w.t.Fatal(err)
		}
		w.seq++
		e := eventlog.Event{V: 1, ID: fmt.Sprint(w.seq), Writer: "w", Seq: w.seq, LC: w.seq, At: at, Actor: actor, Type: d.Type, Subject: d.Subject, Data: data}
		if err := w.s.Apply(&e); err != nil {
			w.t.Fatal(err)
		}
		w.log = append(w.log, e)
	}
}

func (w *world) add(title string, prio int, at time.Time, labels ...string) string {
	w.t.Helper()
	d, id, err := AddTask(w.s, NewTask{Title: title, Priority: prio, Labels: labels}, "sp", "writer1", at)
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply("ada", at, d)
	return id
}

// next claims as actor and applies; it returns the claimed id or "".
func (w *world) next(p Policy, g Gate, actor string, at time.Time) string {
	w.t.Helper()
	drafts, claim, err := Next(w.s, nil, true, p, g, actor, actor, at)
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply(actor, at, drafts...)
	if claim == nil {
		return ""
	}
	return claim.Task.ID
}

func (w *world) fail(p Policy, id, actor, msg string, at time.Time) []eventlog.Draft {
	w.t.Helper()
	drafts, err := Fail(w.s, p, id, actor, msg, at)
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply(actor, at, drafts...)
	return drafts
}

func code(err error) string {
	if f, ok := fault.As(err); ok {
		return f.Code
	}
	return ""
}

// Exponential backoff: attempt 1 no wait, then 1m, 2m, 4m, ... capped at 1h.
func TestBackoffProgression(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{{0, 0}, {1, 0}, {2, time.Minute}, {3, 2 * time.Minute}, {4, 4 * time.Minute}, {5, 8 * time.Minute}, {7, 32 * time.Minute}, {8, time.Hour}, {10, time.Hour}, {1000, time.Hour}} {
		if got := p.Backoff(tc.attempts); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
	p.Multiplier = 3
	if got := p.Backoff(3); got != 3*time.Minute {
		t.Errorf("multiplier 3: Backoff(3) = %v, want 3m", got)
	}
	p.Kind = Progressive
	if got := p.Backoff(5); got != 0 {
		t.Errorf("progressive has no time backoff, got %v", got)
	}
}

func TestPriorityThenFIFO(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	low := w.add("low", 3, t0)
	first2 := w.add("first p2", 2, t0.Add(time.Second))
	urgent := w.add("urgent", 0, t0.Add(2*time.Second))
	second2 := w.add("second p2", 2, t0.Add(3*time.Second))
	p := DefaultPolicy()
	var got []string
	for i := 0; i < 5; i++ {
		got = append(got, w.next(p, Gate{}, fmt.Sprint("w", i), t0.Add(time.Minute)))
	}
	want := []string{urgent, first2, second2, low, ""}
	if !slices.Equal(got, want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
	ready := w.s.Ready(p, ReadyFilter{}, t0, 0)
	if len(ready) != 0 {
		t.Fatalf("claimed tasks are not ready, got %d", len(ready))
	}
}

func TestReadyOrderAndLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i := 0; i < 30; i++ {
		w.add(fmt.Sprint("t", i), 4-i%5, t0.Add(time.Duration(i)*time.Second))
	}
	all := w.s.Ready(DefaultPolicy(), ReadyFilter{}, t0, 0)
	top := w.s.Ready(DefaultPolicy(), ReadyFilter{}, t0, 7)
	if len(all) != 30 || len(top) != 7 {
		t.Fatalf("got %d and %d", len(all), len(top))
	}
	for i := range top {
		if top[i] != all[i] {
			t.Fatalf("limit 7 is not the head of the full order at %d", i)
		}
	}
	for i := 1; i < len(all); i++ {
		if taskLess(all[i], all[i-1]) {
			t.Fatalf("not sorted at %d", i)
		}
	}
}

func TestLabelGating(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	plain := w.add("not sequenced yet", 0, t0)
	gated := w.add("sequenced", 2, t0, "automated")
	skip := w.add("sequenced but manual", 1, t0, "automated", "manual")
	p := DefaultPolicy()
	p.Label = "automated"
	p.ExcludeLabels = []string{"manual"}
	if got := w.next(p, p.Gate(nil, nil), "a", t0); got != gated {
		t.Fatalf("next = %q, want the labelled task %q", got, gated)
	}
	if got := w.next(p, p.Gate(nil, nil), "b", t0); got != "" {
		t.Fatalf("next = %q, want nothing (plain %s lacks the label, %s is excluded)", got, plain, skip)
	}
	// Adding the label after sequencing releases the task: the race-free gate.
	d, err := UpdateTask(w.s, plain, Update{AddLabels: []string{"automated"}})
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, d...)
	if got := w.next(p, p.Gate(nil, nil), "c", t0); got != plain {
		t.Fatalf("next = %q, want %q after labelling", got, plain)
	}
	// Flags add to the configuration.
	g := DefaultPolicy().Gate([]string{"x"}, []string{"y"})
	if !g.Admits([]string{"x"}) || g.Admits([]string{"x", "y"}) || g.Admits(nil) || g.Admits([]string{"x", BlockedLabel}) {
		t.Fatalf("gate %+v admits the wrong labels", g)
	}
}

func TestBackoffFiltering(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("flaky", 1, t0)
	p := DefaultPolicy()
	p.MaxFailures = 0
	at := t0
	// attempts: 1 fails → retry at once; 2 fails → wait 1m; 3 fails → 2m.
	for attempt, wait := range []time.Duration{0, time.Minute, 2 * time.Minute, 4 * time.Minute} {
		if got := w.next(p, Gate{}, "a", at); got != id {
			t.Fatalf("attempt %d: next = %q at %s", attempt+1, got, at)
		}
		w.fail(p, id, "a", "boom", at)
		if wait > 0 {
			if got := w.next(p, Gate{}, "a", at.Add(wait-time.Second)); got != "" {
				t.Fatalf("attempt %d: claimed during backoff", attempt+1)
			}
			h := p.HistoryView(*w.s.hst.m[id], at)
			if h.NextEligibleAt == nil || !h.NextEligibleAt.Equal(at.Add(wait)) {
				t.Fatalf("next_eligible_at = %v, want %v", h.NextEligibleAt, at.Add(wait))
			}
			if st := p.Stats(w.s, true, nil, 0, at); st.InBackoff != 1 || st.Failed != 1 {
				t.Fatalf("stats %+v", st)
			}
			if wake, wid := p.Wakeup(maps.Values(w.s.hst.m), at); wid != id || !wake.Equal(at.Add(wait)) {
				t.Fatalf("wakeup %s %v, want %v", wid, wake, at.Add(wait))
			}
		}
		at = at.Add(wait)
	}
}

func TestAbandonment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("hopeless", 1, t0)
	p := DefaultPolicy() // max_failures 5
	at := t0
	var last []eventlog.Draft
	for i := 1; i <= 5; i++ {
		if got := w.next(p, Gate{}, "a", at); got != id {
			t.Fatalf("attempt %d: next = %q", i, got)
		}
		last = w.fail(p, id, "a", fmt.Sprint("failure ", i), at)
		at = at.Add(time.Hour)
	}
	if len(last) != 2 || last[1].Type != TypeAbandoned {
		t.Fatalf("the fifth failure should append task.abandoned, got %+v", last)
	}
	want := AbandonedData{TaskID: id, Attempts: 5, LastError: "failure 5", MaxFailures: 5}
	if last[1].Data != want {
		t.Fatalf("abandoned data %+v, want %+v", last[1].Data, want)
	}
	if w.s.hst.m[id].Status != HistAbandoned {
		t.Fatalf("status %s", w.s.hst.m[id].Status)
	}
	if got := w.next(p, Gate{}, "a", at.Add(100*time.Hour)); got != "" {
		t.Fatalf("abandoned task claimed again")
	}
	d, err := Retry(w.s, p, id, at)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", at, d)
	if h := w.s.hst.m[id]; h.Status != HistPending || h.Attempts != 0 {
		t.Fatalf("after retry: %+v", h)
	}
	if got := w.next(p, Gate{}, "a", at); got != id {
		t.Fatalf("retried task not claimable")
	}
}

// Progressive: demote every third failure, Blocked after three at P4, and back.
func TestProgressiveLadder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("stubborn", 2, t0)
	p := DefaultPolicy()
	p.Kind = Progressive
	at := t0
	var prios []int
	for i := 1; i <= 9; i++ {
		if got := w.next(p, Gate{}, "a", at); got != id {
			t.Fatalf("failure %d: next = %q (history %+v)", i, got, w.s.hst.m[id])
		}
		w.fail(p, id, "a", "still broken", at)
		prios = append(prios, w.s.trk.m[id].Priority)
		at = at.Add(time.Second)
	}
	if want := []int{2, 2, 3, 3, 3, 4, 4, 4, 4}; !slices.Equal(prios, want) {
		t.Fatalf("priorities %v, want %v", prios, want)
	}
	last := w.log[len(w.log)-1]
	if last.Type != TypeBlocked {
		t.Fatalf("last event %s, want task.blocked", last.Type)
	}
	var bd BlockedData
	json.Unmarshal(last.Data, &bd)
	if bd != (BlockedData{TaskID: id, TotalAttempts: 9, LastFailureReason: "still broken"}) {
		t.Fatalf("blocked data %+v", bd)
	}
	if !w.s.trk.m[id].HasLabel(BlockedLabel) || len(w.s.Ready(p, ReadyFilter{}, at, 0)) != 0 {
		t.Fatal("a Blocked task carries the label and is never ready")
	}
	if got := w.next(p, Gate{}, "a", at); got != "" {
		t.Fatal("Blocked task claimed")
	}
	if _, err := Unblock(w.s, "sp-none", false); code(err) != "not_found" {
		t.Fatalf("unknown id: %v", err)
	}
	d, err := Unblock(w.s, id, true)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", at, d)
	if _, err := Unblock(w.s, id, true); code(err) != "invalid_state_transition" {
		t.Fatalf("unblocking twice: %v", err)
	}
	if got := w.next(p, Gate{}, "a", at); got != id {
		t.Fatalf("unblocked task not claimable")
	}
	if h := w.s.hst.m[id]; h.Attempts != 1 || h.Failures != 0 {
		t.Fatalf("reset attempts: %+v", h)
	}
}

func TestProgressiveRequeue(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	b := w.add("b", 2, t0.Add(time.Second))
	p := DefaultPolicy()
	p.Kind = Progressive
	at := t0.Add(time.Minute)
	w.next(p, Gate{}, "x", at)
	w.fail(p, a, "x", "1st", at) // odd: retried at once, keeps its place
	if got := w.next(p, Gate{}, "x", at); got != a {
		t.Fatalf("after an odd failure the task is retried first, got %s", got)
	}
	w.fail(p, a, "x", "2nd", at) // even: requeued behind b
	if got := w.next(p, Gate{}, "x", at); got != b {
		t.Fatalf("after an even failure the task goes to the back, got %s", got)
	}
}

// Exponential keeps the queue's order after any number of failures: priority,
// then creation time; only the progressive policy requeues.
func TestExponentialKeepsCreationOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	w.add("b", 2, t0.Add(time.Second))
	p := DefaultPolicy()
	at := t0.Add(time.Minute)
	for i := 0; i < 2; i++ {
		if got := w.next(p, Gate{}, "x", at); got != a {
			t.Fatalf("claim %d: got %s, want %s", i+1, got, a)
		}
		w.fail(p, a, "x", "boom", at)
		at = at.Add(time.Hour) // past any backoff
	}
	if got := w.next(p, Gate{}, "x", at); got != a {
		t.Fatalf("after two failures and the backoff, exponential must still pick the oldest task %s, got %s", a, got)
	}
}

// task update --status follows close and reopen; in_progress is only for next.
func TestUpdateStatusFollowsTheStateMachine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		status, code, wantType string
	}{
		{StatusInProgress, "invalid_state_transition", ""},
		{StatusDeferred, "", TypeUpdated},
		{StatusClosed, "", TypeClosed},
		{StatusDeferred, "invalid_state_transition", ""},
		{StatusOpen, "", TypeReopened},
	} {
		drafts, err := UpdateTask(w.s, a, Update{Status: str(tc.status)})
		if code(err) != tc.code {
			t.Fatalf("--status %s: error %v, want code %q", tc.status, err, tc.code)
		}
		if tc.code != "" {
			continue
		}
		if len(drafts) != 1 || drafts[0].Type != tc.wantType {
			t.Fatalf("--status %s: drafts %+v, want one %s", tc.status, drafts, tc.wantType)
		}
		w.apply("ada", t0, drafts...)
		if got := w.s.trk.m[a].Status; got != tc.status {
			t.Fatalf("--status %s: task is %s", tc.status, got)
		}
	}
}

// A status equal to the current one is no change: the rest of the update applies.
func TestUpdateSameStatusKeepsOtherFields(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	open, title := StatusOpen, "renamed"
	drafts, err := UpdateTask(w.s, a, Update{Status: &open, Title: &title})
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, drafts...)
	if got := w.s.trk.m[a]; got.Title != title || got.Status != StatusOpen {
		t.Fatalf("task %+v", got)
	}
	if drafts, err := UpdateTask(w.s, a, Update{Status: &open}); err != nil || len(drafts) != 0 {
		t.Fatalf("--status open alone on an open task: %v, %v; want an idempotent no-op", drafts, err)
	}
}

func TestClaimRules(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("t", 2, t0)
	p := DefaultPolicy()
	if _, err := Done(w.s, p, id, "a", "", t0); code(err) != "not_claimed" {
		t.Fatalf("done before a claim: %v", err)
	}
	if _, err := Done(w.s, p, "sp-zzzz", "a", "", t0); code(err) != "not_found" {
		t.Fatalf("done on an unknown id: %v", err)
	}
	w.next(p, Gate{}, "a", t0)
	if _, err := Done(w.s, p, id, "b", "", t0); code(err) != "unauthorized" || !errors.Is(err, fault.ErrUnauthorized) {
		t.Fatalf("done by someone else: %v", err)
	}
	if _, err := Fail(w.s, p, id, "b", "x", t0); code(err) != "unauthorized" {
		t.Fatalf("fail by someone else: %v", err)
	}
	if _, err := Fail(w.s, p, id, "a", " ", t0); code(err) != "empty_error" {
		t.Fatalf("fail without an error: %v", err)
	}
	hb, until, err := Heartbeat(w.s, p, id, "a", t0.Add(50*time.Minute))
	if err != nil || !until.Equal(t0.Add(110*time.Minute)) {
		t.Fatalf("heartbeat: %v %v", until, err)
	}
	w.apply("a", t0.Add(50*time.Minute), hb)
	if _, err := Done(w.s, p, id, "a", "", t0.Add(100*time.Minute)); err != nil {
		t.Fatalf("done within the extended lease: %v", err)
	}
	if _, err := Done(w.s, p, id, "a", "", t0.Add(110*time.Minute)); code(err) != "not_claimed" {
		t.Fatalf("done after the lease: %v", err)
	}
	drafts, err := Done(w.s, p, id, "a", "shipped", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	w.apply("a", t0.Add(time.Hour), drafts...)
	if tk := w.s.trk.m[id]; tk.Status != StatusClosed || tk.Detail().CloseReason != "shipped" || w.s.hst.m[id].Status != HistCompleted {
		t.Fatalf("after done: %+v %+v", tk, w.s.hst.m[id])
	}
	if _, err := CloseTasks(w.s, []string{id}, ""); code(err) != "invalid_state_transition" {
		t.Fatalf("closing a closed task: %v", err)
	}
}

// A claim whose lease ran out is a failed attempt the next time anyone asks.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("t", 2, t0)
	p := DefaultPolicy()
	w.next(p, Gate{}, "crashed", t0)
	late := t0.Add(p.Lease)
	h := p.HistoryView(*w.s.hst.m[id], late)
	if h.Status != HistFailed || h.LastError != LeaseExpiredError || h.Attempts != 1 {
		t.Fatalf("history view after the lease: %+v", h)
	}
	if st := w.s.EffectiveStatus(w.s.trk.m[id], late); st != StatusOpen {
		t.Fatalf("tracker status %s", st)
	}
	drafts, claim, err := Next(w.s, nil, true, p, Gate{}, "b", "b", late)
	if err != nil || claim == nil || claim.Task.ID != id || claim.Attempt != 2 {
		t.Fatalf("next after the lease: %+v %v", claim, err)
	}
	if drafts[0].Type != TypeLeaseExpired || drafts[1].Type != TypeClaimed {
		t.Fatalf("drafts %+v", drafts)
	}
	w.apply("b", late, drafts...)
	if hh := w.s.hst.m[id]; hh.Failures != 1 || hh.Actor != "b" {
		t.Fatalf("entry %+v", hh)
	}
}

func TestDependenciesAndCycles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	b := w.add("b", 2, t0)
	epic := w.add("epic", 2, t0)
	d, child, err := AddTask(w.s, NewTask{Title: "child", Priority: 1, Parent: epic}, "sp", "writer1", t0)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, d)
	dep, err := AddDep(w.s, b, a)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, dep)
	ready := func() []string {
		var ids []string
		for _, t := range w.s.Ready(DefaultPolicy(), ReadyFilter{}, t0, 0) {
			ids = append(ids, t.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := ready(); slices.Contains(got, b) || !slices.Contains(got, a) || !slices.Contains(got, child) {
		t.Fatalf("ready %v", got)
	}
	if _, err := AddDep(w.s, a, b); code(err) != "dependency_cycle" {
		t.Fatalf("cycle: %v", err)
	}
	if _, err := AddDep(w.s, a, a); code(err) != "dependency_cycle" {
		t.Fatalf("self: %v", err)
	}
	if _, err := AddDep(w.s, epic, child); code(err) != "dependency_cycle" {
		t.Fatalf("a parent waiting for its child: %v", err)
	}
	// A blocked parent blocks its children.
	dep, _ = AddDep(w.s, epic, a)
	w.apply("ada", t0, dep)
	if got := ready(); slices.Contains(got, child) {
		t.Fatalf("child of a blocked epic is ready: %v", got)
	}
	cl, _ := CloseTasks(w.s, []string{a}, "")
	w.apply("ada", t0, cl...)
	if got := ready(); !slices.Contains(got, child) || !slices.Contains(got, b) {
		t.Fatalf("after closing the blocker: %v", got)
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	s := NewState()
	for _, tc := range []struct {
		n    NewTask
		code string
	}{
		{NewTask{Title: "  "}, "empty_title"},
		{NewTask{Title: "x", Priority: 5}, "invalid_priority"},
		{NewTask{Title: "x", Priority: -1}, "invalid_priority"},
		{NewTask{Title: "x", Labels: []string{"a b"}}, "invalid_label"},
		{NewTask{Title: "x", Labels: []string{"a,b"}}, "invalid_label"},
		{NewTask{Title: "x", Type: "story"}, "invalid_type"},
		{NewTask{Title: "x", Deps: []string{"sp-nope"}}, "not_found"},
	} {
		if _, _, err := AddTask(s, tc.n, "sp", "w", t0); code(err) != tc.code {
			t.Errorf("%+v: got %v, want %s", tc.n, err, tc.code)
		}
	}
	if _, _, err := AddTask(s, NewTask{Title: "x"}, "Bad Prefix", "w", t0); code(err) != "invalid_config_value" {
		t.Errorf("bad prefix: %v", err)
	}
}

// Replaying the log and round-tripping the snapshot give identical bytes.
func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 1, t0, "x", "y")
	b := w.add("b", 2, t0)
	dep, _ := AddDep(w.s, b, a)
	c, _ := AddComment(w.s, a, "looks good")
	w.apply("ada", t0, dep, c)
	p := DefaultPolicy()
	w.next(p, Gate{}, "a", t0)
	w.fail(p, a, "a", "boom", t0)
	back := NewState()
	backTasks := NewTasksProjection(back)
	backHistory := NewQueueProjection(back)
	for _, pair := range []struct{ from, to projections.Projection }{
		{NewTasksProjection(w.s), backTasks},
		{NewQueueProjection(w.s), backHistory},
	} {
		snap, err := pair.from.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		if err := pair.to.UnmarshalState(bytes.Clone(snap)); err != nil {
			t.Fatal(err)
		}
		again, _ := pair.to.MarshalState()
		if !bytes.Equal(snap, again) {
			t.Fatalf("%T does not round-trip", pair.from)
		}
		f1, _ := pair.from.Files()
		f2, _ := pair.to.Files()
		for i := range f1 {
			if !bytes.Equal(f1[i].Data, f2[i].Data) {
				t.Fatalf("%s differs after a round trip", f1[i].Path)
			}
		}
		for _, bad := range [][]byte{nil, []byte("junk"), snap[:len(snap)-1], append(bytes.Clone(snap), 0)} {
			if err := pair.to.UnmarshalState(bad); err == nil {
				t.Errorf("%T: damaged snapshot of %d bytes accepted", pair.to, len(bad))
			}
		}
	}
	if !backTasks.HasTask(a) || backTasks.HasTask("sp-none") || backTasks.TaskCount() != 2 {
		t.Fatal("the id index of an encoded snapshot is wrong")
	}
	backTasks.State()
	backHistory.State()
	if got := back.Task(a).Record().Comments; len(got) != 1 || got[0].Text != "looks good" {
		t.Fatalf("comments %+v", got)
	}
	if back.Task(a).LeaseUntil != w.s.trk.m[a].LeaseUntil || back.Entry(a).LastError != "boom" {
		t.Fatal("lease or history lost")
	}
}

// Apply skips what it cannot use and never fails.
func TestApplySkipsBadEvents(t *testing.T) {
	t.Parallel()
	s := NewState()
	for _, e := range []eventlog.Event{
		{Type: TypeCreated, Subject: "sp-1", Data: json.RawMessage(`{"title":1}`)},
		{Type: TypeUpdated, Subject: "sp-missing", Data: json.RawMessage(`{}`)},
		{Type: TypeClaimed, Subject: "sp-1", Data: json.RawMessage(`[]`)},
		{Type: "task.from_the_future", Subject: "sp-1"},
		{Type: TypeCreated, Data: json.RawMessage(`{"title":"no subject"}`)},
	} {
		if err := s.Apply(&e); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.trk.m) != 0 || len(s.hst.m) != 0 {
		t.Fatalf("state %+v", s)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// Events applied while the tasks are still encoded give the same state as
// applying them to decoded tasks.
func TestLazyTasksApplyLater(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 1, t0)
	snap, err := NewTasksProjection(w.s).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	lazy := NewTasksProjection(NewState())
	if err := lazy.UnmarshalState(snap); err != nil {
		t.Fatal(err)
	}
	before := len(w.log)
	b := w.add("b", 0, t0)
	c, _ := AddComment(w.s, a, "note")
	up, _ := UpdateTask(w.s, a, Update{AddLabels: []string{"x"}})
	w.apply("ada", t0, append([]eventlog.Draft{c}, up...)...)
	for i := before; i < len(w.log); i++ {
		lazy.Apply(&w.log[i])
	}
	if !lazy.HasTask(b) || lazy.TaskCount() != 2 {
		t.Fatal("the index misses a task created after the snapshot")
	}
	got, _ := lazy.MarshalState()
	want, _ := NewTasksProjection(w.s).MarshalState()
	if !bytes.Equal(got, want) {
		t.Fatal("applying while encoded differs from applying decoded")
	}
}

func TestIDsProjection(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 1, t0)
	b := w.add("b", 1, t0)
	p := &IDsProjection{}
	for i := range w.log {
		p.Apply(&w.log[i])
	}
	snap, _ := p.MarshalState()
	back := &IDsProjection{}
	if err := back.UnmarshalState(snap); err != nil {
		t.Fatal(err)
	}
	c := w.add("c", 1, t0)
	back.Apply(&w.log[len(w.log)-1])
	back.Apply(&w.log[len(w.log)-1]) // a duplicate create counts once
	for _, id := range []string{a, b, c} {
		if !back.HasTask(id) {
			t.Fatalf("%s missing", id)
		}
	}
	if back.HasTask("sp") || back.HasTask(a[:len(a)-1]) || back.TaskCount() != 3 {
		t.Fatalf("prefixes match or count %d", back.TaskCount())
	}
	again, _ := back.MarshalState()
	fresh := &IDsProjection{}
	for i := range w.log {
		fresh.Apply(&w.log[i])
	}
	want, _ := fresh.MarshalState()
	if !bytes.Equal(again, want) {
		t.Fatalf("%q != %q", again, want)
	}
}

// An update records only what it changes; one that changes nothing appends
// nothing (and the fold gives the same task either way).
func TestUpdateRecordsOnlyChanges(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	for _, tc := range []struct {
		name string
		u    Update
		want string // the task.updated data, or "" for no event
	}{
		{"same title", Update{Title: str("a")}, ""},
		{"same priority and description", Update{Priority: num(2), Description: str("d")}, ""},
		{"label it has", Update{AddLabels: []string{"x"}}, ""},
		{"label it lacks removed", Update{RemoveLabels: []string{"nope"}}, ""},
		{"add and remove the same new label", Update{AddLabels: []string{"y"}, RemoveLabels: []string{"y"}}, ""},
		{"new title only", Update{Title: str("b"), Priority: num(2)}, `{"title":"b"}`},
		{"remove a label it has", Update{RemoveLabels: []string{"x"}, AddLabels: []string{"x"}}, `{"remove_labels":["x"]}`},
		{"add one new label", Update{AddLabels: []string{"x", "z"}}, `{"add_labels":["z"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			d, id, err := AddTask(w.s, NewTask{Title: "a", Description: "d", Priority: 2, Labels: []string{"x"}}, "sp", "w1", t0)
			if err != nil {
				t.Fatal(err)
			}
			w.apply("ada", t0, d)
			drafts, err := UpdateTask(w.s, id, tc.u)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if len(drafts) > 0 {
				b, _ := json.Marshal(drafts[0].Data)
				got = string(b)
			}
			if got != tc.want {
				t.Fatalf("drafts %s, want %s", got, tc.want)
			}
		})
	}
}

// A claim folded after a close (made in another clone as the task was
// closed) leaves the task closed, with its close time and reason.
func TestClaimAfterCloseLeavesTaskClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("a task", 1, t0)
	w.apply("ada", t0, eventlog.Draft{Type: TypeClosed, Subject: id, Data: ClosedData{Reason: "not needed"}})
	w.apply("bot", t0.Add(time.Minute), eventlog.Draft{Type: TypeClaimed, Subject: id,
		Data: ClaimedData{Attempt: 1, Worker: "bot", LeaseUntil: t0.Add(time.Hour), Source: SourceNative}})
	j := w.s.View(w.s.trk.m[id], DefaultPolicy(), t0)
	if j.Status != StatusClosed || j.ClosedAt == nil || j.CloseReason != "not needed" || j.Assignee != "" {
		t.Fatalf("after a late claim: %+v", j)
	}
}

func TestBlockedDataReadsBothSpellings(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"task_id":"sp-1","total_attempts":6,"last_failure_reason":"e6"}`,
		`{"taskId":"sp-1","totalAttempts":6,"lastFailureReason":"e6"}`,
	} {
		var d BlockedData
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			t.Fatal(err)
		}
		if d != (BlockedData{TaskID: "sp-1", TotalAttempts: 6, LastFailureReason: "e6"}) {
			t.Errorf("%s read as %+v", raw, d)
		}
	}
	b, _ := json.Marshal(BlockedData{TaskID: "sp-1", TotalAttempts: 6, LastFailureReason: "e6"})
	if string(b) != `{"taskId":"sp-1","totalAttempts":6,"lastFailureReason":"e6"}` {
		t.Errorf("written as %s", b)
	}
}

// A task blocked by hand keeps the reason while it is blocked (the board
// shows it), through a snapshot too; unblocking clears it.
func TestBlockReasonUntilUnblocked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.add("deploy", 1, t0)
	d, err := Block(w.s, id, "waits for the vendor")
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, d)
	if h := w.s.hst.m[id]; h.BlockReason != "waits for the vendor" || h.JSON().BlockReason != "waits for the vendor" {
		t.Fatalf("blocked: %+v", h)
	}
	b, err := NewQueueProjection(w.s).MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	back := NewQueueProjection(NewState())
	if err := back.UnmarshalState(b); err != nil || back.State().Entry(id).BlockReason != "waits for the vendor" {
		t.Fatalf("through a snapshot: %v %+v", err, back.State().hst.m[id])
	}
	d, err = Unblock(w.s, id, false)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, d)
	if h := w.s.hst.m[id]; h.BlockReason != "" {
		t.Fatalf("unblocked, still a reason: %+v", h)
	}
	// An import that says the task is no longer blocked clears it too.
	d, _ = Block(w.s, id, "again")
	w.apply("ada", t0, d)
	rec := w.s.trk.m[id].Record()
	rec.Status, rec.Labels = StatusOpen, nil
	drafts, err := ImportTasks(w.s, []TaskJSON{rec})
	if err != nil || len(drafts) == 0 {
		t.Fatalf("import: %v %v", drafts, err)
	}
	w.apply("ada", t0, drafts...)
	if h := w.s.hst.m[id]; h.Blocked || h.BlockReason != "" {
		t.Fatalf("imported as open, still blocked: %+v", h)
	}
}

// sortedHas finds exactly the lines of a sorted list, as a scan would.
func TestSortedHas(t *testing.T) {
	t.Parallel()
	lists := [][]string{nil, {"sp-a"}, {"sp-a", "sp-ab", "sp-b"}, {"a", "b", "c", "d", "e", "f", "g"}}
	r := rand.New(rand.NewPCG(1, 2))
	var big []string
	for range 500 {
		big = append(big, fmt.Sprintf("sp-%x", r.Uint32()%100000))
	}
	sort.Strings(big)
	lists = append(lists, slices.Compact(big))
	for _, l := range lists {
		s := strings.Join(l, "\n")
		probes := append(slices.Clone(l), "", "a0", "sp-", "sp-aa", "sp-abc", "sp-c", "zz", "sp-0")
		for range 200 {
			probes = append(probes, fmt.Sprintf("sp-%x", r.Uint32()%100000))
		}
		for _, id := range probes {
			if want := strings.Contains("\n"+s+"\n", "\n"+id+"\n") && id != ""; sortedHas(s, id) != want {
				t.Errorf("sortedHas(%q) in %d ids = %v, want %v", id, len(l), !want, want)
			}
		}
	}
}

// Whatever bytes a snapshot holds, opening it and reading every record
// either works or is corrupt_snapshot: never another panic.
func FuzzOpenSnapshot(f *testing.F) {
	w := newWorld(f)
	a := w.add("a", 1, t0, "x", "y")
	b := w.add("b", 2, t0)
	dep, _ := AddDep(w.s, b, a)
	c, _ := AddComment(w.s, a, "looks good")
	w.apply("ada", t0, dep, c)
	w.next(DefaultPolicy(), Gate{}, "a", t0)
	for _, p := range []projections.Projection{NewTasksProjection(w.s), NewQueueProjection(w.s)} {
		snap, _ := p.MarshalState()
		f.Add(snap)
	}
	hist, _ := NewQueueProjection(w.s).MarshalState()
	f.Fuzz(func(t *testing.T, in []byte) {
		openOnFile(t, in, hist)
		for _, p := range []interface {
			projections.Projection
			State() *State
		}{NewTasksProjection(NewState()), NewQueueProjection(NewState())} {
			if p.UnmarshalState(bytes.Clone(in)) != nil {
				continue
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						if e, ok := r.(*fault.Error); !ok || !e.Has(CodeCorruptSnapshot) {
							t.Fatalf("%T: panic %v", p, r)
						}
					}
				}()
				s := p.State()
				writeLists(s) // first: they read the table undecoded
				for _, t := range s.allTasks() {
					t.Detail()
				}
				s.allHistory()
				p.MarshalState()
			}()
		}
	})
}

// openOnFile is FuzzOpenSnapshot's body for a tasks' table opened on a
// file, as a command opens it, with a history beside it: the lists read it
// mapped (each listing checked alone) and ask the history's classes.
func openOnFile(t *testing.T, in, hist []byte) {
	path := filepath.Join(t.TempDir(), "tasks.snap")
	if err := os.WriteFile(path, in, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // a fuzz worker opens one per input: thousands
	s := NewState()
	if NewTasksProjection(s).OpenState(f, 0, int64(len(in))) != nil {
		return
	}
	if err := NewQueueProjection(s).UnmarshalState(hist); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*fault.Error); !ok || !e.Has(CodeCorruptSnapshot) {
				t.Fatalf("on a file: panic %v", r)
			}
		}
	}()
	writeLists(s)
}

// writeLists writes the three lists copied from a snapshot's listings;
// an error is a damaged snapshot's.
func writeLists(s *State) {
	pol := DefaultPolicy()
	s.WriteListJSON(io.Discard, pol, ListFilter{}, t0)
	s.WriteReadyJSON(io.Discard, pol, Gate{}, ReadyFilter{}, t0)
	s.WriteBeadsOpenListJSON(io.Discard, pol, t0)
	// Under a gate and a filter: the section of labels and types.
	g := Gate{Require: []string{"x"}, Exclude: []string{"y"}, ExcludeTypes: []string{"bug"}}
	s.WriteReadyJSON(io.Discard, pol, g, ReadyFilter{Any: []string{"x", "z"}}, t0)
	s.NativeStats(pol, g, t0)
}

// The orchestrator's gate keeps epics from its agents (ExcludeTypes), from
// spool's own tracker and from a bd/br source's candidates alike.
func TestTypeGating(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	for _, c := range []struct {
		name    string
		exclude []string
		want    string // the title claimed
	}{
		{"epics excluded", []string{"epic"}, "the work"},
		{"nothing excluded", nil, "the epic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			d, _, err := AddTask(w.s, NewTask{Title: "the epic", Type: "epic", Priority: 0, Labels: []string{"prd"}}, "sp", "writer1", t0)
			if err != nil {
				t.Fatal(err)
			}
			w.apply("ada", t0, d)
			w.add("the work", 2, t0)
			g := Gate{ExcludeTypes: c.exclude}
			id := w.next(p, g, "a", t0)
			if got := w.s.trk.m[id]; got == nil || got.Title != c.want {
				t.Fatalf("native: claimed %q, want %q", id, c.want)
			}
			cands := []Candidate{{ID: "bd-1", Title: "the epic", IssueType: "epic", Priority: 0, CreatedAt: t0},
				{ID: "bd-2", Title: "the work", IssueType: "task", Priority: 2, CreatedAt: t0}}
			_, claim, err := Next(NewState(), cands, false, p, g, "a", "a", t0)
			if err != nil || claim == nil || claim.Task.Title != c.want {
				t.Fatalf("bd source: claimed %+v (%v), want %q", claim, err, c.want)
			}
		})
	}
}

// retry and unblock put back the priority the task had before the
// progressive policy demoted it, unless someone set another since.
func TestRestoreDemotedPriority(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.Kind = Progressive
	for _, c := range []struct {
		name  string
		undo  func(s *State, id string) (eventlog.Draft, error)
		touch *int // a priority set by hand before the undo
		want  int
	}{
		{"retry", func(s *State, id string) (eventlog.Draft, error) { return Retry(s, p, id, t0) }, nil, 1},
		{"unblock --reset-attempts", func(s *State, id string) (eventlog.Draft, error) { return Unblock(s, id, true) }, nil, 1},
		{"unblock", func(s *State, id string) (eventlog.Draft, error) { return Unblock(s, id, false) }, nil, 1},
		{"blocked label removed", func(s *State, id string) (eventlog.Draft, error) {
			d, err := UpdateTask(s, id, Update{RemoveLabels: []string{BlockedLabel}})
			if err != nil {
				return eventlog.Draft{}, err
			}
			return d[0], nil
		}, nil, 1},
		{"set by hand since", func(s *State, id string) (eventlog.Draft, error) { return Retry(s, p, id, t0) }, ptr(0), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.add("stubborn", 1, t0)
			at := t0
			for range 12 { // 1 → 2 → 3 → 4, then Blocked
				if got := w.next(p, Gate{}, "a", at); got != id {
					t.Fatalf("next = %q", got)
				}
				w.fail(p, id, "a", "still broken", at)
				at = at.Add(time.Second)
			}
			if h := w.s.hst.m[id]; !h.Blocked || w.s.trk.m[id].Priority != 4 || !h.Demoted || h.PriorityBefore != 1 {
				t.Fatalf("after the ladder: %+v, priority %d", h, w.s.trk.m[id].Priority)
			}
			if c.touch != nil {
				d, err := UpdateTask(w.s, id, Update{Priority: c.touch})
				if err != nil {
					t.Fatal(err)
				}
				w.apply("ada", at, d...)
			}
			d, err := c.undo(w.s, id)
			if err != nil {
				t.Fatal(err)
			}
			w.apply("ada", at, d)
			if got := w.s.trk.m[id].Priority; got != c.want {
				t.Errorf("priority %d after %s, want %d", got, c.name, c.want)
			}
			if h := w.s.hst.m[id]; h.Demoted || h.Blocked {
				t.Errorf("after %s: %+v", c.name, h)
			}
			// Demoted again from the restored priority, the record starts over.
			for range 3 {
				w.next(p, Gate{}, "a", at)
				w.fail(p, id, "a", "still broken", at)
			}
			if h := w.s.hst.m[id]; c.touch == nil && (!h.Demoted || h.PriorityBefore != c.want) {
				t.Errorf("demoted again: %+v", h)
			}
		})
	}
}

// With a bd/br source whose update --priority fails, bd keeps offering the
// bead at its old priority: the policy's demotion holds in spool all the
// same, so the ladder reaches priority 4 and Blocked, not a loop for ever.
// A retry puts the priority back, in spool and as a request to the source.
func TestSourceDemotionHoldsAndBlocks(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.Kind = Progressive
	s := NewState()
	cands := []Candidate{{ID: "bd-1", Title: "t", IssueType: "task", Priority: 1, CreatedAt: t0}} // never demoted in bd
	at := t0
	runs := 0
	for ; runs < 100; runs++ {
		drafts, claim, err := Next(s, cands, false, p, Gate{}, "a", "a", at)
		if err != nil {
			t.Fatal(err)
		}
		applyAll(t, s, at, append(drafts, SyncRequests(drafts, "")...))
		if claim == nil {
			break
		}
		d, err := Fail(s, p, "bd-1", "a", "boom", at)
		if err != nil {
			t.Fatal(err)
		}
		applyAll(t, s, at, append(d, SyncRequests(d, "")...)) // none reaches bd: they stay pending
		at = at.Add(time.Second)
	}
	if h := s.Entry("bd-1"); runs != 12 || !h.Blocked || h.Priority != 4 || h.PriorityBefore != 1 {
		t.Fatalf("after %d runs: %+v", runs, h)
	}
	d, err := Retry(s, p, "bd-1", at)
	if err != nil {
		t.Fatal(err)
	}
	reqs := SyncRequests([]eventlog.Draft{d}, "")
	if len(reqs) != 2 || reqs[1].Data.(SyncData).Op != SyncPriority || *reqs[1].Data.(SyncData).Priority != 1 {
		t.Fatalf("retry's requests: %+v", reqs)
	}
	applyAll(t, s, at, []eventlog.Draft{d})
	if _, claim, _ := Next(s, cands, false, p, Gate{}, "a", "a", at); claim == nil || claim.Task.Priority != 1 {
		t.Fatalf("after retry: %+v", claim)
	}
}

// A bead spool Blocked comes back from bd ready without its blocked label:
// someone removed it in bd, and that unblocks it in spool, unless the label
// never reached bd (its request pending or given up).
func TestUnblockedAtSource(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	for _, c := range []struct {
		name    string
		outcome string // of the label's request: synced, failed, gave_up
		labels  []string
		want    bool
	}{
		{"label removed in bd", TypeSynced, nil, true},
		{"label still on the bead", TypeSynced, []string{BlockedLabel}, false},
		{"label never reached bd", TypeSyncFailed, nil, false},
		{"label given up", "gave_up", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewState()
			cands := []Candidate{{ID: "bd-1", IssueType: "task", Priority: 2, CreatedAt: t0}}
			drafts, _, err := Next(s, cands, false, p, Gate{}, "a", "a", t0)
			if err != nil {
				t.Fatal(err)
			}
			applyAll(t, s, t0, drafts)
			d, err := Block(s, "bd-1", "by hand")
			if err != nil {
				t.Fatal(err)
			}
			events := applyAll(t, s, t0, append([]eventlog.Draft{d}, SyncRequests([]eventlog.Draft{d}, "")...))
			req := events[1].ID
			switch c.outcome {
			case TypeSynced:
				applyAll(t, s, t0, []eventlog.Draft{{Type: TypeSynced, Subject: "bd-1", Data: SyncedData{Request: req}}})
			default:
				applyAll(t, s, t0, []eventlog.Draft{{Type: TypeSyncFailed, Subject: "bd-1", Data: SyncFailedData{Request: req, Error: "no", GaveUp: c.outcome == "gave_up"}}})
			}
			cands[0].Labels = c.labels
			_, claim, err := Next(s, cands, false, p, Gate{}, "a", "a", t0)
			if err != nil || (claim != nil) != c.want {
				t.Fatalf("claim %+v (%v), want one: %v", claim, err, c.want)
			}
		})
	}
}

func TestSyncWait(t *testing.T) {
	t.Parallel()
	for failures, want := range map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 4: 80 * time.Second, 6: 5 * time.Minute, 60: 5 * time.Minute} {
		if got := SyncWait(failures); got != want {
			t.Errorf("SyncWait(%d) = %s, want %s", failures, got, want)
		}
	}
}

// applyAll folds drafts into s as one append would and returns the events.
func applyAll(t *testing.T, s *State, at time.Time, drafts []eventlog.Draft) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for i, d := range drafts {
		e, err := d.Event("a", at)
		if err != nil {
			t.Fatal(err)
		}
		e.ID = fmt.Sprintf("%s-%d-%d", d.Type, at.UnixNano(), i)
		if err := s.Apply(e); err != nil {
			t.Fatal(err)
		}
		out = append(out, *e)
	}
	return out
}

// Done is not merged: a done whose branch the merge train refused for good
// reopens the task and counts as a failed attempt with the train's reason,
// under the policy; the third such demotes it, as agents' failures do. A
// task reopened (or rejected) since is not that done any more.
func TestRejected(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.Kind = Progressive
	w := newWorld(t)
	id := w.add("merge me", 1, t0)
	at := t0
	for i := 1; i <= 3; i++ {
		if got := w.next(p, Gate{}, "orchestrator", at); got != id {
			t.Fatalf("round %d: next = %q", i, got)
		}
		d, err := Done(w.s, p, id, "orchestrator", "agent succeeded", at)
		if err != nil {
			t.Fatal(err)
		}
		w.apply("orchestrator", at, d...)
		rej, err := Rejected(w.s, p, id, "merge rejected: tests failed", at)
		if err != nil {
			t.Fatal(err)
		}
		w.apply("orchestrator", at, rej...)
		if _, err := Rejected(w.s, p, id, "again", at); code(err) != "invalid_state_transition" {
			t.Fatalf("a second rejection of the same done: %v", err)
		}
		h, task := w.s.hst.m[id], w.s.trk.m[id]
		if task.Status != StatusOpen || h.Status != HistFailed || h.Attempts != i || h.Failures != i || h.LastError != "merge rejected: tests failed" {
			t.Fatalf("round %d: task %s, history %+v", i, task.Status, h)
		}
		at = at.Add(time.Hour)
	}
	if got := w.s.trk.m[id].Priority; got != 2 {
		t.Errorf("priority %d after three rejections, want 2 (demoted)", got)
	}
	// With a bd/br source the bead is reopened, before the demotion.
	w.next(p, Gate{}, "orchestrator", at)
	d, _ := Done(w.s, p, id, "orchestrator", "ok", at)
	w.apply("orchestrator", at, d...)
	rej, _ := Rejected(w.s, p, id, "merge rejected", at)
	reqs := SyncRequests(rej, "")
	if len(reqs) == 0 || reqs[0].Data.(SyncData).Op != SyncReopen {
		t.Errorf("requests to the source: %+v", reqs)
	}
	// Reopened by hand since: not the train's to charge.
	w.apply("ada", at, eventlog.Draft{Type: TypeReopened, Subject: id, Data: struct{}{}})
	if _, err := Rejected(w.s, p, id, "late", at); code(err) != "invalid_state_transition" {
		t.Errorf("rejection after a reopen by hand: %v", err)
	}
}

// reopener snapshots the world's tasks and history now and returns what
// reads them back, as a command would: from the snapshots, with the events
// the world logged since folded on top.
func (w *world) reopener(t testing.TB) func() *State { return w.reopen(t, false) }

// fileReopener is reopener with the tasks' table opened on a file, as a
// command opens it: its index is read only when a command needs it.
func (w *world) fileReopener(t testing.TB) func() *State { return w.reopen(t, true) }

func (w *world) reopen(t testing.TB, onFile bool) func() *State {
	t.Helper()
	var snap [2][]byte
	for i, p := range []interface{ MarshalState() ([]byte, error) }{NewTasksProjection(w.s), NewQueueProjection(w.s)} {
		b, err := p.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		snap[i] = b
	}
	from := len(w.log)
	path := filepath.Join(t.TempDir(), "tasks.snap")
	if err := os.WriteFile(path, snap[0], 0o644); err != nil {
		t.Fatal(err)
	}
	return func() *State {
		s := NewState()
		if onFile {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := NewTasksProjection(s).OpenState(f, 0, int64(len(snap[0]))); err != nil {
				t.Fatal(err)
			}
		} else if err := NewTasksProjection(s).UnmarshalState(snap[0]); err != nil {
			t.Fatal(err)
		}
		if err := NewQueueProjection(s).UnmarshalState(snap[1]); err != nil {
			t.Fatal(err)
		}
		for i := from; i < len(w.log); i++ {
			s.Apply(&w.log[i])
		}
		return s
	}
}
