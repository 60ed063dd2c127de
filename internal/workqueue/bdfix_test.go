package workqueue

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

func types(drafts []eventlog.Draft) []string {
	var out []string
	for _, d := range drafts {
		out = append(out, d.Type+" "+d.Subject)
	}
	return out
}

// Several ids in one command are decided one after another, each on the
// state after the ones before it, each id once: an expired lease is
// recorded once however many tasks are claimed, and a repeated id is
// claimed (or closed) once.
func TestEachDecidesOnTheStateBefore(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	x := w.add("expires", 0, t0)
	a := w.add("a", 1, t0)
	b := w.add("b", 2, t0)
	w.next(p, Gate{}, "crashed", t0) // claims x
	late := t0.Add(p.Lease)
	claim := func(ids ...string) ([]eventlog.Draft, error) {
		return Each(w.s, ids, "ada", late, func(f *Fork, id string) error {
			return f.Decide(func(s *State) ([]eventlog.Draft, error) {
				return SetStatus(s, p, id, StatusInProgress, "ada", "ada", "", late)
			})
		})
	}
	got, err := claim(a, b, a)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{TypeLeaseExpired + " " + x, TypeClaimed + " " + a, TypeClaimed + " " + b}
	if !slices.Equal(types(got), want) {
		t.Fatalf("drafts %v, want %v", types(got), want)
	}
	if h := w.s.hst.m[x]; h.Status != HistWorking || w.s.hst.m[a] != nil {
		t.Fatal("deciding on a fork changed the state it was made from")
	}
	w.apply("ada", late, got...)
	closeAll := func(ids ...string) ([]eventlog.Draft, error) {
		return Each(w.s, ids, "ada", late, func(f *Fork, id string) error {
			return f.Decide(func(s *State) ([]eventlog.Draft, error) {
				return Finish(s, p, id, "ada", "done", late)
			})
		})
	}
	got, err = closeAll(a, a)
	if err != nil || !slices.Equal(types(got), []string{TypeSucceeded + " " + a, TypeClosed + " " + a}) {
		t.Fatalf("close a a: %v %v", types(got), err)
	}
}

// A fork copies what a draft touches: the base keeps its labels,
// dependencies, comments and history.
func TestForkLeavesTheBase(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 1, t0, "x")
	b := w.add("b", 1, t0)
	f := NewFork(w.s, "ada", t0)
	if s, _ := f.State(); s != w.s {
		t.Fatal("a fork with nothing added is a copy already")
	}
	f.Add(
		eventlog.Draft{Type: TypeUpdated, Subject: a, Data: UpdatedData{AddLabels: []string{"y"}}},
		eventlog.Draft{Type: TypeDepAdded, Subject: a, Data: DepData{Blocker: b}},
		eventlog.Draft{Type: TypeCommented, Subject: a, Data: CommentData{Text: "hi"}},
		eventlog.Draft{Type: TypeBlocked, Subject: a, Data: BlockedData{TaskID: a, Reason: "r"}})
	if f.s != w.s {
		t.Fatal("drafts no decision has asked to see were applied (the maps copied for nothing)")
	}
	fs, err := f.State()
	if err != nil {
		t.Fatal(err)
	}
	base, forked := w.s.trk.m[a], fs.trk.m[a]
	if !slices.Equal(base.Labels, []string{"x"}) || len(base.Blockers) != 0 || base.Detail().NumComments() != 0 || w.s.hst.m[a] != nil {
		t.Fatalf("base changed: %+v", base)
	}
	if !forked.HasLabel("y") || !forked.HasLabel(BlockedLabel) || len(forked.Blockers) != 1 || fs.hst.m[a] == nil || fs.trk.commentSeq != 1 {
		t.Fatalf("fork: %+v", forked)
	}
	if len(f.Drafts()) != 4 {
		t.Fatalf("drafts %d", len(f.Drafts()))
	}
}

