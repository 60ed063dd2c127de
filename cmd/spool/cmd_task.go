package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// TaskCmd is the embedded task tracker.
type TaskCmd struct {
	Add     TaskAddCmd     `cmd:"" help:"Create a task."`
	Show    TaskShowCmd    `cmd:"" help:"Show tasks with their dependencies and comments."`
	List    TaskListCmd    `cmd:"" help:"List tasks by priority, then age."`
	Update  TaskUpdateCmd  `cmd:"" help:"Change a task's title, description, priority, status or labels."`
	Close   TaskCloseCmd   `cmd:"" help:"Close tasks."`
	Reopen  TaskReopenCmd  `cmd:"" help:"Reopen a closed task."`
	Dep     TaskDepCmd     `cmd:"" help:"Add or remove a blocking dependency."`
	Comment TaskCommentCmd `cmd:"" help:"Comment on a task."`
}

type TaskAddCmd struct {
	Title       string   `arg:"" help:"The task's title."`
	Description string   `short:"d" help:"Longer description."`
	Design      string   `help:"How it is to be done."`
	Acceptance  string   `help:"When it is done."`
	Notes       string   `help:"Notes."`
	Assignee    string   `help:"Who it is for (a claim sets it too)."`
	Priority    int      `short:"p" default:"2" help:"0 (most urgent) to 4."`
	Type        string   `short:"t" default:"task" enum:"task,bug,feature,epic,chore" help:"task, bug, feature, epic or chore."`
	Label       []string `short:"l" sep:"none" placeholder:"LABEL" help:"A label (repeatable)."`
	Dep         []string `sep:"none" placeholder:"ID" complete:"task" help:"A task this one waits for (repeatable)."`
	Parent      string   `placeholder:"ID" complete:"task" help:"The parent task (an epic, say)."`
}

func (c *TaskAddCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	t, err := q.Add(e.ctx, workqueue.NewTask{Title: c.Title, Description: c.Description, Design: c.Design, Acceptance: c.Acceptance,
		Notes: c.Notes, Assignee: c.Assignee, Priority: c.Priority, Type: c.Type, Labels: c.Label, Deps: c.Dep, Parent: c.Parent})
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, t)
	}
	fmt.Fprintf(e.stdout, "created %s: %s\n", t.ID, text(t.Title))
	return nil
}

type TaskShowCmd struct {
	IDs []string `arg:"" name:"id" complete:"task" help:"Task ids."`
}

func (c *TaskShowCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	out, s, err := q.Show(e.ctx, c.IDs)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	printTasksDetail(e, q, s, out)
	return nil
}

// printTasksDetail prints each task, then its queue history when it has one.
func printTasksDetail(e *env, q *wqservice.Service, s *workqueue.State, out []workqueue.DetailJSON) {
	for i, t := range out {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		queue := ""
		if h := s.Entry(t.ID); h != nil {
			queue = entrySummary(q.Policy.HistoryView(*h, q.Now), q.Now)
		}
		printTask(e, t, queue)
	}
}

// printTask prints a task's fields aligned, with queue (its history
// entry's summary, when it has one) after its creation.
func printTask(e *env, d workqueue.DetailJSON, queue string) {
	t := d.TaskJSON
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, row(t.ID, text(t.Title)))
	fmt.Fprint(tw, row("status", t.Status))
	fmt.Fprint(tw, row("priority", fmt.Sprintf("P%d", t.Priority)))
	fmt.Fprint(tw, row("type", text(t.IssueType)))
	if len(d.Labels) > 0 {
		fmt.Fprint(tw, row("labels", text(strings.Join(d.Labels, ", "))))
	}
	if t.Assignee != "" {
		fmt.Fprint(tw, row("assignee", text(t.Assignee)))
	}
	fmt.Fprint(tw, row("created", fmtTime(&t.CreatedAt)+" by "+text(orDash(t.CreatedBy))))
	if t.ClosedAt != nil {
		fmt.Fprint(tw, row("closed", strings.TrimSpace(fmtTime(t.ClosedAt)+" "+text(t.CloseReason))))
	}
	if queue != "" {
		fmt.Fprint(tw, row("queue", queue))
	}
	// A "blocks" dependency: the task it depends on blocks this one.
	for _, r := range d.Dependencies {
		fmt.Fprint(tw, row(relation(r.DependencyType, "waits for", "parent"), text(r.ID)+" ("+orDash(r.Status)+")"))
	}
	for _, r := range d.Dependents {
		fmt.Fprint(tw, row(relation(r.DependencyType, "blocks", "child"), text(r.ID)+" ("+orDash(r.Status)+")"))
	}
	for _, f := range []struct{ name, text string }{{"description", t.Description}, {"design", t.Design},
		{"acceptance", t.AcceptanceCriteria}, {"notes", t.Notes}} {
		if f.text == "" {
			continue // no label for a field never written
		}
		for i, line := range textLines(f.text) {
			label := ""
			if i == 0 {
				label = f.name
			}
			fmt.Fprint(tw, row(label, line))
		}
	}
	tw.Flush()
	for _, c := range d.Comments {
		for i, line := range textLines(c.Text) {
			if i == 0 {
				fmt.Fprintf(e.stdout, "  %s %s: %s\n", fmtTime(&c.CreatedAt), text(c.Author), line)
			} else {
				fmt.Fprintf(e.stdout, "    %s\n", line)
			}
		}
	}
}

