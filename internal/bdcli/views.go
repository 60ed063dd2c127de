package bdcli

import (
	"fmt"
	"strings"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// bd's views over the whole tracker: blocked, stats, dep tree, dep cycles,
// label list-all and epic status, in bd 0.49.1's words and JSON.

// tracker is queue and the tracker's state read from it.
func (b *bdEnv) tracker(change bool) (*wqservice.Service, *workqueue.State, error) {
	q, err := b.queue(change)
	if err != nil {
		return nil, nil, err
	}
	st, err := q.Read(b.ctx, wqservice.Tracker)
	return q, st, err
}

type bdBlockedCmd struct {
	Parent string `help:"Only the descendants of this issue (an epic)."`
}

func (c *bdBlockedCmd) Run(b *bdEnv) error {
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	parent := c.Parent
	if parent != "" {
		ids, err := q.Resolve(st, []string{parent})
		if err != nil {
			return err
		}
		parent = ids[0]
	}
	blocked := st.BeadsBlocked(q.Policy, q.Now, parent)
	if b.JSON {
		return cliout.WriteJSON(b.stdout, cliout.NonNil(blocked))
	}
	if len(blocked) == 0 {
		fmt.Fprintf(b.stdout, "\n✨ No blocked issues\n\n")
		return nil
	}
	fmt.Fprintf(b.stdout, "\n🚫 Blocked issues (%d):\n\n", len(blocked))
	for _, t := range blocked {
		fmt.Fprintf(b.stdout, "[● P%d] %s: %s\n", t.Priority, cliout.Text(t.ID), cliout.Text(t.Title))
		fmt.Fprintf(b.stdout, "  Blocked by %d open dependencies: [%s]\n\n", t.BlockedByCount, strings.Join(t.BlockedBy, " "))
	}
	return nil
}

type bdStatsCmd struct {
	All        bool `hidden:"" help:"Accepted (bd's default)."`
	NoActivity bool `name:"no-activity" hidden:"" help:"Accepted: spool reports no git activity."`
}

// bdStatsOutput is bd stats --json: the summary (bd's recent activity comes
// from the git history of .beads/issues.jsonl, which spool does not have).
type bdStatsOutput struct {
	Summary workqueue.Statistics `json:"summary"`
}

func (c *bdStatsCmd) Run(b *bdEnv) error {
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	s := st.BeadsStats(q.Policy, q.Now)
	if b.JSON {
		return cliout.WriteJSON(b.stdout, bdStatsOutput{s})
	}
	w := b.stdout
	fmt.Fprintf(w, "\n📊 Issue Database Status\n\nSummary:\n")
	for _, row := range []struct {
		name string
		n    int
	}{{"Total Issues", s.TotalIssues}, {"Open", s.OpenIssues}, {"In Progress", s.InProgressIssues},
		{"Blocked", s.BlockedIssues}, {"Closed", s.ClosedIssues}, {"Ready to Work", s.ReadyIssues}} {
		fmt.Fprintf(w, "  %-24s%d\n", row.name+":", row.n)
	}
	if s.EpicsEligibleForClosure > 0 || s.AverageLeadTime > 0 {
		fmt.Fprintf(w, "\nExtended:\n")
		if s.EpicsEligibleForClosure > 0 {
			fmt.Fprintf(w, "  %-24s%d\n", "Epics Ready to Close:", s.EpicsEligibleForClosure)
		}
		if s.AverageLeadTime > 0 {
			fmt.Fprintf(w, "  %-24s%.1f hours\n", "Avg Lead Time:", s.AverageLeadTime)
		}
	}
	fmt.Fprintf(w, "\nFor more details, use 'bd list' to see individual issues.\n\n")
	return nil
}

type bdDepTreeCmd struct {
	ID           string `arg:"" help:"The issue at the root."`
	MaxDepth     int    `short:"d" name:"max-depth" default:"50" help:"Deepest level shown."`
	Reverse      bool   `help:"What depends on it (as --direction up)."`
	Direction    string `help:"down (what it depends on, the default) or up (what depends on it)."`
	Status       string `help:"Refused: not supported by spool."`
	Format       string `help:"Refused: not supported by spool."`
	ShowAllPaths bool   `name:"show-all-paths" help:"Refused: not supported by spool."`
	Type         string `short:"t" help:"Refused: not supported by spool."`
}

func (c *bdDepTreeCmd) Run(b *bdEnv) error {
	switch {
	case c.Status != "" || c.Format != "" || c.ShowAllPaths || c.Type != "":
		return notSupported("dep tree --status, --format, --show-all-paths and --type",
			"spool draws the whole tree, each issue once; bd show ID --json has the typed dependencies")
	case c.Direction == "both":
		return notSupported("dep tree --direction both", "run it with --direction down and --direction up")
	case c.Direction != "" && c.Direction != "down" && c.Direction != "up":
		return bdUsage("--direction must be 'down', 'up', or 'both'")
	case c.MaxDepth < 1:
		return bdUsage("--max-depth must be >= 1")
	}
	up := c.Direction == "up" || c.Direction == "" && c.Reverse
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	ids, err := q.Resolve(st, []string{c.ID})
	if err != nil {
		return err
	}
	id := ids[0]
	if st.Task(id) == nil {
		return workqueue.NoTask(id)
	}
	tree := st.DepTree(id, c.MaxDepth, up, q.Policy, q.Now)
	if b.JSON {
		return cliout.WriteJSON(b.stdout, tree)
	}
	heading := "Dependency tree"
	if up {
		heading = "Dependent tree"
	}
	fmt.Fprintf(b.stdout, "\n🌲 %s for %s:\n\n", heading, id)
	children := map[string][]workqueue.TreeNodeJSON{}
	for _, n := range tree[1:] {
		children[n.ParentID] = append(children[n.ParentID], n)
	}
	// later[d] says whether the node drawn at depth d has siblings after it.
	// bd's renderer draws column j (j ≥ 1) from the node at depth j+1, not
	// j, and column 0 blank: kept, so that the lines are bd's.
	later := make([]bool, c.MaxDepth+2)
	var draw func(n workqueue.TreeNodeJSON)
	draw = func(n workqueue.TreeNodeJSON) {
		var prefix strings.Builder
		if n.Depth > 0 {
			prefix.WriteString("    ")
			for j := 1; j < n.Depth; j++ {
				prefix.WriteString(map[bool]string{true: "│   ", false: "    "}[later[j+1]])
			}
			prefix.WriteString(map[bool]string{true: "├── ", false: "└── "}[later[n.Depth]])
		}
		line := fmt.Sprintf("%s: %s [P%d] (%s)", cliout.Text(n.ID), cliout.Text(n.Title), n.Priority, n.Status)
		if n.Status == workqueue.StatusOpen && n.Depth == 0 {
			line += " [READY]" // as bd: the root, open, whatever it waits for
		}
		if n.Truncated {
			line += " …"
		}
		fmt.Fprintf(b.stdout, "%s%s\n", prefix.String(), line)
		kids := children[n.ID]
		for i, k := range kids {
			later[k.Depth] = i < len(kids)-1
			draw(k)
		}
	}
	draw(tree[0])
	fmt.Fprintln(b.stdout)
	return nil
}

type bdDepCyclesCmd struct{}

func (c *bdDepCyclesCmd) Run(b *bdEnv) error {
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	var cycles [][]workqueue.TaskJSON
	for _, ids := range st.Cycles() {
		var cycle []workqueue.TaskJSON
		for _, id := range ids {
			cycle = append(cycle, workqueue.Beads(st.View(st.Task(id), q.Policy, q.Now)))
		}
		cycles = append(cycles, cycle)
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, cliout.NonNil(cycles))
	}
	if len(cycles) == 0 {
		fmt.Fprintf(b.stdout, "\n✓ No dependency cycles detected\n\n")
		return nil
	}
	fmt.Fprintf(b.stdout, "\n⚠ Found %d dependency cycles:\n\n", len(cycles))
	for i, cycle := range cycles {
		fmt.Fprintf(b.stdout, "%d. Cycle involving:\n", i+1)
		for _, t := range cycle {
			fmt.Fprintf(b.stdout, "   - %s: %s\n", cliout.Text(t.ID), cliout.Text(t.Title))
		}
		fmt.Fprintln(b.stdout)
	}
	return nil
}

