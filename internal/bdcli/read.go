package bdcli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// bd's read commands: ready, list, show, comments (listing), label list,
// epic close-eligible --dry-run, export and version.

type bdReadyCmd struct {
	Limit      int      `short:"n" default:"10" help:"Maximum issues to show (0: all)."`
	Priority   *string  `short:"p" help:"Only this priority."`
	Assignee   string   `short:"a" help:"Only issues assigned to this actor."`
	Unassigned bool     `short:"u" help:"Only unassigned issues."`
	Sort       string   `short:"s" default:"hybrid" help:"hybrid (recent by priority, then older by age), priority, oldest."`
	Label      []string `short:"l" help:"Only issues with all of these labels."`
	LabelAny   []string `name:"label-any" help:"Only issues with at least one of these labels."`
	Type       string   `short:"t" help:"Only issues of this type."`
	Parent     string   `help:"Only the descendants of this issue (an epic)."`
}

func (c *bdReadyCmd) Run(b *bdEnv) error {
	if c.Limit < 0 {
		return bdUsage("--limit must not be negative, got %d", c.Limit)
	}
	if err := workqueue.ValidateLabels(c.Label, c.LabelAny); err != nil {
		return err
	}
	prio, err := optPriority(c.Priority)
	if err != nil {
		return err
	}
	q, err := b.queue(false)
	if err != nil {
		return err
	}
	f := workqueue.ReadyFilter{All: c.Label, Any: c.LabelAny, Claimed: true, Unassigned: c.Unassigned}
	st, err := q.Read(b.ctx, wqservice.Tracker)
	if err != nil {
		return err
	}
	var under map[string]bool
	if c.Parent != "" {
		ids, err := q.Resolve(st, []string{c.Parent})
		if err != nil {
			return err
		}
		under = st.Descendants(ids[0])
	}
	if b.JSON && c.Limit == 0 && under == nil && prio == nil && c.Type == "" && c.Assignee == "" && !c.Unassigned && len(c.Label)+len(c.LabelAny) == 0 {
		// Every ready issue, most from the snapshot's listings.
		if ok, err := st.WriteBeadsReadyJSON(b.stdout, q.Policy, q.Now, c.Sort); ok || err != nil {
			return err
		}
	}
	// In the order of --sort, walked only until the first --limit are found.
	tasks, err := st.ReadyBeads(q.Policy, f, q.Now, func(t *workqueue.Task) bool {
		return !(under != nil && !under[t.ID] || prio != nil && t.Priority != *prio || c.Type != "" && t.Type != c.Type ||
			c.Type == "" && workqueue.BeadsWorkflow(t) || // as bd: its workflow's items only by --type
			c.Assignee != "" && st.View(t, q.Policy, q.Now).Assignee != c.Assignee)
	}, c.Sort, c.Limit)
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, st.ViewsJSON(tasks, q.Policy, q.Now, true))
	}
	out := make([]workqueue.TaskJSON, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, workqueue.Beads(st.View(t, q.Policy, q.Now)))
	}
	if len(out) == 0 {
		if n := st.BeadsStats(q.Policy, q.Now); n.OpenIssues+n.InProgressIssues > 0 {
			fmt.Fprintf(b.stdout, "\n✨ No ready work found (all issues have blocking dependencies)\n\n")
		} else {
			fmt.Fprintf(b.stdout, "\n✨ No open issues\n\n")
		}
		return nil
	}
	fmt.Fprintf(b.stdout, "\n📋 Ready work (%d issues with no blockers):\n\n", len(out))
	for i, t := range out {
		fmt.Fprintf(b.stdout, "%d. [● P%d] [%s] %s: %s\n", i+1, t.Priority, cliout.Text(t.IssueType), cliout.Text(t.ID), cliout.Text(t.Title))
		if t.Assignee != "" {
			fmt.Fprintf(b.stdout, "   Assignee: %s\n", cliout.Text(t.Assignee))
		}
	}
	fmt.Fprintln(b.stdout)
	return nil
}

type bdShowCmd struct {
	IDs []string `arg:"" name:"id" optional:"" help:"Issue ids."`
	ID  []string `name:"id" help:"An issue id that looks like a flag (repeatable)."`
}

