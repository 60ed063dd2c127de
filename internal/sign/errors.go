package sign

import "github.com/spoolhq/spool/internal/fault"

// Error codes of signing and of verify --signatures. The per-event and
// per-commit codes name each problem verify reports; the command fails with
// signatures_invalid.
var (
	CodeSigningKeyUnusable    = fault.Register(fault.Environment, "signing_key_unusable")
	CodeNoSigningKey          = fault.Register(fault.Environment, "no_signing_key")
	CodeAllowedSignersInvalid = fault.Register(fault.Environment, "allowed_signers_invalid")
	CodeHistoryIncomplete     = fault.Register(fault.Environment, "history_incomplete")
	CodeSignerNotAllowed      = fault.Register(fault.Rejected, "signer_not_allowed")
	CodeUnsignedEvent         = fault.Register(fault.Rejected, "unsigned_event")
	CodeBadSignature          = fault.Register(fault.Rejected, "bad_signature")
	CodeUnsignedTrustChange   = fault.Register(fault.Rejected, "unsigned_trust_change")
	CodeSignaturesInvalid     = fault.Register(fault.Rejected, "signatures_invalid")
)
