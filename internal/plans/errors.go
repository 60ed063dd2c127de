package plans

import (
	"fmt"

	"github.com/spoolhq/spool/internal/fault"
)

// Error codes of plans and proposals (not_found and
// invalid_state_transition are fault's).
var (
	CodeInvalidProposal   = fault.Register(fault.Rejected, "invalid_proposal")
	CodeInvalidPRDFile    = fault.Register(fault.Rejected, "invalid_prd_file")
	CodePlannerFailed     = fault.Register(fault.Environment, "planner_failed")
	CodeSourceUnsupported = fault.Register(fault.Environment, "plan_source_unsupported")
	CodeEmptyFeedback     = fault.Register(fault.Usage, "empty_feedback")
)

// Invalid is a proposal refused whole; path is the offending JSON path
// ("tasks[3].depends_on[0]", "$" for the document).
func Invalid(path, msg string) error {
	return fault.New(CodeInvalidProposal, nil, fmt.Sprintf("invalid proposal: %s: %s", path, msg), "path", path)
}

// SourceUnsupported refuses plan apply, feedback and build with a bd/br
// work source (docs/orchestrator.md: Plans and proposals says why).
func SourceUnsupported(kind string) error {
	return fault.New(CodeSourceUnsupported, nil, fmt.Sprintf(
		"workqueue.source is %[1]s: a plan's epic, gate, tasks and dependencies are made in one append, all or nothing, in spool's own tracker; "+
			"%[1]s's beads would take one %[1]s create per task and one %[1]s dep add per dependency, which no append covers, and spool does not do that (docs/orchestrator.md: Plans and proposals)", kind),
		"source", kind)
}

func invalidTransition(what, id, msg string) error {
	return fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition, fmt.Sprintf("%s %s %s", what, id, msg), "id", id)
}
