package prdqueue

// Event types. A feature's events have subject "feature/<feature-slug>";
// a PRD's, "prd/<prd-slug>" (the item's feature is in the data).
const (
	TypeFeatureStarted      = "prd.feature_started"      // FeatureData
	TypeAdded               = "prd.added"                // AddedData
	TypeRemoved             = "prd.removed"              // ItemData: the item leaves its feature's manifest
	TypeTransitioned        = "prd.transitioned"         // TransitionData: discover, submit, sync, retry
	TypeRead                = "prd.read"                 // ReadData: what the PRD file says, when it changed
	TypeUnreadable          = "prd.unreadable"           // UnreadableData: the file is gone or cannot be read as a PRD
	TypeApproved            = "prd.approved"             // ApprovalData: the PRD gate approved for this content
	TypeApprovalInvalidated = "prd.approval_invalidated" // ApprovalData: the PRD changed after its approval
	TypeEnqueueStarted      = "prd.enqueue_started"      // EnqueueData: intent, before the work source is asked
	TypeEnqueued            = "prd.enqueued"             // EnqueueData: the epic, the outcome
	TypeEnqueueFailed       = "prd.enqueue_failed"       // EnqueueData with Error; Final ends in queue_failed
	TypeChecked             = "prd.checked"              // CheckData: the queue-ready checks
)

// Subjects.
func FeatureSubject(slug string) string { return "feature/" + slug }
func PRDSubject(slug string) string     { return "prd/" + slug }

// Modes of a feature run (the manifest's mode field).
const (
	ModeConflictAware = "conflict-aware"
	ModeSequential    = "sequential"
)

// DefaultWorkerCap is the number of enqueue workers a feature run has
// unless it says otherwise (enqueueing is concurrent but bounded);
// MaxWorkerCap the most a feature run may have.
const (
	DefaultWorkerCap = 2
	MaxWorkerCap     = 64
)

type FeatureData struct {
	FeatureSlug string `json:"feature_slug"`
	Mode        string `json:"mode"`
	WorkerCap   int    `json:"worker_cap"`
}

type AddedData struct {
	FeatureSlug string `json:"feature_slug"`
	PRDPath     string `json:"prd_path"`
}

type ItemData struct {
	FeatureSlug string `json:"feature_slug"`
}

type TransitionData struct {
	FeatureSlug string `json:"feature_slug"`
	From        Status `json:"from"`
	To          Status `json:"to"`
}

// ReadData is what spool read from the PRD file: the gates exactly as
// written, the open questions, and the hash of the content without the
// gates' values.
type ReadData struct {
	PRDGate       string   `json:"prd_approval"`
	BeadsGate     string   `json:"beads_approval"`
	OpenQuestions []string `json:"open_questions,omitempty"`
	ContentHash   string   `json:"content_hash"`
}

// UnreadableData says why a submitted PRD's file could not be read: Reason
// is prd_file_missing, prd_file_outside or invalid_front_matter, Error the
// message. What the file said before is kept, and not acted on, until a
// prd.read.
type UnreadableData struct {
	Reason string `json:"reason"`
	Error  string `json:"error"`
}

type ApprovalData struct {
	ApprovalVersion int    `json:"approval_version"`
	ContentHash     string `json:"content_hash"`
}

type EnqueueData struct {
	FeatureSlug    string `json:"feature_slug"`
	IdempotencyKey string `json:"idempotency_key"`
	Attempt        int    `json:"attempt,omitempty"`
	EpicID         string `json:"epic_id,omitempty"`
	Error          string `json:"error,omitempty"`
	Final          bool   `json:"final,omitempty"`
}

type CheckData struct {
	FeatureSlug string `json:"feature_slug"`
	Selectable  bool   `json:"selectable"`
	DoctorPass  bool   `json:"doctor_pass"`
}

// GateApproved is the one value that passes a gate.
const GateApproved = "approved"

// BlockedOpenQuestions is the blocked_reason of an approved PRD whose Open
// Questions are not empty (open questions keep it from being queued);
// BlockedApprovalInvalidated says why an edited PRD waits for approval again.
const (
	BlockedOpenQuestions       = "open_questions"
	BlockedApprovalInvalidated = "approval_invalidated"
)
