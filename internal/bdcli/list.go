package bdcli

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/workqueue"
)

// bd list and bd search: the same filters over the tracker, bd's order
// (priority, newest first) and its lines.

// bdFilter is what list and search filter on.
type bdFilter struct {
	Status           string   `short:"s" help:"Only this status: open, in_progress, blocked, deferred, closed (list: or all)."`
	Priority         *string  `short:"p" help:"Only this priority."`
	PriorityMin      *string  `name:"priority-min" help:"Priority at least this urgent's number (0-4)."`
	PriorityMax      *string  `name:"priority-max" help:"Priority at most this number (0-4)."`
	Assignee         string   `short:"a" help:"Only issues assigned to this actor."`
	NoAssignee       bool     `name:"no-assignee" help:"Only unassigned issues."`
	Type             string   `short:"t" help:"Only issues of this type."`
	Label            []string `short:"l" help:"Only issues with all of these labels."`
	LabelAny         []string `name:"label-any" help:"Only issues with at least one of these labels."`
	NoLabels         bool     `name:"no-labels" help:"Only issues without labels."`
	TitleContains    string   `name:"title-contains" help:"Title contains this (any case)."`
	DescContains     string   `name:"desc-contains" help:"Description contains this (any case)."`
	NotesContains    string   `name:"notes-contains" help:"Notes contain this (any case)."`
	EmptyDescription bool     `name:"empty-description" help:"Only issues without a description."`
	CreatedAfter     string   `name:"created-after" help:"Created after this date (YYYY-MM-DD or RFC 3339)."`
	CreatedBefore    string   `name:"created-before" help:"Created before this date."`
	UpdatedAfter     string   `name:"updated-after" help:"Updated after this date."`
	UpdatedBefore    string   `name:"updated-before" help:"Updated before this date."`
	ClosedAfter      string   `name:"closed-after" help:"Closed after this date."`
	ClosedBefore     string   `name:"closed-before" help:"Closed before this date."`
	Parent           string   `name:"parent" help:"Only the children of this issue."`
	Long             bool     `help:"Several lines an issue."`
}

// unfiltered says whether f filters nothing (Long only changes the lines).
func (f bdFilter) unfiltered() bool {
	f.Long = false
	return reflect.ValueOf(f).IsZero()
}

// compiled is a bdFilter checked and parsed.
type compiled struct {
	bdFilter
	title                  string // list's and count's --title: as --title-contains, and both must hold
	prio, prioMin, prioMax *int
	times                  [6]*time.Time // created, updated, closed: after, before
}

func (f bdFilter) compile() (*compiled, error) {
	c := &compiled{bdFilter: f}
	if f.Status != "" && f.Status != "all" && !slices.Contains(workqueue.BeadsStatuses, f.Status) {
		return nil, bdUsage("invalid status %q (expected %s)", f.Status, strings.Join(workqueue.BeadsStatuses, ", "))
	}
	if err := workqueue.ValidateLabels(f.Label, f.LabelAny); err != nil {
		return nil, err
	}
	var err error
	for _, p := range []struct {
		in  *string
		out **int
	}{{f.Priority, &c.prio}, {f.PriorityMin, &c.prioMin}, {f.PriorityMax, &c.prioMax}} {
		if *p.out, err = optPriority(p.in); err != nil {
			return nil, err
		}
	}
	for i, s := range []string{f.CreatedAfter, f.CreatedBefore, f.UpdatedAfter, f.UpdatedBefore, f.ClosedAfter, f.ClosedBefore} {
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			if t, err = time.Parse("2006-01-02", s); err != nil {
				return nil, bdUsage("invalid date %q: use YYYY-MM-DD or RFC 3339", s)
			}
		}
		c.times[i] = &t
	}
	return c, nil
}

