package workqueue

import (
	"fmt"

	"github.com/spoolhq/spool/internal/fault"
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
	CodeCorruptSnapshot  = fault.Register(fault.Environment, "corrupt_snapshot")
)

// corruptSnapshot is the panic of a snapshot record that fails its
// checksum when read: the table's index checked out when it was opened, so
// the file changed under spool (it is only ever replaced) or the disk
// failed. A panic, because the lookups that meet it return no error; the
// command reports it as this error.
func corruptSnapshot(id string, err error) *fault.Error {
	return fault.New(CodeCorruptSnapshot, err, fmt.Sprintf("the snapshot's record of %s is damaged (%v): run spool replay", id, err), "id", id)
}

// ErrNoTask is wrapped by the not_found error of an id that names no task,
// ErrNoDependency by that of a dependency that does not exist: both are
// fault.ErrNotFound, and the bd front end words them as bd does.
var (
	ErrNoTask       = fmt.Errorf("task %w", fault.ErrNotFound)
	ErrNoDependency = fmt.Errorf("dependency %w", fault.ErrNotFound)
)

// NoTask is the error for an id that names no task.
func NoTask(id string) error {
	return fault.New(fault.CodeNotFound, ErrNoTask, fmt.Sprintf("task %s not found", id), "id", id)
}