func (c *bdShowCmd) Run(b *bdEnv) error {
	refs := append(slices.Clone(c.IDs), c.ID...)
	if len(refs) == 0 {
		return bdUsage("show needs at least one issue id")
	}
	q, err := b.queue(false)
	if err != nil {
		return err
	}
	out, _, err := q.Show(b.ctx, refs)
	if err != nil {
		return err
	}
	for i := range out {
		out[i] = workqueue.BeadsDetail(out[i])
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, out)
	}
	for i, t := range out {
		if i > 0 {
			fmt.Fprintf(b.stdout, "\n%s\n", strings.Repeat("─", 60))
		}
		printBDShow(b.stdout, t)
	}
	return nil
}

// printBDShow prints an issue as bd show does (bd 0.49.1's show.go): the
// header, who and when, the texts, labels, what it depends on and what
// depends on it grouped by type, the comments.
func printBDShow(w io.Writer, t workqueue.DetailJSON) {
	badge := map[string]string{"epic": " [EPIC]", "bug": " [BUG]"}[t.IssueType]
	fmt.Fprintf(w, "\n%s %s%s · %s   [● P%d · %s]\n", bdMark(t.Status), cliout.Text(t.ID), badge, cliout.Text(t.Title), t.Priority,
		strings.ToUpper(cliout.Text(t.Status)))
	var meta []string
	if t.CreatedBy != "" {
		meta = append(meta, "Owner: "+cliout.Text(t.CreatedBy))
	}
	if t.Assignee != "" {
		meta = append(meta, "Assignee: "+cliout.Text(t.Assignee))
	}
	meta = append(meta, "Type: "+cliout.Text(t.IssueType))
	fmt.Fprintln(w, strings.Join(meta, " · "))
	fmt.Fprintf(w, "Created: %s · Updated: %s\n", t.CreatedAt.Format("2006-01-02"), t.UpdatedAt.Format("2006-01-02"))
	if t.Status == workqueue.StatusClosed && t.CloseReason != "" {
		fmt.Fprintf(w, "Close reason: %s\n", cliout.Text(t.CloseReason))
	}
	if t.ExternalRef != "" {
		fmt.Fprintf(w, "External: %s\n", cliout.Text(t.ExternalRef))
	}
	for _, sec := range []struct{ name, body string }{{"DESCRIPTION", t.Description}, {"DESIGN", t.Design},
		{"NOTES", t.Notes}, {"ACCEPTANCE CRITERIA", t.AcceptanceCriteria}} {
		if sec.body != "" {
			fmt.Fprintf(w, "\n%s\n%s\n", sec.name, strings.Join(cliout.TextLines(sec.body), "\n"))
		}
	}
	if len(t.Labels) > 0 {
		labels := make([]string, len(t.Labels))
		for i, l := range t.Labels {
			labels[i] = cliout.Text(l)
		}
		fmt.Fprintf(w, "\nLABELS: %s\n", strings.Join(labels, ", "))
	}
	// bd groups what the issue depends on, then what depends on it; a type
	// it has no heading for is shown with blocks.
	group := func(deps []workqueue.RelatedJSON, headings [][3]string) {
		byType := map[string][]workqueue.RelatedJSON{}
		for _, d := range deps {
			typ := d.DependencyType
			if !slices.ContainsFunc(headings, func(h [3]string) bool { return h[0] == typ }) {
				typ = workqueue.DepBlocks
			}
			byType[typ] = append(byType[typ], d)
		}
		for _, h := range headings {
			if len(byType[h[0]]) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n%s\n", h[1])
			for _, d := range byType[h[0]] {
				fmt.Fprintln(w, bdDepLine(h[2], d.TaskJSON))
			}
		}
	}
	group(t.Dependencies, [][3]string{{workqueue.DepParentChild, "PARENT", "↑"}, {workqueue.DepBlocks, "DEPENDS ON", "→"},
		{"related", "RELATED", "↔"}, {"discovered-from", "DISCOVERED FROM", "◊"}})
	group(t.Dependents, [][3]string{{workqueue.DepParentChild, "CHILDREN", "↳"}, {workqueue.DepBlocks, "BLOCKS", "←"},
		{"related", "RELATED", "↔"}, {"discovered-from", "DISCOVERED", "◊"}})
	if len(t.Comments) > 0 {
		fmt.Fprintf(w, "\nCOMMENTS\n")
		for _, c := range t.Comments {
			fmt.Fprintf(w, "  %s %s\n", c.CreatedAt.Format("2006-01-02"), cliout.Text(c.Author))
			for _, line := range cliout.TextLines(c.Text) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	fmt.Fprintln(w)
}

// bdDepLine is a related issue under a heading of bd show.
func bdDepLine(arrow string, t workqueue.TaskJSON) string {
	if t.Status == workqueue.StatusClosed {
		return fmt.Sprintf("  %s %s %s: %s ● P%d", arrow, bdMark(t.Status), cliout.Text(t.ID), cliout.Text(t.Title), t.Priority)
	}
	badge := map[string]string{"epic": "(EPIC) ", "bug": "(BUG) "}[t.IssueType]
	return fmt.Sprintf("  %s %s %s: %s%s ● P%d", arrow, bdMark(t.Status), cliout.Text(t.ID), badge, cliout.Text(t.Title), t.Priority)
}

// bdCommentsCmd is "comments ID" (list) and "comments add ID TEXT".
type bdCommentsCmd struct {
	Args []string `arg:"" help:"ID, or add ID TEXT."`
	File string   `short:"f" help:"With add: read the text from this file."`
}

func (c *bdCommentsCmd) Run(b *bdEnv) error {
	if len(c.Args) > 0 && c.Args[0] == "add" {
		return addComment(b, c.Args[1:], c.File)
	}
	if len(c.Args) != 1 {
		return bdUsage("comments takes one issue id, or add ID TEXT")
	}
	q, err := b.queue(false)
	if err != nil {
		return err
	}
	id, comments, err := q.Comments(b.ctx, c.Args[0])
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, comments)
	}
	if len(comments) == 0 {
		fmt.Fprintf(b.stdout, "No comments on %s\n", id)
		return nil
	}
	fmt.Fprintf(b.stdout, "\nComments on %s:\n\n", id)
	for _, cm := range comments {
		fmt.Fprintf(b.stdout, "[%s] at %s\n", cliout.Text(cm.Author), cm.CreatedAt.Format("2006-01-02 15:04"))
		for _, line := range cliout.TextLines(cm.Text) {
			fmt.Fprintf(b.stdout, "  %s\n", line)
		}
		fmt.Fprintln(b.stdout)
	}
	return nil
}