// admits is the part of the filters a task's own fields answer, with its
// status as bd shows it: most tasks are turned away undecoded.
func (c *compiled) admits(t *workqueue.Task, status string) bool {
	if !(workqueue.ReadyFilter{All: c.Label, Any: c.LabelAny}).Admits(t) {
		return false
	}
	switch {
	case c.Status != "" && c.Status != "all" && status != c.Status,
		c.prio != nil && t.Priority != *c.prio,
		c.prioMin != nil && t.Priority < *c.prioMin,
		c.prioMax != nil && t.Priority > *c.prioMax,
		c.Type != "" && t.Type != c.Type,
		c.Parent != "" && t.Parent != c.Parent,
		c.NoLabels && slices.ContainsFunc(t.Labels, func(l string) bool { return l != workqueue.BlockedLabel }),
		c.TitleContains != "" && !anyCase(t.Title, c.TitleContains),
		c.title != "" && !anyCase(t.Title, c.title),
		c.times[0] != nil && !t.CreatedAt.After(*c.times[0]),
		c.times[1] != nil && !t.CreatedAt.Before(*c.times[1]):
		return false
	}
	return true
}

// viewFilter is the rest, on the whole issue; nil when no filter needs it.
func (c *compiled) viewFilter() func(workqueue.TaskJSON) bool {
	if c.Assignee == "" && !c.NoAssignee && c.DescContains == "" && c.NotesContains == "" && !c.EmptyDescription &&
		c.times[2] == nil && c.times[3] == nil && c.times[4] == nil && c.times[5] == nil {
		return nil
	}
	return func(v workqueue.TaskJSON) bool {
		switch {
		case c.Assignee != "" && v.Assignee != c.Assignee,
			c.NoAssignee && v.Assignee != "",
			c.DescContains != "" && !anyCase(v.Description, c.DescContains),
			c.NotesContains != "" && !anyCase(v.Notes, c.NotesContains),
			c.EmptyDescription && v.Description != "":
			return false
		}
		closed := time.Time{}
		if v.ClosedAt != nil {
			closed = *v.ClosedAt
		}
		for i, at := range []time.Time{v.UpdatedAt, v.UpdatedAt, closed, closed} {
			lim := c.times[i+2]
			if lim == nil {
				continue
			}
			if at.IsZero() || i%2 == 0 && !at.After(*lim) || i%2 == 1 && !at.Before(*lim) {
				return false
			}
		}
		return true
	}
}

// admitter is what the filters admit of a task, given its bd status, with
// keep saying which statuses count.
func (c *compiled) admitter(keep func(status string) bool) func(t *workqueue.Task, status string) bool {
	return func(t *workqueue.Task, status string) bool { return keep(status) && c.admits(t, status) }
}

// anyCase reports whether s contains sub, in any case.
func anyCase(s, sub string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) }

// matching returns the issues that pass, as bd list --json has them, in
// bd's order, at most limit (0: all); keep says which statuses count and
// query, when set, what search looks for.
func (b *bdEnv) matching(c *compiled, limit int, keep func(status string) bool, query string) ([]workqueue.ListItemJSON, error) {
	q, st, err := b.tracker(false)
	if err != nil {
		return nil, err
	}
	admit := c.admitter(keep)
	view := c.viewFilter()
	if c.Parent != "" && query == "" {
		return st.BeadsChildren(q.Policy, q.Now, c.Parent, admit, view, limit), nil
	}
	if query != "" && view == nil {
		return st.BeadsSearch(q.Policy, q.Now, admit, query, limit), nil
	}
	if query != "" { // an id, a title or a description: the last needs the whole issue
		rest := view
		view = func(v workqueue.TaskJSON) bool {
			return (anyCase(v.ID, query) || anyCase(v.Title, query) || anyCase(v.Description, query)) && (rest == nil || rest(v))
		}
	}
	return st.BeadsList(q.Policy, q.Now, admit, view, limit), nil
}

type bdListCmd struct {
	bdFilter `embed:""`
	Title    string `help:"Only issues whose title contains this (any case)."`
	Limit    *int   `short:"n" help:"Maximum issues to show (default 50, 20 for an agent; 0: all)."`
	All      bool   `help:"Closed issues too."`
	Format   string `help:"Refused: not supported by spool."`
}