// relation names a dependency of type typ from one side: blocks and
// parent-child have their own words, links are named by their type.
func relation(typ, blocks, parentChild string) string {
	switch typ {
	case workqueue.DepBlocks:
		return blocks
	case workqueue.DepParentChild:
		return parentChild
	}
	return text(typ)
}

type TaskListCmd struct {
	Status   string `enum:",open,in_progress,deferred,closed" default:"" help:"Only tasks with this status."`
	Label    string `short:"l" help:"Only tasks with this label."`
	Priority *int   `short:"p" help:"Only tasks with this priority."`
}

func (c *TaskListCmd) Run(e *env) error {
	if c.Priority != nil {
		if err := workqueue.ValidatePriority(*c.Priority); err != nil {
			return err
		}
	}
	if c.Label != "" {
		if err := workqueue.ValidateLabel(c.Label); err != nil {
			return err
		}
	}
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	f := workqueue.ListFilter{Status: c.Status, Label: c.Label, Priority: c.Priority}
	if e.JSON {
		s, err := q.Read(e.ctx, wqservice.Tracker)
		if err != nil {
			return err
		}
		if ok, err := s.WriteListJSON(e.stdout, q.Policy, f, q.Now); ok || err != nil {
			return err
		}
		return writeJSON(e.stdout, s.ListItemsJSON(s.List(q.Policy, f, q.Now), q.Policy, q.Now))
	}
	tasks, s, err := q.List(e.ctx, f)
	if err != nil {
		return err
	}
	return printTasks(e, q, s, tasks)
}

