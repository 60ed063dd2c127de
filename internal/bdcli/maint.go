package bdcli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// bd's inspection and maintenance commands that beads' MCP server runs
// (info --schema, migrate --inspect, repair-deps, detect-pollution,
// validate), over spool's tracker, with the JSON keys the MCP server and
// bd (0.49.1, or the bd before 0.35 for repair-deps and validate, which
// 0.49.1 folded into bd doctor) print. What spool cannot do (delete an
// issue, migrate a database) is refused by name.

// bdTrackerInfo is what info and migrate --inspect report: where the
// tracker is, its prefix, how many issues, a few ids.
type bdTrackerInfo struct {
	events, prefix string
	count          int
	samples        []string
}

func bdInfoOf(b *bdEnv) (bdTrackerInfo, error) {
	q, err := b.queue(false)
	if err != nil {
		return bdTrackerInfo{}, err
	}
	st, err := q.Read(b.ctx, wqservice.Tracker)
	if err != nil {
		return bdTrackerInfo{}, err
	}
	ids := st.TaskIDs() // not every task decoded: 0.49 s and 235 MiB at 100,000
	return bdTrackerInfo{events: store.EventsDir(q.Store.Repo), prefix: workqueue.PrefixFrom(q.Store.Config),
		count: len(ids), samples: slices.Clone(ids[:min(3, len(ids))])}, nil
}

type bdInfoCmd struct {
	Schema bool `help:"Add the schema: spool's has no tables, only the issue prefix and sample ids."`
}

func (c *bdInfoCmd) Run(b *bdEnv) error {
	in, err := bdInfoOf(b)
	if err != nil {
		return err
	}
	config := map[string]string{"issue_prefix": in.prefix}
	info := map[string]any{"database_path": in.events, "mode": "direct", "daemon_connected": false,
		"backend": "spool", "issue_count": in.count, "config": config}
	detected := ""
	if len(in.samples) > 0 {
		if i := strings.LastIndex(in.samples[0], "-"); i > 0 {
			detected = in.samples[0][:i]
		}
	}
	if c.Schema {
		info["schema"] = map[string]any{"tables": []string{}, "schema_version": bdCompatible, "config": config,
			"sample_issue_ids": cliout.NonNil(in.samples), "detected_prefix": detected}
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, info)
	}
	w := b.stdout
	fmt.Fprintf(w, "\nBeads Database Information\n===========================\n")
	fmt.Fprintf(w, "Database: %s (spool's event log)\nMode: direct\n", in.events)
	fmt.Fprintf(w, "\nDaemon Status:\n  Connected: no\n")
	fmt.Fprintf(w, "\nIssue Count: %d\n", in.count)
	if c.Schema {
		fmt.Fprintf(w, "\nSchema Information:\n  Tables: [] (spool keeps events, not tables)\n  Schema Version: %s\n", bdCompatible)
		if detected != "" {
			fmt.Fprintf(w, "  Detected Prefix: %s\n", cliout.Text(detected))
		}
		if len(in.samples) > 0 {
			fmt.Fprintf(w, "  Sample Issues: [%s]\n", cliout.Text(strings.Join(in.samples, " ")))
		}
	}
	fmt.Fprintln(w)
	return nil
}

// bdMigrateCmd is bd migrate: --inspect reports that there is nothing to
// migrate; a migration is refused.
type bdMigrateCmd struct {
	Args    []string `arg:"" optional:"" hidden:""`
	Inspect bool     `help:"The migration plan: spool has no database schema, so none."`
	// bd's migrations, refused below.
	DryRun       bool `name:"dry-run" hidden:""`
	Yes          bool `hidden:""`
	Cleanup      bool `hidden:""`
	UpdateRepoID bool `name:"update-repo-id" hidden:""`
	ToDolt       bool `name:"to-dolt" hidden:""`
	ToSQLite     bool `name:"to-sqlite" hidden:""`
}

func (c *bdMigrateCmd) Run(b *bdEnv) error {
	if !c.Inspect || len(c.Args) > 0 || c.DryRun || c.Yes || c.Cleanup || c.UpdateRepoID || c.ToDolt || c.ToSQLite {
		return notSupported("bd migrate", bdRefusals["migrate"])
	}
	in, err := bdInfoOf(b)
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, map[string]any{
			"registered_migrations": []string{},
			"current_state": map[string]any{"schema_version": bdCompatible, "issue_count": in.count,
				"config": map[string]string{"issue_prefix": in.prefix}, "missing_config": []string{}, "db_exists": true},
			"warnings":            []string{},
			"invariants_to_check": []string{},
		})
	}
	fmt.Fprintf(b.stdout, "\nMigration Inspection\n====================\nSchema Version: %s\nIssue Count: %d\nRegistered Migrations: 0\n\nInvariants to Check: 0\n\n",
		bdCompatible, in.count)
	return nil
}