// A claim by name decides on the state after the expiries it records: a
// progressive expiry that blocks the task at P4 is unblocked by the claim.
func TestClaimTaskAfterAnExpiryThatBlocks(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	p.Kind = Progressive
	w := newWorld(t)
	id := w.add("stubborn", 4, t0)
	at := t0
	for range 2 {
		w.next(p, Gate{}, "a", at)
		w.fail(p, id, "a", "broken", at)
		at = at.Add(time.Second)
	}
	w.next(p, Gate{}, "a", at)
	late := at.Add(p.Lease)
	d, err := ClaimTask(w.s, p, id, "b", "b", late)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{TypeLeaseExpired + " " + id, TypeBlocked + " " + id, TypeUnblocked + " " + id, TypeClaimed + " " + id}
	if !slices.Equal(types(d), want) {
		t.Fatalf("drafts %v, want %v", types(d), want)
	}
	w.apply("b", late, d...)
	if h := w.s.hst.m[id]; h.Status != HistWorking || h.Blocked || w.s.trk.m[id].HasLabel(BlockedLabel) {
		t.Fatalf("after the claim: %+v", h)
	}
}

// The worker a claim was made for acts on it as its claimant: it finishes,
// releases and extends it. The actor who claimed it for another worker
// cannot claim it again for a third; the same claim again is a no-op.
func TestClaimForAWorker(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	id := w.add("t", 1, t0)
	d, err := ClaimTask(w.s, p, id, "agent-1", "orchestrator", t0)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("orchestrator", t0, d...)
	for _, tc := range []struct {
		worker, actor, code string
	}{
		{"agent-1", "orchestrator", ""},
		{"agent-1", "agent-1", ""},
		{"agent-2", "orchestrator", CodeAlreadyClaimed.Name},
		{"orchestrator", "orchestrator", CodeAlreadyClaimed.Name},
		{"agent-2", "agent-2", CodeAlreadyClaimed.Name},
	} {
		d, err := ClaimTask(w.s, p, id, tc.worker, tc.actor, t0)
		if code(err) != tc.code || err == nil && d != nil {
			t.Errorf("claim for %s by %s: %v %v, want %q", tc.worker, tc.actor, types(d), err, tc.code)
		}
	}
	if _, _, err := Heartbeat(w.s, p, id, "agent-1", t0); err != nil {
		t.Fatalf("heartbeat by the worker: %v", err)
	}
	if _, err := Release(w.s, p, id, "agent-2", t0); code(err) != fault.CodeUnauthorized.Name {
		t.Fatalf("release by another worker: %v", err)
	}
	got, err := Finish(w.s, p, id, "agent-1", "done", t0)
	if err != nil || !slices.Equal(types(got), []string{TypeSucceeded + " " + id, TypeClosed + " " + id}) {
		t.Fatalf("close by the worker: %v %v", types(got), err)
	}
}

// A task imported as in_progress has no claim: blocked and deferred take
// it as open.
func TestUnclaimedInProgress(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	for _, tc := range []struct {
		to, status string
		want       []string
	}{
		{StatusBlocked, StatusBlocked, []string{TypeBlocked}},
		{StatusDeferred, StatusDeferred, []string{TypeUpdated}},
		{StatusOpen, StatusOpen, []string{TypeUpdated}},
	} {
		w := newWorld(t)
		drafts, err := ImportTasks(w.s, []TaskJSON{{ID: "bd-1", Title: "t", Status: StatusInProgress, Assignee: "agent", CreatedAt: t0}})
		if err != nil {
			t.Fatal(err)
		}
		w.apply("ada", t0, drafts...)
		got, err := w.setStatus(p, "bd-1", tc.to, "ada", t0)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("→ %s: %v %v, want %v", tc.to, got, err, tc.want)
			continue
		}
		if st := Beads(w.s.View(w.s.trk.m["bd-1"], p, t0)).Status; st != tc.status {
			t.Errorf("→ %s: status %s", tc.to, st)
		}
	}
}

