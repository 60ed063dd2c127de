package workqueue

import (
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// TestFoldFollowsHistMoves folds each event of the table into an entry in
// each status and finds the status the table gives: it moves the entries
// it moves, to its row's status, and leaves the others where they were.
func TestFoldFollowsHistMoves(t *testing.T) {
	lease := t0.Add(time.Hour)
	data := map[string]any{
		TypeClaimed:      ClaimedData{Attempt: 2, Worker: "w", LeaseUntil: lease},
		TypeHeartbeat:    HeartbeatData{LeaseUntil: lease.Add(time.Hour)},
		TypeSucceeded:    AttemptData{Attempt: 1},
		TypeFailed:       FailedData{Attempt: 1, Error: "boom"},
		TypeLeaseExpired: LeaseExpiredData{Attempt: 1, Worker: "w", LeaseUntil: lease},
		TypeAbandoned:    AbandonedData{TaskID: "sp-a", Attempts: 5},
		TypeBlocked:      BlockedData{TaskID: "sp-a", Reason: "by hand"},
		TypeUnblocked:    UnblockedData{},
		TypeRetried:      RetriedData{PreviousStatus: HistFailed},
		TypeReleased:     AttemptData{Attempt: 1},
		TypeClosed:       ClosedData{Reason: "done"},
		TypeReopened:     struct{}{},
		TypeImported:     ImportedData{Title: "t", Status: StatusOpen, CreatedAt: t0, UpdatedAt: t0}, // not blocked: it unblocks
	}
	if len(data) != len(histMoves) {
		t.Fatalf("%d events in the table, %d tested", len(histMoves), len(data))
	}
	for typ, m := range histMoves {
		if !m.to.Valid() {
			t.Errorf("%s moves to %q, not a status", typ, m.to)
		}
		for _, f := range m.from {
			if !f.Valid() {
				t.Errorf("%s moves from %q, not a status", typ, f)
			}
		}
		for _, from := range HistStatuses {
			s := NewState()
			s.History["sp-a"] = &Entry{ID: "sp-a", Status: from, Blocked: from == HistBlocked, Worker: "w", Actor: "w", LeaseUntil: lease}
			e, err := eventlog.Draft{Type: typ, Subject: "sp-a", Data: data[typ]}.Event("alice", t0)
			if err != nil {
				t.Fatal(err)
			}
			s.applyEntry(e)
			want, _ := from.after(typ)
			if got := s.History["sp-a"].Status; got != want {
				t.Errorf("%s on a %s entry: %s, the table says %s", typ, from, got, want)
			}
		}
	}
	if _, ok := HistStatus(HistFailed).after(TypeCommented); ok {
		t.Error("an event that is not in the table moves an entry")
	}
}
