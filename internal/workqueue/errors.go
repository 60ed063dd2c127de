package workqueue

import "github.com/spoolhq/spool/internal/fault"

// Error codes of the work queue (fault.CodeNotFound and the other shared
// codes are in fault).
var (
	CodeEmptyTitle       = fault.Register(fault.Usage, "empty_title")
	CodeEmptyComment     = fault.Register(fault.Usage, "empty_comment")
	CodeEmptyError       = fault.Register(fault.Usage, "empty_error")
	CodeEmptyReason      = fault.Register(fault.Usage, "empty_reason")
	CodeInvalidLabel     = fault.Register(fault.Usage, "invalid_label")
	CodeInvalidStatus    = fault.Register(fault.Usage, "invalid_status")
	CodeInvalidType      = fault.Register(fault.Usage, "invalid_type")
	CodeNothingToUpdate  = fault.Register(fault.Usage, "nothing_to_update")
	CodeDependencyCycle  = fault.Register(fault.Rejected, "dependency_cycle")
	CodeDependencyExists = fault.Register(fault.Rejected, "dependency_exists")
	CodeNotClaimed       = fault.Register(fault.Rejected, "not_claimed")
	CodeAlreadyClaimed   = fault.Register(fault.Rejected, "already_claimed")
)
