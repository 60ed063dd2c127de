// Package plans is the trust boundary between agents and the tracker: agents
// propose, spool executes, so an agent never runs bd or edits the PRD itself.
// A proposal (a plan's tasks, verify-phase feedback, PRD section updates) is
// parsed and validated whole here, then applied all or nothing, once (by its
// content hash), or held for a human when its HIL category asks for approval.
// The orchestrator's projection folds feedback.added and feedback.categorized
// from this package.
package plans

import (
	"encoding/json"
	"time"
)

// Event types. Subjects: "plan/<id>", "proposal/<id>", "feedback/<id>",
// "prd-file/<path>".
const (
	TypeCreated          = "plan.created"           // CreatedData: in the append that creates the plan's tasks
	TypeTasksAdded       = "plan.tasks_added"       // TasksAddedData: a verify-phase proposal's tasks
	TypeShipped          = "plan.shipped"           // ShippedData: gate closed; the intent before the planner runs
	TypeBuilt            = "plan.built"             // BuiltData: the outcome of the build's PRD step
	TypePRDUpdated       = "plan.prd_updated"       // PRDUpdatedData: prd.json written and committed
	TypeProposalHeld     = "plan.proposal_held"     // HeldData: waits for spool plan approve
	TypeProposalApproved = "plan.proposal_approved" // DecisionData: in the append that applies it
	TypeProposalRejected = "plan.proposal_rejected" // DecisionData

	// The orchestrator's projection folds these two as well: keep the names
	// and the JSON fields.
	TypeFeedbackAdded       = "feedback.added"       // FeedbackData
	TypeFeedbackCategorized = "feedback.categorized" // CategorizedData
)

// Subjects.
func PlanSubject(id string) string     { return "plan/" + id }
func ProposalSubject(id string) string { return "proposal/" + id }
func FeedbackSubject(id string) string { return "feedback/" + id }
func PRDSubject(path string) string    { return "prd-file/" + path }

// TaskRef maps a proposal's index to the task made for it.
type TaskRef struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
}

type CreatedData struct {
	Title    string    `json:"title"`
	Hash     string    `json:"hash"` // the proposal's content hash
	Epic     string    `json:"epic_id"`
	Gate     string    `json:"gate_id"`
	Tasks    []TaskRef `json:"tasks"`
	Proposal string    `json:"proposal_id,omitempty"` // approved from this held proposal
	Notify   []string  `json:"notify,omitempty"`      // HIL categories set to notify
}

type TasksAddedData struct {
	Hash       string   `json:"hash"`
	Category   string   `json:"category"`
	FeedbackID string   `json:"feedback_id,omitempty"`
	Tasks      []string `json:"task_ids"`
	Proposal   string   `json:"proposal_id,omitempty"`
	Notify     []string `json:"notify,omitempty"`
}

type ShippedData struct {
	ShippedAt time.Time `json:"shipped_at"`
	Rebuild   bool      `json:"rebuild,omitempty"`
}

// BuiltData is how the PRD step ended: updates applied (PRDHash), held for
// approval, skipped (why), or failed (Error).
type BuiltData struct {
	PRDHash string `json:"prd_hash,omitempty"`
	Held    string `json:"held_proposal_id,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

type PRDUpdatedData struct {
	Hash     string   `json:"hash"`
	File     string   `json:"file"`
	Sections []string `json:"sections"`
	Commit   string   `json:"commit"`
	PlanID   string   `json:"plan_id,omitempty"` // the build that proposed it
	Proposal string   `json:"proposal_id,omitempty"`
	Notify   []string `json:"notify,omitempty"`
}

// HeldData is a proposal waiting for a human: its body is the canonical
// JSON the approval applies.
type HeldData struct {
	Kind       string          `json:"kind"` // KindPlan, KindFeedback, KindPRD
	Categories []string        `json:"categories"`
	Hash       string          `json:"hash"`
	Title      string          `json:"title,omitempty"`
	PlanID     string          `json:"plan_id,omitempty"` // a build's PRD updates
	Body       json.RawMessage `json:"proposal"`
}

type DecisionData struct {
	Reason string `json:"reason,omitempty"`
}

type FeedbackData struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

type CategorizedData struct {
	ID       string `json:"id"`
	Category string `json:"category"`
	PlanID   string `json:"plan_id"`
}

// Proposal kinds.
const (
	KindPlan     = "plan"
	KindFeedback = "feedback"
	KindPRD      = "prd"
)
