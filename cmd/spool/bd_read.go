package main

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

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
}

func (c *bdReadyCmd) Run(b *bdEnv) error {
	if c.Limit < 0 {
		return bdUsage("--limit must not be negative, got %d", c.Limit)
	}
	if err := validateLabelFlags(c.Label, c.LabelAny); err != nil {
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
	tasks, st, err := q.Ready(b.ctx, f, workqueue.Unsorted)
	if err != nil {
		return err
	}
	tasks = slices.DeleteFunc(tasks, func(t *workqueue.Task) bool {
		return prio != nil && t.Priority != *prio || c.Type != "" && t.Type != c.Type ||
			c.Type == "" && workqueue.BeadsWorkflow(t) || // as bd: its workflow's items only by --type
			c.Assignee != "" && st.View(t, q.Policy, q.Now).Assignee != c.Assignee
	})
	if tasks, err = workqueue.BeadsOrder(tasks, c.Sort, q.Now, c.Limit); err != nil {
		return err
	}
	out := make([]workqueue.TaskJSON, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, workqueue.Beads(st.View(t, q.Policy, q.Now)))
	}
	if b.JSON {
		return writeJSON(b.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(b.stdout, "\n✨ No ready work found (all issues have blocking dependencies or are closed)")
		return nil
	}
	fmt.Fprintf(b.stdout, "\n📋 Ready work (%d issues with no blockers):\n\n", len(out))
	for i, t := range out {
		fmt.Fprintf(b.stdout, "%d. [● P%d] [%s] %s: %s\n", i+1, t.Priority, text(t.IssueType), text(t.ID), text(t.Title))
	}
	fmt.Fprintln(b.stdout)
	return nil
}

type bdListCmd struct {
	Status   string   `short:"s" help:"Only this status: open, in_progress, blocked, deferred, closed, or all."`
	Priority *string  `short:"p" help:"Only this priority."`
	Assignee string   `short:"a" help:"Only issues assigned to this actor."`
	Type     string   `short:"t" help:"Only issues of this type."`
	Label    []string `short:"l" help:"Only issues with all of these labels."`
	LabelAny []string `name:"label-any" help:"Only issues with at least one of these labels."`
	Title    string   `help:"Only issues whose title contains this (any case)."`
	Limit    int      `short:"n" default:"50" help:"Maximum issues to show (0: all)."`
	All      bool     `help:"Closed issues too."`
}

func (c *bdListCmd) Run(b *bdEnv) error {
	if c.Limit < 0 {
		return bdUsage("--limit must not be negative, got %d", c.Limit)
	}
	if c.Status != "" && c.Status != "all" && !slices.Contains(workqueue.BeadsStatuses, c.Status) {
		return bdUsage("invalid status %q (expected %s)", c.Status, strings.Join(workqueue.BeadsStatuses, ", "))
	}
	if err := validateLabelFlags(c.Label, c.LabelAny); err != nil {
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
	tasks, st, err := q.List(b.ctx, workqueue.ListFilter{})
	if err != nil {
		return err
	}
	f := workqueue.ReadyFilter{All: c.Label, Any: c.LabelAny}
	var out []workqueue.ListItemJSON
	counts := st.DependentCounts()
	workqueue.BeadsListOrder(tasks)
	for _, t := range tasks {
		if !f.Admits(t) || prio != nil && t.Priority != *prio || c.Type != "" && t.Type != c.Type ||
			c.Title != "" && !strings.Contains(strings.ToLower(t.Title), strings.ToLower(c.Title)) {
			continue
		}
		item := st.ListItem(t, q.Policy, q.Now, counts)
		item.TaskJSON = workqueue.Beads(item.TaskJSON)
		switch {
		case c.Status == "" && !c.All && item.Status == workqueue.StatusClosed,
			c.Status != "" && c.Status != "all" && item.Status != c.Status,
			c.Assignee != "" && item.Assignee != c.Assignee:
			continue
		}
		out = append(out, item)
		if c.Limit > 0 && len(out) == c.Limit {
			break
		}
	}
	if b.JSON {
		return writeJSON(b.stdout, nonNil(out))
	}
	for _, t := range out {
		fmt.Fprintln(b.stdout, bdLine(t.TaskJSON))
	}
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
	out, st, err := q.Show(b.ctx, refs)
	if err != nil {
		return err
	}
	for i := range out {
		out[i] = workqueue.BeadsDetail(out[i])
	}
	if b.JSON {
		return writeJSON(b.stdout, out)
	}
	printTasksDetail(b.env, q, st, out)
	return nil
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
		return writeJSON(b.stdout, comments)
	}
	if len(comments) == 0 {
		fmt.Fprintf(b.stdout, "No comments on %s\n", id)
		return nil
	}
	fmt.Fprintf(b.stdout, "\nComments on %s:\n\n", id)
	for _, cm := range comments {
		fmt.Fprintf(b.stdout, "[%s] at %s\n", text(cm.Author), cm.CreatedAt.Format("2006-01-02 15:04"))
		for _, line := range textLines(cm.Text) {
			fmt.Fprintf(b.stdout, "  %s\n", line)
		}
		fmt.Fprintln(b.stdout)
	}
	return nil
}

type bdEpicCmd struct {
	CloseEligible bdEpicCloseCmd `cmd:"" name:"close-eligible" help:"Close open epics whose children are all closed."`
}

type bdEpicCloseCmd struct {
	DryRun bool `name:"dry-run" help:"Only show what would be closed."`
}

func (c *bdEpicCloseCmd) Run(b *bdEnv) error {
	q, err := b.queue(!c.DryRun)
	if err != nil {
		return err
	}
	st, err := q.Read(b.ctx, wqservice.Tracker)
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
			return writeJSON(b.stdout, eligible)
		}
		fmt.Fprintf(b.stdout, "Would close %d epic(s):\n", len(eligible))
		for _, e := range eligible {
			fmt.Fprintf(b.stdout, "  - %s: %s\n", text(e.Epic.ID), text(e.Epic.Title))
		}
		return nil
	}
	closed, err := q.CloseEpics(b.ctx)
	if err != nil {
		return err
	}
	if b.JSON {
		return writeJSON(b.stdout, map[string]any{"closed": closed, "count": len(closed)})
	}
	fmt.Fprintf(b.stdout, "✓ Closed %d epic(s)\n", len(closed))
	for _, id := range closed {
		fmt.Fprintf(b.stdout, "  - %s\n", id)
	}
	return nil
}

type bdVersionCmd struct{}

func (c *bdVersionCmd) Run(b *bdEnv) error {
	v, _ := buildVersion(debug.ReadBuildInfo())
	if b.JSON {
		return writeJSON(b.stdout, map[string]string{"version": bdCompatible, "spool": v})
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
