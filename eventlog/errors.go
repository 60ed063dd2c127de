package eventlog

import (
	"errors"
	"fmt"

	"github.com/spoolhq/spool/internal/fault"
)

// Each sentinel carries its error code (fault.Classify finds it).
var (
	// ErrCorrupt is a log line that cannot be read, or a file that breaks the log's rules.
	ErrCorrupt = fault.Sentinel(fault.Register(fault.Environment, "corrupt_log"), errors.New("corrupt event log"))
	// ErrNewerVersion is an envelope written by a newer spool.
	ErrNewerVersion = fault.Sentinel(fault.Register(fault.Environment, "newer_version"), errors.New("event from a newer spool"))
	// ErrLockTimeout is a lock held by another process past the timeout.
	ErrLockTimeout = fault.Sentinel(fault.Register(fault.Environment, "lock_timeout"), errors.New("event log is locked by another process"))
	// ErrVersionMismatch is an append whose expected version is not the log's.
	ErrVersionMismatch = fault.Sentinel(fault.Register(fault.Rejected, "version_conflict"), errors.New("event log changed since it was read"))
	// ErrForked is two copies of one writer's chained file that each have
	// events the other lacks: a rewritten history, or one clone's files
	// written on two machines. It is a corrupt log to whoever meets it.
	ErrForked = fmt.Errorf("%w: writer file forked", ErrCorrupt)
	// ErrInvalidDraft is a draft the log refuses to append.
	ErrInvalidDraft = fault.Sentinel(fault.Register(fault.Usage, "invalid_event"), errors.New("invalid event"))
)

// LineError places an error at a line of a writer file.
type LineError struct {
	Path string
	Line int
	Err  error
	Hint string // how to repair it, when there is a way
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

// FaultFields places the error for --json: file, line and how to repair it.
func (e *LineError) FaultFields() map[string]any {
	f := map[string]any{"file": e.Path, "line": e.Line}
	if e.Hint != "" {
		f["repair"] = e.Hint
	}
	return f
}
func (e *LineError) Unwrap() error { return e.Err }

// VersionError is returned when the expected version does not match.
type VersionError struct {
	Expected, Actual string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%v: expected version %q, log is at %q", ErrVersionMismatch, e.Expected, e.Actual)
}
func (e *VersionError) Unwrap() error { return ErrVersionMismatch }
