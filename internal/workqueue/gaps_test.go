package workqueue

import (
	"testing"
	"time"
)

// A task an external source (bd/br) reports ready that spool has claimed
// is never handed out again while the claim's lease is live, whoever asks,
// whatever priority the source gives it now: Select skips it as claimed,
// and Next, over the same candidates, goes on to the next one and then to
// none.
func TestSourceClaimedNotHandedOutAgain(t *testing.T) {
	p := DefaultPolicy()
	s := NewState()
	cands := []Candidate{
		{ID: "bd-1", Title: "first", IssueType: "task", Priority: 1, CreatedAt: t0},
		{ID: "bd-2", Title: "second", IssueType: "task", Priority: 2, CreatedAt: t0},
	}
	at := t0
	var claimed []string
	for _, worker := range []string{"a", "b", "a"} {
		drafts, claim, err := Next(s, cands, false, p, Gate{}, worker, worker, at)
		if err != nil {
			t.Fatal(err)
		}
		applyAll(t, s, at, drafts)
		if claim != nil {
			claimed = append(claimed, claim.Task.ID)
		}
		at = at.Add(time.Minute)
	}
	if len(claimed) != 2 || claimed[0] != "bd-1" || claimed[1] != "bd-2" {
		t.Fatalf("claimed %v, want bd-1 then bd-2, then nothing", claimed)
	}
	// The source now says bd-2 is the most urgent: still claimed.
	urgent := []Candidate{cands[0], cands[1]}
	urgent[1].Priority = 0
	if got := p.Select(urgent, s.Entry, Gate{}, at, 0); len(got) != 0 {
		t.Fatalf("Select handed out %v, claimed both", got)
	}
	for _, c := range urgent {
		if why := p.Skip(c, s.Entry(c.ID), Gate{}, at); why != SkipWorking {
			t.Fatalf("%s skipped for %q, want %q", c.ID, why, SkipWorking)
		}
	}
	// A third bead is the one handed out.
	third := append(urgent, Candidate{ID: "bd-3", Title: "third", IssueType: "task", Priority: 3, CreatedAt: t0})
	if got := p.Select(third, s.Entry, Gate{}, at, 0); len(got) != 1 || got[0].ID != "bd-3" {
		t.Fatalf("Select: %v, want bd-3 alone", got)
	}
	if _, claim, err := Next(s, third, false, p, Gate{}, "c", "c", at); err != nil || claim == nil || claim.Task.ID != "bd-3" {
		t.Fatalf("next: %+v %v, want bd-3", claim, err)
	}
	// Until the lease runs out: then bd-1 is the source's again.
	late := t0.Add(p.Lease + time.Second)
	drafts, claim, err := Next(s, cands, false, p, Gate{}, "d", "d", late)
	if err != nil || claim == nil || claim.Task.ID != "bd-1" || len(drafts) < 2 || drafts[0].Type != TypeLeaseExpired {
		t.Fatalf("after the lease: %+v %v (%d drafts), want bd-1 again, its expiry first", claim, err, len(drafts))
	}
}

// task close X X closes X once, as bd close X X does: a task named twice
// gets one task.closed, among others too; closing a closed task is refused.
func TestCloseSameTaskTwice(t *testing.T) {
	w := newWorld(t)
	a, b := w.add("a", 2, t0), w.add("b", 2, t0)
	for _, ids := range [][]string{{a, a}, {a, b, a}, {b, a, a}} {
		drafts, err := CloseTasks(w.s, ids, "done")
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		got := map[string]int{}
		for _, d := range drafts {
			got[d.Subject]++
		}
		if err != nil || len(drafts) != len(want) || len(got) != len(want) {
			t.Fatalf("close %v: %d events (%v), %v; want each task closed once", ids, len(drafts), drafts, err)
		}
	}
	drafts, err := CloseTasks(w.s, []string{a, b}, "done")
	if err != nil || len(drafts) != 2 {
		t.Fatalf("close a b: %v, %v", drafts, err)
	}
	w.apply("ada", t0, drafts...)
	if drafts, err := CloseTasks(w.s, []string{a}, "again"); code(err) != "invalid_state_transition" || len(drafts) != 0 {
		t.Fatalf("close a closed task: %v, %v", drafts, err)
	}
}
