package bdcli

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/workqueue"
)

// bd count, bd stale and bd types: the views bd's "views" group has that
// list does not.

type bdCountCmd struct {
	bdFilter   `embed:""`
	Title      string `help:"Only issues whose title contains this (any case)."`
	ID         string `name:"id" help:"Only these issues (comma-separated ids)."`
	ByStatus   bool   `name:"by-status" help:"Count by status."`
	ByPriority bool   `name:"by-priority" help:"Count by priority."`
	ByType     bool   `name:"by-type" help:"Count by type."`
	ByAssignee bool   `name:"by-assignee" help:"Count by assignee."`
	ByLabel    bool   `name:"by-label" help:"Count by label (an issue counts once for each of its labels)."`
}

// bdGroupCount is one group of bd count --by-* --json.
type bdGroupCount struct {
	Group string `json:"group"`
	Count int    `json:"count"`
}

func (c *bdCountCmd) Run(b *bdEnv) error {
	var by []string
	for _, g := range []struct {
		on   bool
		name string
	}{{c.ByStatus, "status"}, {c.ByPriority, "priority"}, {c.ByType, "type"}, {c.ByAssignee, "assignee"}, {c.ByLabel, "label"}} {
		if g.on {
			by = append(by, g.name)
		}
	}
	if len(by) > 1 {
		return bdUsage("only one --by-* flag can be specified")
	}
	f, err := c.bdFilter.compile()
	if err != nil {
		return err
	}
	f.title = c.Title
	admit := f.admitter(func(string) bool { return true }) // bd count counts closed issues too
	if ids := bdIDSet(c.ID); ids != nil {
		filtered := admit
		admit = func(t *workqueue.Task, status string) bool { return ids[t.ID] && filtered(t, status) }
	}
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	if c.statusOnly() {
		// No filter but the status: bd stats' counts, which the table's summary keeps.
		counts := statusCounts(st.BeadsStats(q.Policy, q.Now))
		switch status := c.Status; {
		case len(by) > 0:
			return c.printGroups(b, counts)
		case status == "" || status == "all":
			return c.print(b, sum(counts))
		default:
			return c.print(b, counts[status])
		}
	}
	view := f.viewFilter()
	group := ""
	if len(by) > 0 {
		group = by[0]
	}
	// Each issue is rendered as bd shows it only when a filter or the
	// group needs more than the task's own fields.
	rendered := view != nil || group == "assignee" || group == "label"
	total, counts := 0, map[string]*int{}
	// Counted by pointer, and each key cloned once: a task decoded for the
	// call alone lends its strings, and assigning to a key that exists
	// stores the new key.
	add := func(group string) {
		if n := counts[group]; n != nil {
			*n++
		} else {
			one := 1
			counts[strings.Clone(group)] = &one
		}
	}
	st.BeadsEach(q.Policy, q.Now, func(t *workqueue.Task, status string) {
		if !admit(t, status) {
			return
		}
		var v workqueue.TaskJSON
		if rendered {
			if v = workqueue.Beads(st.View(t, q.Policy, q.Now)); view != nil && !view(v) {
				return
			}
		}
		total++
		switch group {
		case "status":
			add(status)
		case "priority":
			add(fmt.Sprintf("P%d", t.Priority))
		case "type":
			add(t.Type)
		case "assignee":
			add(cmp.Or(v.Assignee, "(unassigned)"))
		case "label":
			for _, l := range v.Labels {
				add(l)
			}
			if len(v.Labels) == 0 {
				add("(no labels)")
			}
		}
	})
	if group == "" {
		return c.print(b, total)
	}
	groups := make(map[string]int, len(counts))
	for g, n := range counts {
		groups[g] = *n
	}
	return c.printGroupsOf(b, total, groups)
}

// statusOnly says whether no filter but --status and no group but
// --by-status is given (and not both): bd stats' counts answer it.
func (c *bdCountCmd) statusOnly() bool {
	rest := c.bdFilter
	rest.Status = ""
	return rest.unfiltered() && c.Title == "" && c.ID == "" && !c.ByPriority && !c.ByType && !c.ByAssignee && !c.ByLabel &&
		!(c.ByStatus && c.Status != "" && c.Status != "all")
}

// statusCounts are bd stats' counts by status. They leave out bd's blocked
// (spool's blocked label): the rest of the total.
func statusCounts(s workqueue.Statistics) map[string]int {
	return map[string]int{
		workqueue.StatusOpen: s.OpenIssues, workqueue.StatusInProgress: s.InProgressIssues, workqueue.StatusClosed: s.ClosedIssues,
		workqueue.StatusDeferred: s.DeferredIssues,
		workqueue.StatusBlocked:  s.TotalIssues - s.OpenIssues - s.InProgressIssues - s.ClosedIssues - s.DeferredIssues,
	}
}

func sum(counts map[string]int) (n int) {
	for _, k := range counts {
		n += k
	}
	return n
}

// printGroups writes the groups that hold an issue, and their total.
func (c *bdCountCmd) printGroups(b *bdEnv, counts map[string]int) error {
	maps.DeleteFunc(counts, func(_ string, n int) bool { return n == 0 })
	return c.printGroupsOf(b, sum(counts), counts)
}

