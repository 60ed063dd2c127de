package mergequeue

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

var t0 = time.Date(2026, 2, 18, 9, 0, 0, 0, time.UTC)

var pol = Policy{MaxAttempts: 3, Lease: 5 * time.Minute}

var eventSeq int

// fold applies drafts as the log would, failing when the fold skips one:
// a decider must never produce an event the fold cannot use.
func fold(t testing.TB, s *State, at time.Time, actor string, drafts []eventlog.Draft) {
	t.Helper()
	for _, d := range drafts {
		b, err := json.Marshal(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		skipped := s.Skipped
		eventSeq++ // ids as the log gives them: entries are named by their submit event's id
		s.Apply(&eventlog.Event{V: 1, ID: fmt.Sprintf("ev%d", eventSeq), Type: d.Type, Subject: d.Subject, At: at, Actor: actor, Data: b})
		if s.Skipped != skipped {
			t.Fatalf("fold skipped %s %s", d.Type, b)
		}
	}
}

func sha(n int) string { return fmt.Sprintf("%040x", n) }

func req(ws string, head int, actor string) SubmitRequest {
	return SubmitRequest{Workspace: ws, Branch: "b-" + ws, HeadSHA: sha(head), ChangeID: "C" + ws, ChangeIDSource: SourceTrailer, Priority: P(2), Actor: actor}
}

func submit(t testing.TB, s *State, r SubmitRequest, at time.Time) Submission {
	t.Helper()
	sub, err := DecideSubmit(s, r, pol, at)
	if err != nil {
		t.Fatalf("submit %s: %v", r.Workspace, err)
	}
	fold(t, s, at, r.Actor, sub.Drafts)
	return sub
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	f, ok := fault.As(err)
	if !ok {
		t.Fatalf("got %v, want error %s", err, code)
	}
	if f.Code != code {
		t.Fatalf("got code %s (%v), want %s", f.Code, err, code)
	}
}

func checkInvariants(t testing.TB, s *State) {
	t.Helper()
	if bad := CheckInvariants(s); len(bad) > 0 {
		t.Fatalf("invariants violated:\n%s", strings.Join(bad, "\n"))
	}
	checkIndex(t, s)
}

// checkIndex compares the index the fold kept with one built afresh from
// the entries.
func checkIndex(t testing.TB, s *State) {
	t.Helper()
	kept := s.index()
	fresh := (&State{entries: s.entries, undecoded: s.undecoded}).index()
	same := func(a, b map[string]*Entry) bool {
		if len(a) != len(b) {
			return false
		}
		for k, e := range a {
			if b[k] != e {
				return false
			}
		}
		return true
	}
	switch {
	case !same(kept.activeByKey, fresh.activeByKey):
		t.Fatalf("active by key: kept %v, fresh %v", kept.activeByKey, fresh.activeByKey)
	case !same(kept.activeByWS, fresh.activeByWS):
		t.Fatalf("active by workspace: kept %v, fresh %v", kept.activeByWS, fresh.activeByWS)
	case !same(kept.byRef, fresh.byRef):
		t.Fatal("by ref differs")
	case !same(kept.latestByKey, fresh.latestByKey):
		t.Fatal("latest by key differs")
	case !slices.Equal(kept.queue, fresh.queue):
		t.Fatalf("queue: kept %d entries, fresh %d", len(kept.queue), len(fresh.queue))
	case !slices.Equal(kept.active, fresh.active):
		t.Fatalf("active: kept %d entries, fresh %d", len(kept.active), len(fresh.active))
	}
	for i, e := range kept.queue {
		if e.Position != i+1 || e.Status != Pending {
			t.Fatalf("queue[%d] is entry %d, %s at position %d", i, e.ID, e.Status, e.Position)
		}
	}
}

// drive moves an entry through the train to status to.
func drive(t testing.TB, s *State, id int64, path []Status, at time.Time) {
	t.Helper()
	e := s.Entry(id)
	if e.Status == Pending {
		drafts, claimed := DecideClaim(s, "r1", Target{Branch: "main"}, pol, at)
		if claimed == nil || claimed.ID != id {
			t.Fatalf("claim got %v, want entry %d", claimed, id)
		}
		fold(t, s, at, "train", drafts)
	}
	for _, to := range path {
		drafts, err := DecideStep(s, Step{EntryID: id, Runner: "r1", From: s.Entry(id).Status, To: to, HeadSHA: s.Entry(id).HeadSHA, TestedSHA: sha(999), TestedAgainstSHA: sha(998)}, pol, at)
		if err != nil {
			t.Fatalf("step to %s: %v", to, err)
		}
		fold(t, s, at, "train", drafts)
	}
}
