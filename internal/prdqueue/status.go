// Package prdqueue is the PRD queue's domain: feature runs and
// their PRD items, the approval gates read from each PRD's front matter,
// the promotion rule, idempotent enqueueing and the per-feature manifests
// under docs/prd/_queue, which are projections people read there (git ignores them). Reading PRD files
// and creating epics happen at the edge (internal/prdqueue/service); nothing
// here does I/O.
package prdqueue

// Status is where a PRD item is in its lifecycle, from pending through the
// two approvals to queued (or queue_failed once its retry failed too).
type Status string

const (
	Pending               Status = "pending"
	InDiscovery           Status = "in_discovery"
	AwaitingPRDApproval   Status = "awaiting_prd_approval"
	AwaitingBeadsApproval Status = "awaiting_beads_approval"
	Approved              Status = "approved"
	Queued                Status = "queued"
	QueueFailed           Status = "queue_failed"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{Pending, InDiscovery, AwaitingPRDApproval, AwaitingBeadsApproval, Approved, Queued, QueueFailed}

// transitions is the state machine: every change of state, by a command,
// by sync or by promotion, is checked against it (docs/prd-queue.md).
// Sync moves a submitted item to the state its gates give (see target);
// promotion moves approved to queued or, after its retry, queue_failed;
// prd retry moves queue_failed back to approved.
var transitions = map[Status][]Status{
	Pending:               {InDiscovery, AwaitingPRDApproval},
	InDiscovery:           {AwaitingPRDApproval},
	AwaitingPRDApproval:   {AwaitingBeadsApproval, Approved},
	AwaitingBeadsApproval: {AwaitingPRDApproval, Approved},
	Approved:              {AwaitingPRDApproval, AwaitingBeadsApproval, Queued, QueueFailed},
	Queued:                {AwaitingPRDApproval, AwaitingBeadsApproval},
	QueueFailed:           {AwaitingPRDApproval, AwaitingBeadsApproval, Approved},
}

// CanTransition reports whether the table allows from → to.
func CanTransition(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Valid reports whether s is one of the states.
func (s Status) Valid() bool {
	_, ok := transitions[s]
	return ok
}

// Submitted states are those sync keeps in step with the PRD's gates.
func (s Status) Submitted() bool {
	return s != Pending && s != InDiscovery && s.Valid()
}
