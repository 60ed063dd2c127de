package mergequeue

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

// Anyone who can push can write an event: values the train and recovery
// hand to git (commits, the target branch) are refused by the fold unless
// they are what the deciders record, so that a forged tested_sha such as
// "--index-output=…" never reaches a git command line as an option.
func TestFoldRefusesValuesGitCannotTake(t *testing.T) {
	forge := func(s *State, typ string, d EntryData) {
		t.Helper()
		b, _ := json.Marshal(d)
		eventSeq++
		s.Apply(&eventlog.Event{V: 1, ID: fmt.Sprintf("forged%d", eventSeq), Type: typ, Subject: Subject(d.EntryID), At: t0, Actor: "mallory", Data: b})
	}
	s := New()
	forge(s, EvSubmitted, EntryData{Workspace: "w", WorkspaceID: "w", DedupeKey: "w:c", HeadSHA: "--upload-pack=touch /tmp/x", Branch: "b", Worktree: "/w"})
	if s.Skipped != 1 || len(s.All()) != 0 {
		t.Fatalf("a submission whose head is not a commit: %d skipped, %d entries", s.Skipped, len(s.All()))
	}
	sub := submit(t, s, req("a", 1, "ada"), t0)
	id := sub.EntryID
	ref := s.Entry(id).Ref
	for _, c := range []struct {
		name string
		typ  string
		d    EntryData
	}{
		{"target with a refspec", EvClaimed, EntryData{From: Pending, To: Claimed, Target: "main:refs/heads/evil", Runner: "r", HeadSHA: sha(1)}},
		{"target climbing out of refs/heads", EvClaimed, EntryData{From: Pending, To: Claimed, Target: "../../config", Runner: "r", HeadSHA: sha(1)}},
		{"tested_against_sha an option", EvClaimed, EntryData{From: Pending, To: Claimed, Target: "main", Runner: "r", HeadSHA: sha(1), TestedAgainstSHA: "--index-output=/tmp/x"}},
		{"head_sha not hex", EvClaimed, EntryData{From: Pending, To: Claimed, Target: "main", Runner: "r", HeadSHA: "HEAD~1"}},
	} {
		c.d.EntryID, c.d.EntryRef = id, ref
		before := len(s.Entry(id).Conflicts)
		forge(s, c.typ, c.d)
		e := s.Entry(id)
		if e.Status != Pending || len(e.Conflicts) != before+1 {
			t.Fatalf("%s: the entry is %s with %d conflicts", c.name, e.Status, len(e.Conflicts))
		}
	}
	// The same moves with values the deciders record apply.
	drafts, claimed := DecideClaim(s, "r", Target{Branch: "main", SHA: sha(7)}, pol, t0)
	if claimed == nil {
		t.Fatal("no claim")
	}
	fold(t, s, t0, "ada", drafts)
	for _, d := range []EntryData{
		{From: Claimed, To: Rebasing, Runner: "r", HeadSHA: sha(1), TestedAgainstSHA: "--index-output=/tmp/x"},
		{From: Claimed, To: Rebasing, Runner: "r", HeadSHA: sha(1), TestedSHA: "-b"},
		{From: Claimed, To: Rebasing, Runner: "r", HeadSHA: sha(1), TargetFromSHA: sha(2) + "x"},
	} {
		d.EntryID, d.EntryRef = id, ref
		forge(s, EvTransitioned, d)
		if e := s.Entry(id); e.Status != Claimed {
			t.Fatalf("%+v applied: the entry is %s", d, e.Status)
		}
	}
	checkInvariants(t, s)
}

// What the fuzzer found: a submission the deciders never write (no change
// id, a dedupe key not of it, no branch, "to" other than pending) made an
// entry that broke the identity and audit invariants.
func TestFoldTakesOnlySubmissionsDecideSubmitMakes(t *testing.T) {
	s := New()
	ok := EntryData{Workspace: "w", WorkspaceID: "w", Worktree: "/w", Branch: "b", ChangeID: "C", DedupeKey: "w:C", HeadSHA: sha(1)}
	for i, change := range []func(*EntryData){
		func(d *EntryData) { d.ChangeID = "" },
		func(d *EntryData) { d.DedupeKey = "w:other" },
		func(d *EntryData) { d.DedupeKey = "w C" },
		func(d *EntryData) { d.Branch = "" },
	} {
		d := ok
		change(&d)
		b, _ := json.Marshal(d)
		s.Apply(&eventlog.Event{V: 1, ID: fmt.Sprintf("bad%d", i), Type: EvSubmitted, Subject: "merge/1", At: t0, Actor: "mallory", Data: b})
	}
	if len(s.All()) != 0 {
		t.Fatalf("%d entries from submissions no decider makes", len(s.All()))
	}
	d := ok
	d.To = Merged
	b, _ := json.Marshal(d)
	s.Apply(&eventlog.Event{V: 1, ID: "good", Type: EvSubmitted, Subject: "merge/1", At: t0, Actor: "mallory", Data: b})
	if e := s.Entry(1); e == nil || e.Status != Pending || e.LastStep.To != Pending {
		t.Fatalf("a submission saying to=merged: %+v", e)
	}
	checkInvariants(t, s)
}