type bdLabelListAllCmd struct{}

func (c *bdLabelListAllCmd) Run(b *bdEnv) error {
	_, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	counts := st.LabelCounts()
	if b.JSON {
		return cliout.WriteJSON(b.stdout, counts)
	}
	if len(counts) == 0 {
		fmt.Fprintf(b.stdout, "\nNo labels found in database\n")
		return nil
	}
	width := 0
	for _, l := range counts {
		width = max(width, len(l.Label))
	}
	fmt.Fprintf(b.stdout, "\n🏷 All labels (%d unique):\n", len(counts))
	for _, l := range counts {
		fmt.Fprintf(b.stdout, "  %-*s  (%d issues)\n", width, cliout.Text(l.Label), l.Count)
	}
	fmt.Fprintln(b.stdout)
	return nil
}

type bdEpicStatusCmd struct {
	EligibleOnly bool `name:"eligible-only" help:"Only epics whose children are all closed."`
}

func (c *bdEpicStatusCmd) Run(b *bdEnv) error {
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	epics := st.Epics(q.Policy, q.Now)
	if c.EligibleOnly {
		epics = st.EpicsEligible(q.Policy, q.Now)
	}
	if b.JSON {
		if len(epics) == 0 && !c.EligibleOnly {
			fmt.Fprintln(b.stdout, "null") // bd's nil list
			return nil
		}
		return cliout.WriteJSON(b.stdout, cliout.NonNil(epics))
	}
	if len(epics) == 0 {
		fmt.Fprintln(b.stdout, "No open epics found")
		return nil
	}
	for _, e := range epics {
		pct := 0
		if e.TotalChildren > 0 {
			pct = e.ClosedChildren * 100 / e.TotalChildren
		}
		icon := "○"
		if e.EligibleForClose {
			icon = "✓"
		}
		fmt.Fprintf(b.stdout, "%s %s %s\n", icon, cliout.Text(e.Epic.ID), cliout.Text(e.Epic.Title))
		fmt.Fprintf(b.stdout, "   Progress: %d/%d children closed (%d%%)\n", e.ClosedChildren, e.TotalChildren, pct)
		if e.EligibleForClose {
			fmt.Fprintf(b.stdout, "   Eligible for closure\n")
		}
		fmt.Fprintln(b.stdout)
	}
	return nil
}