// printGroupsOf writes count --by-*'s total and groups, by name.
func (c *bdCountCmd) printGroupsOf(b *bdEnv, total int, counts map[string]int) error {
	groups := make([]bdGroupCount, 0, len(counts))
	for g, n := range counts {
		groups = append(groups, bdGroupCount{g, n})
	}
	slices.SortFunc(groups, func(a, b bdGroupCount) int { return strings.Compare(a.Group, b.Group) })
	if b.JSON {
		return cliout.WriteJSON(b.stdout, struct {
			Total  int            `json:"total"`
			Groups []bdGroupCount `json:"groups"`
		}{total, groups})
	}
	fmt.Fprintf(b.stdout, "Total: %d\n\n", total)
	for _, g := range groups {
		fmt.Fprintf(b.stdout, "%s: %d\n", cliout.Text(g.Group), g.Count)
	}
	return nil
}

// print writes a count without groups.
func (c *bdCountCmd) print(b *bdEnv, n int) error {
	if b.JSON {
		return cliout.WriteJSON(b.stdout, struct {
			Count int `json:"count"`
		}{n})
	}
	fmt.Fprintln(b.stdout, n)
	return nil
}

// bdIDSet is --id's comma-separated ids; nil when there are none.
func bdIDSet(list string) map[string]bool {
	var ids map[string]bool
	for id := range strings.SplitSeq(list, ",") {
		if id = strings.TrimSpace(id); id != "" {
			if ids == nil {
				ids = map[string]bool{}
			}
			ids[id] = true
		}
	}
	return ids
}

type bdStaleCmd struct {
	Days   int    `short:"d" default:"30" help:"Issues not updated in this many days."`
	Status string `short:"s" help:"Only this status: open, in_progress, blocked or deferred."`
	Limit  int    `short:"n" default:"50" help:"Maximum issues to show (0: all)."`
}

func (c *bdStaleCmd) Run(b *bdEnv) error {
	switch c.Status {
	case "", workqueue.StatusOpen, workqueue.StatusInProgress, workqueue.StatusBlocked, workqueue.StatusDeferred:
	default:
		return bdUsage("invalid status '%s'. Valid values: open, in_progress, blocked, deferred", c.Status)
	}
	if c.Limit < 0 {
		return bdUsage("--limit must not be negative, got %d", c.Limit)
	}
	if c.Days < 0 {
		return bdUsage("--days must not be negative, got %d", c.Days)
	}
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	before := q.Now.Truncate(time.Second).AddDate(0, 0, -c.Days)
	// Found streaming, each task decoded for the look alone; only those
	// shown are rendered.
	type found struct {
		updated, created time.Time
		priority         int
		id               string
	}
	var stale []found
	st.BeadsEach(q.Policy, q.Now, func(t *workqueue.Task, status string) {
		if status == workqueue.StatusClosed || c.Status != "" && status != c.Status {
			return
		}
		if u := t.Detail().UpdatedAt; u.Truncate(time.Second).Before(before) {
			stale = append(stale, found{u, t.CreatedAt, t.Priority, strings.Clone(t.ID)})
		}
	})
	// bd's order, least recently updated first; then list's.
	slices.SortFunc(stale, func(a, b found) int {
		return cmp.Or(a.updated.Compare(b.updated), cmp.Compare(a.priority, b.priority), b.created.Compare(a.created), strings.Compare(a.id, b.id))
	})
	if c.Limit > 0 && len(stale) > c.Limit {
		stale = stale[:c.Limit]
	}
	issues := make([]workqueue.TaskJSON, len(stale))
	for i, f := range stale {
		issues[i] = workqueue.Beads(st.View(st.Task(f.id), q.Policy, q.Now))
	}
	if b.JSON {
		// As bd reads them: the issue's row, without its labels, dependencies, creator or owner.
		for i := range issues {
			v := &issues[i]
			v.Labels, v.Dependencies, v.CreatedBy, v.Owner = nil, nil, "", ""
		}
		return cliout.WriteJSON(b.stdout, issues)
	}
	w := b.stdout
	if len(issues) == 0 {
		fmt.Fprintf(w, "\n✨ No stale issues found (all active)\n\n")
		return nil
	}
	fmt.Fprintf(w, "\n⏰ Stale issues (%d not updated in %d+ days):\n\n", len(issues), c.Days)
	for i, it := range issues {
		fmt.Fprintf(w, "%d. [● P%d] %s: %s\n", i+1, it.Priority, cliout.Text(it.ID), cliout.Text(it.Title))
		fmt.Fprintf(w, "   Status: %s, Last updated: %d days ago\n", it.Status, int(q.Now.Sub(it.UpdatedAt).Hours()/24))
		if it.Assignee != "" {
			fmt.Fprintf(w, "   Assignee: %s\n", cliout.Text(it.Assignee))
		}
		fmt.Fprintln(w)
	}
	return nil
}

type bdTypesCmd struct{}

// bdTypeInfo is one type of bd types --json.
type bdTypeInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// bdCoreTypes are bd's built-in types, which are spool's (workqueue.IssueTypes).
var bdCoreTypes = []bdTypeInfo{
	{"task", "General work item (default)"},
	{"bug", "Bug report or defect"},
	{"feature", "New feature or enhancement"},
	{"chore", "Maintenance or housekeeping"},
	{"epic", "Large body of work spanning multiple issues"},
}

func (c *bdTypesCmd) Run(b *bdEnv) error {
	if b.JSON {
		return cliout.WriteJSON(b.stdout, struct {
			CoreTypes []bdTypeInfo `json:"core_types"`
		}{bdCoreTypes})
	}
	fmt.Fprintln(b.stdout, "Core work types (built-in):")
	for _, t := range bdCoreTypes {
		fmt.Fprintf(b.stdout, "  %-14s %s\n", t.Name, t.Description)
	}
	fmt.Fprintln(b.stdout, "\nNo custom types configured.")
	fmt.Fprintln(b.stdout, "spool takes these types only.")
	return nil
}