type bdRepairDepsCmd struct {
	Fix bool `help:"Remove them (one task.dep_removed each, in one append)."`
}

func (c *bdRepairDepsCmd) Run(b *bdEnv) error {
	q, err := b.queue(c.Fix)
	if err != nil {
		return err
	}
	var orphans []workqueue.DepJSON
	if c.Fix {
		orphans, err = q.RemoveOrphanDeps(b.ctx)
	} else {
		var st *workqueue.State
		if st, err = q.Read(b.ctx, wqservice.Tracker); err == nil {
			orphans = st.OrphanDeps()
		}
	}
	if err != nil {
		return err
	}
	if b.JSON {
		list := []map[string]string{}
		for _, o := range orphans {
			list = append(list, map[string]string{"issue_id": o.IssueID, "depends_on_id": o.DependsOnID, "type": o.Type})
		}
		out := map[string]any{"orphans_found": len(orphans), "orphans": list}
		if c.Fix {
			out["fixed"] = len(orphans)
		}
		return cliout.WriteJSON(b.stdout, out)
	}
	if len(orphans) == 0 {
		fmt.Fprintf(b.stdout, "\n✓ No orphaned dependencies found\n\n")
		return nil
	}
	fmt.Fprintf(b.stdout, "\n⚠ Found %d orphaned dependencies:\n\n", len(orphans))
	for i, o := range orphans {
		fmt.Fprintf(b.stdout, "%d. %s → %s (%s) [%s does not exist]\n", i+1, cliout.Text(o.IssueID), cliout.Text(o.DependsOnID), cliout.Text(o.Type), cliout.Text(o.DependsOnID))
	}
	fmt.Fprintln(b.stdout)
	if c.Fix {
		fmt.Fprintf(b.stdout, "✓ Fixed %d orphaned dependencies\n\n", len(orphans))
	} else {
		fmt.Fprintf(b.stdout, "Run with --fix to automatically remove orphaned dependencies\n\n")
	}
	return nil
}

type bdDetectPollutionCmd struct {
	Clean bool `help:"Refused: the log is append-only; close them instead."`
	Yes   bool `hidden:""`
}

func (c *bdDetectPollutionCmd) Run(b *bdEnv) error {
	if c.Clean {
		return notSupported("detect-pollution --clean", "it deletes issues, and spool's log is append-only; close them instead: bd close ID... --reason 'test data'")
	}
	_, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	polluted := st.Pollution()
	high := 0
	for _, p := range polluted {
		if p.Score >= 0.9 {
			high++
		}
	}
	if b.JSON {
		if len(polluted) == 0 {
			return cliout.WriteJSON(b.stdout, map[string]any{"polluted_count": 0, "issues": []any{}})
		}
		return cliout.WriteJSON(b.stdout, map[string]any{"polluted_count": len(polluted), "high_confidence": high,
			"medium_confidence": len(polluted) - high, "issues": polluted})
	}
	if len(polluted) == 0 {
		fmt.Fprintln(b.stdout, "No test pollution detected!")
		return nil
	}
	fmt.Fprintf(b.stdout, "Found %d potential test issues:\n\n", len(polluted))
	for _, band := range []struct {
		heading string
		in      func(float64) bool
	}{{"High Confidence (score ≥ 0.9)", func(s float64) bool { return s >= 0.9 }},
		{"Medium Confidence (score 0.7-0.9)", func(s float64) bool { return s < 0.9 }}} {
		n := 0
		for _, p := range polluted {
			if !band.in(p.Score) {
				continue
			}
			if n == 0 {
				fmt.Fprintf(b.stdout, "%s:\n", band.heading)
			}
			n++
			fmt.Fprintf(b.stdout, "  %s: %q (score: %.2f)\n", cliout.Text(p.ID), cliout.Text(p.Title), p.Score)
			for _, r := range p.Reasons {
				fmt.Fprintf(b.stdout, "    - %s\n", r)
			}
		}
		if n > 0 {
			fmt.Fprintf(b.stdout, "  (Total: %d issues)\n\n", n)
		}
	}
	fmt.Fprintln(b.stdout, "Close the ones that are test data: bd close ID... --reason 'test data' (spool deletes nothing).")
	return nil
}

// bdValidateCmd is bd validate as bd had it before 0.35 (what beads' MCP
// server still runs): the checks orphans, duplicates, pollution and
// conflicts; exit 1 when one finds something it did not fix.
type bdValidateCmd struct {
	Checks string `help:"Comma-separated: orphans, duplicates, pollution, conflicts (default all)."`
	FixAll bool   `name:"fix-all" help:"Fix what can be fixed: the orphaned dependencies."`
}

