package plans

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/config"
)

// HIL (human in the loop) modes, set per category of proposal: apply,
// apply and tell, or wait for spool plan approve.
const (
	Automated        = "automated"
	Notify           = "notify"
	RequiresApproval = "requires_approval"
)

// HIL categories. Test and agent failures are not one: they are never a
// human decision.
const (
	ScopeChanges            = "scope_changes"
	ArchitectureDecisions   = "architecture_decisions"
	DependencyModifications = "dependency_modifications"
)

// Categories are the HIL categories, in the order they are reported.
var Categories = []string{ScopeChanges, ArchitectureDecisions, DependencyModifications}

// Configuration keys (docs/configuration.md). The orchestrator's other keys
// (agent_command, watchdog_interval, …) are registered by its package.
func init() {
	config.Register(
		config.Key{Name: "orchestrator.planner_command", Kind: config.Strings, Default: []string{},
			Help: "the planning agent's argv (never a shell string): plan build runs it for PRD update proposals; empty: no PRD step"},
		config.Key{Name: "orchestrator.planner_timeout", Kind: config.Duration, Default: 10 * time.Minute, Min: config.Min(1),
			Help: "how long plan build waits for the planner before ending it"},
		config.Key{Name: "orchestrator.prd_file", Kind: config.String, Default: "prd.json", Check: checkPRDFile,
			Help: "the PRD file proposals update, relative to the work tree's root"},
		config.Key{Name: "orchestrator.max_proposal_tasks", Kind: config.Int, Default: 200, Min: config.Min(1),
			Help: "the most tasks one proposal may create"},
	)
	for _, c := range Categories {
		config.Register(config.Key{Name: "orchestrator.hil." + c, Kind: config.Enum, Default: Automated,
			Enum: []string{Automated, Notify, RequiresApproval},
			Help: "proposals in this category: automated, notify (apply and say so) or requires_approval (wait for spool plan approve)"})
	}
}

func checkPRDFile(v any) error {
	p := v.(string)
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == ".." {
		return fmt.Errorf("%q must be a clean path inside the work tree, such as prd.json or docs/prd.json", p)
	}
	return nil
}

// Settings are the planner's keys, read once when a command opens plans:
// code reads these fields, never a key by name.
type Settings struct {
	HIL            HIL
	PlannerCommand []string      // orchestrator.planner_command: argv; empty, no PRD step
	PlannerTimeout time.Duration // orchestrator.planner_timeout
	PRDFile        string        // orchestrator.prd_file: slash-separated, relative to the work tree
	MaxTasks       int           // orchestrator.max_proposal_tasks
}

// SettingsFrom reads the planner's keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{
		HIL:            HILFrom(cfg),
		PlannerCommand: cfg.Strings("orchestrator.planner_command"),
		PlannerTimeout: cfg.Duration("orchestrator.planner_timeout"),
		PRDFile:        cfg.String("orchestrator.prd_file"),
		MaxTasks:       cfg.Int("orchestrator.max_proposal_tasks"),
	}
}

// HIL is each category's mode.
type HIL map[string]string

// HILFrom reads the orchestrator.hil.* keys.
func HILFrom(cfg *config.Config) HIL {
	h := HIL{}
	for _, c := range Categories {
		h[c] = cfg.String("orchestrator.hil." + c)
	}
	return h
}

// Mode is what a proposal in cats needs: requires_approval if any category
// asks for it, else notify (with the categories that notify), else automated.
func (h HIL) Mode(cats []string) (string, []string) {
	var notify []string
	for _, c := range cats {
		switch h[c] {
		case RequiresApproval:
			return RequiresApproval, nil
		case Notify:
			notify = append(notify, c)
		}
	}
	if len(notify) > 0 {
		return Notify, notify
	}
	return Automated, nil
}

// PlanCategories: a plan's tasks change the scope.
func PlanCategories(PlanProposal) []string { return []string{ScopeChanges} }

// FeedbackCategories: new tasks change the scope; a category that speaks of
// architecture is an architecture decision; dependencies on existing tasks
// modify dependencies.
func FeedbackCategories(p FeedbackProposal) []string {
	var cats []string
	if len(p.Tasks) > 0 {
		cats = append(cats, ScopeChanges)
	}
	if architectural(p.Category) {
		cats = append(cats, ArchitectureDecisions)
	}
	for _, t := range p.Tasks {
		if len(t.Dependencies) > 0 {
			return append(cats, DependencyModifications)
		}
	}
	return cats
}

// PRDCategories: rewriting the PRD changes the scope; a section about
// architecture is an architecture decision.
func PRDCategories(p PRDProposal) []string {
	cats := []string{ScopeChanges}
	for _, u := range p.Updates {
		if architectural(u.Section) {
			return append(cats, ArchitectureDecisions)
		}
	}
	return cats
}

func architectural(s string) bool { return strings.Contains(strings.ToLower(s), "architect") }
