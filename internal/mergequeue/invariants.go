package mergequeue

import (
	"fmt"
	"strings"
)

// Invariants is CheckInvariants, for spool verify (projections.Checker).
func (s *State) Invariants() []string { return CheckInvariants(s) }

// CheckInvariants returns every violated invariant of the merge queue that
// the projection can show, one line each; spool verify reports them. Each
// line starts with the invariant's id (INV-QUEUE-001 and so on), which
// users and scripts may match on: the ids stay as they are, and the
// comment on each check says the rule.
func CheckInvariants(s *State) []string {
	var bad []string
	fail := func(id, format string, args ...any) { bad = append(bad, id+": "+fmt.Sprintf(format, args...)) }
	activeKey := map[string]int64{}
	activeWS := map[string]int64{}
	positions := map[int]int64{}
	pending := 0
	lastN := 0
	for i, e := range s.All() {
		// Entry ids are 1..N in the order entries were created.
		if e.ID != int64(i)+1 {
			fail("INV-ID", "entry at index %d has id %d", i, e.ID)
		}
		// An entry's status is one of Statuses.
		if !e.Status.Valid() {
			fail("INV-STATE-001", "entry %d has status %q", e.ID, e.Status)
		}
		// Its workspace state is a known one, the one its status implies.
		if !validWorkspaceState(e.WorkspaceState) || e.WorkspaceState != WorkspaceStateOf(e.Status) {
			fail("INV-STATE-002", "entry %d has workspace_state %q for status %s", e.ID, e.WorkspaceState, e.Status)
		}
		if e.Status.Active() {
			// No two active entries share a dedupe key.
			if other, ok := activeKey[e.DedupeKey]; ok {
				fail("INV-QUEUE-001", "entries %d and %d are both active with dedupe key %s", other, e.ID, e.DedupeKey)
			}
			activeKey[e.DedupeKey] = e.ID
			// A workspace has at most one active entry.
			if other, ok := activeWS[e.WorkspaceID]; ok {
				fail("INV-QUEUE-002", "entries %d and %d are both active in workspace %s (%s)", other, e.ID, e.Workspace, e.WorkspaceID)
			}
			activeWS[e.WorkspaceID] = e.ID
		}
		if e.Status == Pending {
			pending++
			// A pending entry has a position, no other pending entry's.
			if e.Position <= 0 {
				fail("INV-STATE-004", "pending entry %d has no position", e.ID)
			} else if other, ok := positions[e.Position]; ok {
				fail("INV-QUEUE-003", "entries %d and %d share position %d", other, e.ID, e.Position)
			} else {
				positions[e.Position] = e.ID
			}
		} else if e.Position != 0 { // an entry not pending has no position
			fail("INV-STATE-005", "%s entry %d has position %d", e.Status, e.ID, e.Position)
		}
		if e.Waiting != "" && e.Status != Pending {
			fail("INV-WAIT", "%s entry %d is waiting (%s); only pending entries wait", e.Status, e.ID, e.Waiting)
		}
		// Identity: a full commit id, a change id (stable across rebase and
		// amend), a dedupe key workspace:change_id, a branch.
		if !ValidHeadSHA(e.HeadSHA) {
			fail("INV-ID-001", "entry %d has head_sha %q", e.ID, e.HeadSHA)
		}
		if e.ChangeID == "" {
			fail("INV-ID-002", "entry %d has no change id", e.ID)
		}
		if ValidateDedupeKey(e.DedupeKey) != nil || !strings.HasSuffix(e.DedupeKey, ":"+e.ChangeID) {
			fail("INV-ID-003", "entry %d has dedupe key %q for change %q", e.ID, e.DedupeKey, e.ChangeID)
		}
		if e.Branch == "" {
			fail("INV-ID-004", "entry %d has no branch", e.ID)
		}
		// Every status change has an audit step, so the last step says the
		// status.
		if e.Steps == 0 || e.LastStep.To != e.Status {
			fail("INV-AUDIT-001", "entry %d is %s but its last audit step says %q", e.ID, e.Status, e.LastStep.To)
		}
		// Audit times never go backwards.
		if e.LastStep.At.Before(e.AddedAt) || e.UpdatedAt != e.LastStep.At {
			fail("INV-AUDIT-004", "entry %d: last step at %s, added %s, updated %s", e.ID, e.LastStep.At, e.AddedAt, e.UpdatedAt)
		}
		lastN = max(lastN, e.LastStep.N)
	}
	// Positions of N pending entries are 1..N, without a gap, and the count
	// of pending entries reported is the true one.
	for p := 1; p <= pending; p++ {
		if _, ok := positions[p]; !ok {
			fail("INV-QUEUE-004", "positions of %d pending entries have a gap at %d", pending, p)
			break
		}
	}
	if pending != s.PendingCount {
		fail("POST-POS-004", "pending_count is %d, %d entries are pending", s.PendingCount, pending)
	}
	// The queue is in priority order (lower number first).
	q := s.Queue()
	for i := 1; i < len(q); i++ {
		if q[i].Priority < q[i-1].Priority || q[i].Position < q[i-1].Position {
			fail("INV-QUEUE-005", "entry %d (priority %d) is behind entry %d (priority %d)", q[i].ID, q[i].Priority, q[i-1].ID, q[i-1].Priority)
		}
	}
	// Audit steps are numbered in the order of the events applied, so none
	// is beyond them.
	if lastN > s.Applied {
		fail("INV-AUDIT-002", "audit step %d is beyond the %d events applied", lastN, s.Applied)
	}
	return bad
}

func validWorkspaceState(w WorkspaceState) bool {
	for _, v := range WorkspaceStates {
		if v == w {
			return true
		}
	}
	return false
}