func (c *bdListCmd) Run(b *bdEnv) error {
	if c.Format != "" {
		return notSupported("list --format "+c.Format, "spool prints bd's lines and JSON only; bd list --json has every dependency to draw a graph from")
	}
	limit := 50
	if bdAgentMode() {
		limit = 20 // as bd, for an agent's context
	}
	if c.Limit != nil {
		limit = *c.Limit
	}
	if limit < 0 {
		return bdUsage("--limit must not be negative, got %d", limit)
	}
	f, err := c.bdFilter.compile()
	if err != nil {
		return err
	}
	f.title = c.Title
	keep := func(status string) bool {
		return c.Status != "" || c.All || status != workqueue.StatusClosed
	}
	openOnly := f.viewFilter() == nil && c.Parent == "" && !c.All && c.Title == "" && c.bdFilter.unfiltered()
	if !b.JSON && openOnly && limit > 0 { // bd list as people run it
		q, st, err := b.tracker(false)
		if err != nil {
			return err
		}
		return c.print(b, st.BeadsOpenList(q.Policy, q.Now, limit), limit)
	}
	if b.JSON && f.viewFilter() == nil && c.Parent == "" {
		q, st, err := b.tracker(false)
		if err != nil {
			return err
		}
		if openOnly {
			if limit == 0 { // every issue not closed, copied from the snapshot
				if ok, err := st.WriteBeadsOpenListJSON(b.stdout, q.Policy, q.Now); ok || err != nil {
					return err
				}
			} else { // bd list --json as most run it: the first issues not closed
				return cliout.WriteJSON(b.stdout, st.BeadsOpenListJSON(q.Policy, q.Now, limit))
			}
		}
		return cliout.WriteJSON(b.stdout, st.BeadsListJSON(q.Policy, q.Now, f.admitter(keep), limit))
	}
	out, err := b.matching(f, limit, keep, "")
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, cliout.NonNil(out))
	}
	return c.print(b, out, limit)
}

// print writes bd list's lines of out.
func (c *bdListCmd) print(b *bdEnv, out []workqueue.ListItemJSON, limit int) error {
	switch {
	case bdAgentMode():
		for _, t := range out {
			fmt.Fprintf(b.stdout, "%s: %s\n", cliout.Text(t.ID), cliout.Text(t.Title))
		}
		return nil
	case c.Long:
		fmt.Fprintf(b.stdout, "\nFound %d issues:\n\n", len(out))
		for _, t := range out {
			printBDLong(b, t.TaskJSON, false)
		}
	default:
		for _, t := range out {
			fmt.Fprintln(b.stdout, bdLine(t.TaskJSON))
		}
	}
	if limit > 0 && len(out) == limit {
		fmt.Fprintf(b.stderr, "\nShowing %d issues (use --limit 0 for all)\n", limit)
	}
	return nil
}

type bdChildrenCmd struct {
	Parent string `arg:"" name:"parent-id" help:"The parent issue."`
}

// Run is bd list --parent ID, as bd's children is.
func (c *bdChildrenCmd) Run(b *bdEnv) error {
	if strings.TrimSpace(c.Parent) == "" {
		return bdUsage("a parent issue id is required") // bd lists every issue
	}
	return (&bdListCmd{bdFilter: bdFilter{Parent: c.Parent}}).Run(b)
}

type bdSearchCmd struct {
	bdFilter `embed:""`
	Query    []string `arg:"" optional:"" help:"Text to find in an id, title or description (any case)."`
	QueryF   string   `name:"query" help:"The text (instead of the argument)."`
	Limit    int      `short:"n" default:"50" help:"Maximum issues to show (0: all)."`
	Sort     string   `help:"Refused: not supported by spool."`
	Reverse  bool     `short:"r" help:"Refused: not supported by spool."`
}

