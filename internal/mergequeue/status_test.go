package mergequeue

import "testing"

func TestTransitionTable(t *testing.T) {
	want := map[Status][]Status{
		Pending:         {Claimed, Cancelled},
		Claimed:         {Pending, Rebasing, FailedRetryable, FailedTerminal, Cancelled},
		Rebasing:        {Testing, FailedRetryable, FailedTerminal, Cancelled},
		Testing:         {ReadyToMerge, FailedRetryable, FailedTerminal, Cancelled},
		ReadyToMerge:    {Merging, Rebasing, Pending, FailedRetryable, FailedTerminal, Cancelled},
		Merging:         {Merged, Rebasing, Pending, FailedRetryable, FailedTerminal},
		FailedRetryable: {Pending, Cancelled},
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			allowed := false
			for _, w := range want[from] {
				allowed = allowed || w == to
			}
			if got := CanTransition(from, to); got != allowed {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, allowed)
			}
		}
	}
}

// Terminal entries cannot transition, except reset to pending.
func TestTerminalStates(t *testing.T) {
	for _, s := range Statuses {
		if s.Terminal() != (s == Merged || s == FailedTerminal || s == Cancelled) {
			t.Errorf("%s.Terminal() = %v", s, s.Terminal())
		}
		if s.Terminal() {
			for _, to := range Statuses {
				if CanTransition(s, to) {
					t.Errorf("terminal %s may go to %s", s, to)
				}
			}
			if !CanResubmit(s) {
				t.Errorf("terminal %s cannot be resubmitted", s)
			}
		} else if CanResubmit(s) {
			t.Errorf("active %s can be resubmitted", s)
		}
	}
	if Status("bogus").Valid() || Status("bogus").Active() {
		t.Error("bogus status is valid")
	}
}

func TestWorkspaceStateOf(t *testing.T) {
	for _, s := range Statuses {
		if !validWorkspaceState(WorkspaceStateOf(s)) {
			t.Errorf("%s maps to invalid %q", s, WorkspaceStateOf(s))
		}
	}
	if WorkspaceStateOf(Pending) != WorkspaceCreated {
		t.Error("pending must be created: a new entry's workspace state")
	}
}

// Valid is a switch for speed; it must accept exactly the table's statuses.
func TestStatusesMatchTable(t *testing.T) {
	if len(Statuses) != len(transitions) {
		t.Fatalf("%d statuses, %d in the table", len(Statuses), len(transitions))
	}
	for s := range transitions {
		if !s.Valid() {
			t.Errorf("%s is in the table but not Valid", s)
		}
	}
	for _, s := range []Status{"", "Pending", "merged ", "unknown"} {
		if s.Valid() {
			t.Errorf("%q is Valid", s)
		}
	}
}