type bdEpicCmd struct {
	Status        bdEpicStatusCmd `cmd:"" help:"Show each open epic's progress."`
	CloseEligible bdEpicCloseCmd  `cmd:"" name:"close-eligible" help:"Close open epics whose children are all closed."`
}

type bdEpicCloseCmd struct {
	DryRun bool `name:"dry-run" help:"Only show what would be closed."`
}

func (c *bdEpicCloseCmd) Run(b *bdEnv) error {
	q, st, err := b.tracker(!c.DryRun)
	if err != nil {
		return err
	}
	eligible := st.EpicsEligible(q.Policy, q.Now)
	if len(eligible) == 0 {
		if b.JSON {
			fmt.Fprintln(b.stdout, "[]")
		} else {
			fmt.Fprintln(b.stdout, "No epics eligible for closure")
		}
		return nil
	}
	if c.DryRun {
		if b.JSON {
			return cliout.WriteJSON(b.stdout, eligible)
		}
		fmt.Fprintf(b.stdout, "Would close %d epic(s):\n", len(eligible))
		for _, e := range eligible {
			fmt.Fprintf(b.stdout, "  - %s: %s\n", cliout.Text(e.Epic.ID), cliout.Text(e.Epic.Title))
		}
		return nil
	}
	closed, err := q.CloseEpics(b.ctx)
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, map[string]any{"closed": closed, "count": len(closed)})
	}
	fmt.Fprintf(b.stdout, "✓ Closed %d epic(s)\n", len(closed))
	for _, id := range closed {
		fmt.Fprintf(b.stdout, "  - %s\n", id)
	}
	return nil
}

type bdVersionCmd struct{}

func (c *bdVersionCmd) Run(b *bdEnv) error {
	v := b.o.Version()
	if b.JSON {
		return cliout.WriteJSON(b.stdout, map[string]string{"version": bdCompatible, "spool": v})
	}
	fmt.Fprintf(b.stdout, "bd version %s (spool %s)\n", bdCompatible, v)
	return nil
}

// bdCompatible is the bd release whose commands and JSON the front end follows.
const bdCompatible = "0.49.1"

func bdUsage(format string, args ...any) error {
	return fault.Usagef(fault.CodeUsage, format, args...)
}

func optPriority(s *string) (*int, error) {
	if s == nil {
		return nil, nil
	}
	p, err := bdPriority(*s)
	return &p, err
}