func (c *bdSearchCmd) Run(b *bdEnv) error {
	if c.Sort != "" || c.Reverse {
		return notSupported("search --sort and --reverse", "results come in bd list's order, by priority then newest first; --json and jq sort them otherwise")
	}
	query := strings.Join(c.Query, " ")
	if query == "" {
		query = c.QueryF
	}
	if query == "" {
		return bdUsage("search query is required")
	}
	if c.Limit < 0 {
		return bdUsage("--limit must not be negative, got %d", c.Limit)
	}
	f, err := c.bdFilter.compile()
	if err != nil {
		return err
	}
	out, err := b.matching(f, c.Limit, func(string) bool { return true }, query)
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, cliout.NonNil(out))
	}
	if len(out) == 0 {
		fmt.Fprintf(b.stdout, "No issues found matching '%s'\n", cliout.Text(query))
		return nil
	}
	if c.Long {
		fmt.Fprintf(b.stdout, "\nFound %d issues matching '%s':\n\n", len(out), cliout.Text(query))
		for _, t := range out {
			printBDLong(b, t.TaskJSON, true)
		}
		return nil
	}
	fmt.Fprintf(b.stdout, "Found %d issues matching '%s':\n", len(out), cliout.Text(query))
	for _, t := range out {
		fmt.Fprintf(b.stdout, "%s [P%d] [%s] %s%s%s - %s\n", cliout.Text(t.ID), t.Priority, cliout.Text(t.IssueType), t.Status,
			bdAssignee(t.TaskJSON), bdLabels(t.TaskJSON), cliout.Text(t.Title))
	}
	return nil
}

// bdLine is one issue as bd list prints it; a closed one without the
// priority's dot.
func bdLine(t workqueue.TaskJSON) string {
	prio := fmt.Sprintf("● P%d", t.Priority)
	if t.Status == workqueue.StatusClosed {
		prio = fmt.Sprintf("P%d", t.Priority)
	}
	return fmt.Sprintf("%s %s [%s] [%s]%s%s - %s", bdMark(t.Status), cliout.Text(t.ID), prio, cliout.Text(t.IssueType),
		bdAssignee(t), bdLabels(t), cliout.Text(t.Title))
}

// printBDLong is an issue as bd list --long (or search --long) prints it.
func printBDLong(b *bdEnv, t workqueue.TaskJSON, search bool) {
	switch {
	case search:
		fmt.Fprintf(b.stdout, "%s [P%d] [%s] %s\n  %s\n", cliout.Text(t.ID), t.Priority, cliout.Text(t.IssueType), t.Status, cliout.Text(t.Title))
	case t.Status == workqueue.StatusClosed:
		fmt.Fprintf(b.stdout, "%s [P%d] [%s] %s\n  %s\n", cliout.Text(t.ID), t.Priority, cliout.Text(t.IssueType), t.Status, cliout.Text(t.Title))
	default:
		fmt.Fprintf(b.stdout, "%s [● P%d] [%s] %s\n  %s\n", cliout.Text(t.ID), t.Priority, cliout.Text(t.IssueType), t.Status, cliout.Text(t.Title))
	}
	if t.Assignee != "" {
		fmt.Fprintf(b.stdout, "  Assignee: %s\n", cliout.Text(t.Assignee))
	}
	if len(t.Labels) > 0 {
		fmt.Fprintf(b.stdout, "  Labels:%s\n", bdLabels(t))
	}
	fmt.Fprintln(b.stdout)
}

func bdAssignee(t workqueue.TaskJSON) string {
	if t.Assignee == "" {
		return ""
	}
	return " @" + cliout.Text(t.Assignee)
}

// bdLabels is Go's %v of the labels, as bd prints them: " [a b]".
func bdLabels(t workqueue.TaskJSON) string {
	if len(t.Labels) == 0 {
		return ""
	}
	labels := make([]string, len(t.Labels))
	for i, l := range t.Labels {
		labels[i] = cliout.Text(l)
	}
	return " [" + strings.Join(labels, " ") + "]"
}

// bdAgentMode is bd's agent mode (BD_AGENT_MODE=1, or inside Claude Code):
// list prints "ID: Title" lines, 20 by default.
func bdAgentMode() bool {
	return os.Getenv("BD_AGENT_MODE") == "1" || os.Getenv("CLAUDE_CODE") != ""
}
