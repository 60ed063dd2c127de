package workqueue

import (
	"fmt"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table"
)

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
	CodeTaskExists       = fault.Register(fault.Rejected, "task_exists")
	CodeCorruptSnapshot  = table.CodeCorruptSnapshot
)

// ErrNoTask is wrapped by the not_found error of an id that names no task,
// ErrNoDependency by that of a dependency that does not exist: both are
// fault.ErrNotFound, and the bd front end words them as bd does.
var (
	ErrNoTask       = fmt.Errorf("task %w", fault.ErrNotFound)
	ErrNoDependency = fmt.Errorf("dependency %w", fault.ErrNotFound)
)

// TaskExists is the error for a new task's id that names one already.
func TaskExists(id string) error {
	return fault.New(CodeTaskExists, nil, fmt.Sprintf("task %s exists already", id), "id", id)
}

// NoTask is the error for an id that names no task.
func NoTask(id string) error {
	return fault.New(fault.CodeNotFound, ErrNoTask, fmt.Sprintf("task %s not found", id), "id", id)
}
