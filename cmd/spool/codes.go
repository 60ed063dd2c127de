package main

import "github.com/spoolhq/spool/internal/fault"

// Error codes the commands produce themselves; the rest are declared where
// they arise (internal/fault, eventlog, internal/git, the domains).
var (
	CodeDemoDirNotEmpty   = fault.Register(fault.Usage, "demo_dir_not_empty")
	CodeInvalidData       = fault.Register(fault.Usage, "invalid_data")
	CodeInvalidDirectory  = fault.Register(fault.Usage, "invalid_directory")
	CodeInvalidEventType  = fault.Register(fault.Usage, "invalid_event_type")
	CodeInvalidFlag       = fault.Register(fault.Usage, "invalid_flag")
	CodeInvalidSpoolNow   = fault.Register(fault.Usage, "invalid_spool_now")
	CodeReservedEventType = fault.Register(fault.Usage, "reserved_event_type")
	CodeNotMerged         = fault.Register(fault.Rejected, "not_merged")
	CodeVerifyFailed      = fault.Register(fault.Rejected, "verify_failed")
	CodeDoctorFailed      = fault.Register(fault.Environment, "doctor_failed")
	CodeMergeFailed       = fault.Register(fault.Unexpected, "merge_failed")
)