// --set-labels is one task.updated with the difference, decided with the
// rest of the update; the blocked label is Blocked, not a label.
func TestUpdateLabels(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	id := w.add("t", 1, t0, "a", "b")
	update := func(u Update) []eventlog.Draft {
		t.Helper()
		d, err := UpdateTask(w.s, id, u)
		if err != nil {
			t.Fatal(err)
		}
		w.apply("ada", t0, d...)
		return d
	}
	d := update(Update{SetLabels: []string{"b", "c"}, AddLabels: []string{"d"}})
	if len(d) != 1 {
		t.Fatalf("drafts %v", types(d))
	}
	if u := d[0].Data.(UpdatedData); !slices.Equal(u.AddLabels, []string{"c", "d"}) || !slices.Equal(u.RemoveLabels, []string{"a"}) {
		t.Fatalf("data %+v", u)
	}
	if d := update(Update{SetLabels: []string{"b", "c", "d"}}); len(d) != 0 {
		t.Fatalf("the same labels again: %v", types(d))
	}
	if d := update(Update{AddLabels: []string{BlockedLabel}}); !slices.Equal(types(d), []string{TypeBlocked + " " + id}) {
		t.Fatalf("adding blocked: %v", types(d))
	}
	if h := w.s.hst.m[id]; h == nil || !h.Blocked || Beads(w.s.View(w.s.trk.m[id], p, t0)).Status != StatusBlocked {
		t.Fatal("adding the blocked label did not block the task")
	}
	if d := update(Update{SetLabels: []string{"x"}}); len(d) != 1 || !w.s.isBlocked(id) {
		t.Fatal("set-labels without blocked unblocked the task")
	}
	if d := update(Update{RemoveLabels: []string{BlockedLabel}}); !slices.Equal(types(d), []string{TypeUnblocked + " " + id}) {
		t.Fatalf("removing blocked: %v", types(d))
	}
	if h := w.s.hst.m[id]; h.Blocked || h.Status != HistPending || w.s.trk.m[id].HasLabel(BlockedLabel) {
		t.Fatalf("after removing the blocked label: %+v", h)
	}
	if d := update(Update{RemoveLabels: []string{BlockedLabel}}); len(d) != 0 {
		t.Fatalf("removing a label it does not have: %v", types(d))
	}
}

// An old task.imported (before owner was kept) has its creator as owner;
// a new one keeps owner as the export had it, empty included.
func TestImportedOwner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ data, owner string }{
		{`{"title":"t","status":"open","priority":2,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","created_by":"ada","updated_at":"2026-01-01T00:00:00Z"}`, "ada"},
		{`{"title":"t","status":"open","priority":2,"issue_type":"task","owner":"ada@example.com","created_at":"2026-01-01T00:00:00Z","created_by":"ada","updated_at":"2026-01-01T00:00:00Z"}`, "ada@example.com"},
		{`{"title":"t","status":"open","priority":2,"issue_type":"task","owner":"","created_at":"2026-01-01T00:00:00Z","created_by":"ada","updated_at":"2026-01-01T00:00:00Z"}`, ""},
	} {
		s := NewState()
		s.Apply(&eventlog.Event{Type: TypeImported, Subject: "bd-1", At: t0, Actor: "importer", Data: json.RawMessage(tc.data)})
		if got := s.trk.m["bd-1"].Record(); got.Owner != tc.owner || got.CreatedBy != "ada" {
			t.Errorf("%s: owner %q created_by %q, want owner %q", tc.data, got.Owner, got.CreatedBy, tc.owner)
		}
	}
}

// An import sets the whole task: a live claim on it ends in the history
// too (task and queue agree), and an import that unblocks a task clears
// Blocked.
func TestImportOverAClaim(t *testing.T) {
	t.Parallel()
	p := DefaultPolicy()
	w := newWorld(t)
	a := w.add("claimed", 1, t0)
	b := w.add("blocked", 1, t0)
	w.next(p, Gate{}, "agent", t0)
	blk, err := Block(w.s, b, "human")
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, blk)
	recs := w.s.Export()
	for i := range recs {
		recs[i].Status, recs[i].Assignee, recs[i].Labels = StatusOpen, "", nil
	}
	drafts, err := ImportTasks(w.s, recs)
	if err != nil || len(drafts) != 2 {
		t.Fatalf("%v %v", types(drafts), err)
	}
	w.apply("importer", t0, drafts...)
	if h := w.s.hst.m[a]; h.Status != HistPending || h.Actor != "" || h.Attempts != 1 || h.Failures != 0 {
		t.Fatalf("claimed task's history after the import: %+v", h)
	}
	if _, err := Done(w.s, p, a, "agent", "", t0); code(err) != CodeNotClaimed.Name {
		t.Fatalf("done after the import: %v", err)
	}
	if h := w.s.hst.m[b]; h.Blocked || h.Status != HistPending || w.s.isBlocked(b) {
		t.Fatalf("blocked task's history after an import that unblocks it: %+v", h)
	}
	if got := w.next(p, Gate{}, "agent", t0); got != a {
		t.Fatalf("next after the import: %q", got)
	}
}