// bdCheck is one check's result, as bd validate --json has it.
type bdCheck struct {
	IssueCount  int      `json:"issue_count"`
	FixedCount  int      `json:"fixed_count"`
	Error       *string  `json:"error"`
	Failed      bool     `json:"failed"`
	Suggestions []string `json:"suggestions"`
}

func (c *bdValidateCmd) Run(b *bdEnv) error {
	checks, err := bdParseChecks(c.Checks)
	if err != nil {
		return err
	}
	fix := c.FixAll && slices.Contains(checks, "orphans")
	q, st, err := b.tracker(fix)
	if err != nil {
		return err
	}
	results := map[string]*bdCheck{}
	names := map[string]string{"orphans": "orphaned dependencies", "duplicates": "duplicates", "pollution": "test pollution", "conflicts": "git conflicts"}
	for _, name := range checks {
		r := &bdCheck{}
		switch name {
		case "orphans":
			r.IssueCount = len(st.OrphanDeps())
			if fix && r.IssueCount > 0 {
				removed, err := q.RemoveOrphanDeps(b.ctx)
				if err != nil {
					return err
				}
				r.FixedCount = len(removed)
			}
			if r.IssueCount > r.FixedCount {
				r.Suggestions = append(r.Suggestions, "Run 'bd repair-deps --fix' to remove orphaned dependencies")
			}
		case "duplicates":
			groups := st.Duplicates(q.Policy, q.Now)
			for _, g := range groups {
				r.IssueCount += len(g) - 1
				r.Suggestions = append(r.Suggestions, "Same content: "+strings.Join(g, ", ")+"; close the extra ones (bd close ID --reason 'duplicate of ID')")
			}
		case "pollution":
			r.IssueCount = len(st.Pollution())
			if r.IssueCount > 0 {
				r.Suggestions = append(r.Suggestions, fmt.Sprintf("Run 'bd detect-pollution' to review %d potential test issues", r.IssueCount))
			}
		case "conflicts":
			// spool's log has no conflict markers: its merge driver joins
			// both sides' events (spool hooks install), and spool verify
			// checks every line.
		}
		results[name] = r
	}
	total, fixed := 0, 0
	for _, r := range results {
		total, fixed = total+r.IssueCount, fixed+r.FixedCount
	}
	var failure error
	if total > fixed {
		failure = errBDStatus1
	}
	if b.JSON {
		if err := cliout.WriteJSON(b.stdout, map[string]any{"checks": results, "total_issues": total, "total_fixed": fixed,
			"healthy": total == fixed}); err != nil {
			return err
		}
		return failure
	}
	w := b.stdout
	fmt.Fprintf(w, "\nValidation Results:\n===================\n")
	for _, name := range checks {
		r := results[name]
		switch {
		case r.IssueCount > 0 && r.FixedCount > 0:
			fmt.Fprintf(w, "⚠ %s: %d found, %d fixed\n", names[name], r.IssueCount, r.FixedCount)
		case r.IssueCount > 0:
			fmt.Fprintf(w, "⚠ %s: %d found\n", names[name], r.IssueCount)
		default:
			fmt.Fprintf(w, "✓ %s: OK\n", names[name])
		}
	}
	fmt.Fprintln(w)
	switch {
	case total == 0:
		fmt.Fprintln(w, "✓ Database is healthy!")
	case total == fixed:
		fmt.Fprintf(w, "✓ Fixed all %d issues\n", fixed)
	default:
		fmt.Fprintf(w, "⚠ Found %d issues", total)
		if fixed > 0 {
			fmt.Fprintf(w, " (fixed %d, %d remaining)", fixed, total-fixed)
		}
		fmt.Fprintf(w, "\n\nRecommendations:\n")
		for _, name := range checks {
			for _, s := range results[name].Suggestions {
				fmt.Fprintf(w, "  - %s\n", cliout.Text(s))
			}
		}
	}
	return failure
}

// bdParseChecks reads validate's --checks as bd did: names and synonyms,
// each once, in the order given; none is all four.
func bdParseChecks(flag string) ([]string, error) {
	all := []string{"orphans", "duplicates", "pollution", "conflicts"}
	if strings.TrimSpace(flag) == "" {
		return all, nil
	}
	var out []string
	for _, part := range strings.Split(flag, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		if syn, ok := map[string]string{"dupes": "duplicates", "git-conflicts": "conflicts"}[name]; ok {
			name = syn
		}
		switch {
		case name == "":
		case !slices.Contains(all, name):
			return nil, bdUsage("unknown check: %s (valid checks: orphans, duplicates, pollution, conflicts)", part)
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	return out, nil
}