// printTasks prints tasks as beads' JSON array (bd ready's) or as aligned rows.
func printTasks(e *env, q *wqservice.Service, s *workqueue.State, tasks []*workqueue.Task) error {
	if e.JSON {
		return writeJSON(e.stdout, s.ViewsJSON(tasks, q.Policy, q.Now, false))
	}
	if len(tasks) == 0 {
		fmt.Fprintln(e.stdout, "no tasks")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, t := range tasks {
		status := s.EffectiveStatus(t, q.Now)
		fmt.Fprint(tw, row(text(t.ID), fmt.Sprintf("P%d", t.Priority), status, text(t.Type), text(t.Title), labelList(t.Labels),
			taskNote(s, t, status)))
	}
	return tw.Flush()
}

// taskNote is what a row says beyond the task's fields: who holds a claimed
// task, what an open one waits for (its open blockers, or a parent that waits).
func taskNote(s *workqueue.State, t *workqueue.Task, status string) string {
	switch status {
	case workqueue.StatusInProgress:
		if a := t.Detail().Assignee; a != "" {
			return "by " + text(a)
		}
	case workqueue.StatusOpen:
		blockers, parent := s.Waits(t)
		switch {
		case len(blockers) > 0:
			return "waits for " + text(strings.Join(blockers, ", "))
		case parent != "":
			return "parent " + text(parent) + " waits"
		}
	}
	return ""
}

// labelList is labels as a row shows them: [a,b], or "" for none.
func labelList(labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	return "[" + text(strings.Join(labels, ",")) + "]"
}

type TaskUpdateCmd struct {
	ID          string   `arg:"" complete:"task" help:"Task id."`
	Title       *string  `help:"New title."`
	Description *string  `short:"d" help:"New description."`
	Design      *string  `help:"New design."`
	Acceptance  *string  `help:"New acceptance criteria."`
	Notes       *string  `help:"New notes."`
	Assignee    *string  `help:"New assignee."`
	Priority    *int     `short:"p" help:"New priority, 0 to 4."`
	Status      *string  `help:"open, in_progress, deferred or closed."`
	AddLabel    []string `sep:"none" placeholder:"LABEL" help:"Add a label (repeatable)."`
	RemoveLabel []string `sep:"none" placeholder:"LABEL" help:"Remove a label (repeatable)."`
	Parent      *string  `placeholder:"ID" complete:"task" help:"Move it under this parent (an epic, say); \"\" removes its parent."`
}

func (c *TaskUpdateCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	t, changed, err := q.Update(e.ctx, c.ID, workqueue.Update{Title: c.Title, Description: c.Description, Design: c.Design,
		Acceptance: c.Acceptance, Notes: c.Notes, Assignee: c.Assignee, Priority: c.Priority, Status: c.Status,
		AddLabels: c.AddLabel, RemoveLabels: c.RemoveLabel, Parent: c.Parent})
	if err != nil {
		return err
	}
	switch {
	case e.JSON:
		return writeJSON(e.stdout, t)
	case !changed:
		fmt.Fprintf(e.stdout, "%s unchanged: it already has those values\n", text(c.ID))
	default:
		fmt.Fprintf(e.stdout, "updated %s\n", text(c.ID))
	}
	return nil
}

type TaskCloseCmd struct {
	IDs    []string `arg:"" name:"id" complete:"task" help:"Task ids."`
	Reason string   `short:"r" help:"Why it is closed."`
	Force  bool     `help:"Close a task another actor holds under a live claim (admins only)."`
}

func (c *TaskCloseCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	out, err := q.Close(e.ctx, c.IDs, c.Reason, c.Force)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	for _, t := range out {
		fmt.Fprintf(e.stdout, "closed %s\n", text(t.ID))
	}
	return nil
}

type TaskReopenCmd struct {
	ID string `arg:"" complete:"task" help:"Task id."`
}

func (c *TaskReopenCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	t, err := q.Reopen(e.ctx, []string{c.ID}, "")
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, t[0])
	}
	fmt.Fprintf(e.stdout, "reopened %s\n", text(c.ID))
	return nil
}

type TaskDepCmd struct {
	Add TaskDepAddCmd `cmd:"" help:"Make ID wait for BLOCKER."`
	Rm  TaskDepRmCmd  `cmd:"" help:"Remove that dependency."`
}

type TaskDepAddCmd struct {
	ID      string `arg:"" complete:"task" help:"The task that waits."`
	Blocker string `arg:"" help:"The task it waits for."`
}

func (c *TaskDepAddCmd) Run(e *env) error {
	return depChange(e, c.ID, c.Blocker, "added", (*wqservice.Service).AddDep)
}

type TaskDepRmCmd struct {
	ID      string `arg:"" complete:"task" help:"The task that waits."`
	Blocker string `arg:"" help:"The task it waits for."`
}

func (c *TaskDepRmCmd) Run(e *env) error {
	return depChange(e, c.ID, c.Blocker, "removed", (*wqservice.Service).RemoveDep)
}

func depChange(e *env, id, blocker, verb string, change func(*wqservice.Service, context.Context, string, string) (string, string, error)) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	if _, _, err := change(q, e.ctx, id, blocker); err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, map[string]string{"id": id, "blocker": blocker, "dependency": verb})
	}
	if verb == "added" {
		fmt.Fprintf(e.stdout, "%s now waits for %s\n", id, blocker)
	} else {
		fmt.Fprintf(e.stdout, "%s no longer waits for %s\n", id, blocker)
	}
	return nil
}

type TaskCommentCmd struct {
	ID   string `arg:"" complete:"task" help:"Task id."`
	Text string `arg:"" help:"The comment."`
}

func (c *TaskCommentCmd) Run(e *env) error {
	q, err := e.workqueue()
	if err != nil {
		return err
	}
	comment, err := q.Comment(e.ctx, c.ID, c.Text)
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, comment)
	}
	fmt.Fprintf(e.stdout, "commented on %s\n", text(c.ID))
	return nil
}
