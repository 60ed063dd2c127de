package prdqueue

import (
	"fmt"

	"github.com/spoolhq/spool/internal/fault"
)

// Error codes of the PRD queue (not_found and invalid_state_transition are
// fault's).
var (
	CodeInvalidSlug             = fault.Register(fault.Usage, "invalid_slug")
	CodeInvalidPath             = fault.Register(fault.Usage, "invalid_path")
	CodeInvalidMode             = fault.Register(fault.Usage, "invalid_mode")
	CodePRDFileMissing          = fault.Register(fault.Rejected, "prd_file_missing")
	CodePRDFileOutside          = fault.Register(fault.Rejected, "prd_file_outside")
	CodeInvalidFrontMatter      = fault.Register(fault.Rejected, "invalid_front_matter")
	CodeDuplicateIdempotencyKey = fault.Register(fault.Rejected, "duplicate_idempotency_key")
	CodeDuplicateActiveEntry    = fault.Register(fault.Rejected, "duplicate_active_entry")
	CodeFeatureExists           = fault.Register(fault.Rejected, "feature_exists")
	CodePathConflict            = fault.Register(fault.Rejected, "path_conflict")
)

func invalidTransition(prd string, from, to Status) error {
	return fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
		fmt.Sprintf("PRD %s is %s; it cannot become %s", prd, from, to),
		"prd_slug", prd, "current_state", string(from), "target_state", string(to))
}
