package workqueue

// HistStatus is where a task stands in the queue's history (Entry.Status).
type HistStatus string

// Queue (history) statuses. Untyped, as the names of the statuses in
// what the queue writes (EntryJSON, QueueStatus) are strings.
const (
	HistPending   = "pending"
	HistWorking   = "working"
	HistCompleted = "completed"
	HistFailed    = "failed"
	HistAbandoned = "abandoned"
	HistBlocked   = "blocked"
)

// HistStatuses lists every history status.
var HistStatuses = []HistStatus{HistPending, HistWorking, HistCompleted, HistFailed, HistAbandoned, HistBlocked}

// histMove is what an event does to an entry's status: it moves an entry
// in one of from (any status when from is nil) to to, and leaves an entry
// in another status where it is.
type histMove struct {
	from []HistStatus
	to   HistStatus
}

// histMoves is the history's state machine, by the event that moves an
// entry: every change of an entry's status the fold makes is a row of it
// (Entry.move), and TestFoldFollowsHistMoves holds the fold to it. Most
// events move an entry from any status: the log is the truth, and a log
// merged from several clones can carry an event decided on a status its
// entry has left since (a claim in one clone and a done in another: the
// later one stands). Those that end a claim as a side effect (a close, a
// release, an import) move only a working entry; a reopen only a completed
// one; an import that unblocks moves a blocked one back to pending. What
// the commands decide is narrower: done, fail, heartbeat and release need
// a live claim (held), retry a status of retriedFrom, a rejection what a
// reopen moves.
var histMoves = map[string]histMove{
	TypeClaimed:      {nil, HistWorking},
	TypeHeartbeat:    {[]HistStatus{HistWorking}, HistWorking},
	TypeSucceeded:    {nil, HistCompleted},
	TypeFailed:       {nil, HistFailed},
	TypeLeaseExpired: {nil, HistFailed},
	TypeAbandoned:    {nil, HistAbandoned},
	TypeBlocked:      {nil, HistBlocked},
	TypeUnblocked:    {nil, HistPending},
	TypeRetried:      {nil, HistPending},
	TypeReleased:     {[]HistStatus{HistWorking}, HistPending},
	TypeClosed:       {[]HistStatus{HistWorking}, HistPending},
	TypeReopened:     {[]HistStatus{HistCompleted}, HistPending},
	TypeImported:     {[]HistStatus{HistWorking, HistBlocked}, HistPending},
}

// retriedFrom are the statuses retry takes a task from (Retry; an entry
// Blocked by its flag counts as blocked).
var retriedFrom = []HistStatus{HistAbandoned, HistBlocked, HistFailed}

// after is the status event typ leaves an entry in status s in, and
// whether typ moves it (false: s stays, or typ moves no entry).
func (s HistStatus) after(typ string) (HistStatus, bool) {
	m, ok := histMoves[typ]
	if !ok {
		return s, false
	}
	if m.from == nil {
		return m.to, true
	}
	for _, f := range m.from {
		if f == s {
			return m.to, true
		}
	}
	return s, false
}

// Valid reports whether s is one of the statuses.
func (s HistStatus) Valid() bool {
	switch s {
	case HistPending, HistWorking, HistCompleted, HistFailed, HistAbandoned, HistBlocked:
		return true
	}
	return false
}

// move moves h as event typ does (histMoves) and reports whether it did.
func (h *Entry) move(typ string) bool {
	to, ok := h.Status.after(typ)
	if ok {
		h.Status = to
	}
	return ok
}
