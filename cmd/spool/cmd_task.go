package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
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
	Priority    int      `short:"p" default:"2" help:"0 (most urgent) to 4."`
	Type        string   `short:"t" default:"task" enum:"task,bug,feature,epic,chore" help:"task, bug, feature, epic or chore."`
	Label       []string `short:"l" sep:"none" placeholder:"LABEL" help:"A label (repeatable)."`
	Dep         []string `sep:"none" placeholder:"ID" complete:"task" help:"A task this one waits for (repeatable)."`
	Parent      string   `placeholder:"ID" complete:"task" help:"The parent task (an epic, say)."`
}

func (c *TaskAddCmd) Run(e *env) error {
	n := workqueue.NewTask{Title: c.Title, Description: c.Description, Priority: c.Priority, Type: c.Type,
		Labels: c.Label, Deps: c.Dep, Parent: c.Parent}
	if err := n.Validate(); err != nil {
		return err
	}
	q, err := e.queue()
	if err != nil {
		return err
	}
	writer, err := q.st.Log.WriterID()
	if err != nil {
		return err
	}
	prefix := q.st.Config.String("ids.prefix")
	actor, err := e.actor(e.ctx, q.st.Repo)
	if err != nil {
		return err
	}
	// Decide on the projection of ids: adding a task decodes no tasks.
	events, _, err := q.st.Write(e.ctx, q.now, actor, []string{workqueue.IDsName}, func(v *projections.View) ([]eventlog.Draft, error) {
		d, _, err := workqueue.AddTask(v.Get(workqueue.IDsName).(*workqueue.IDsProjection), n, prefix, writer, q.now)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return err
	}
	created := workqueue.NewState()
	created.Apply(&events[0])
	t := created.Tasks[events[0].Subject]
	if e.JSON {
		return writeJSON(e.stdout, created.View(t, q.policy, q.now, false))
	}
	fmt.Fprintf(e.stdout, "created %s: %s\n", t.ID, text(t.Title))
	return nil
}

type TaskShowCmd struct {
	IDs []string `arg:"" name:"id" complete:"task" help:"Task ids."`
}

func (c *TaskShowCmd) Run(e *env) error {
	q, s, err := e.readQueue(bothSides)
	if err != nil {
		return err
	}
	var out []workqueue.TaskJSON
	for _, id := range c.IDs {
		t := s.Tasks[id]
		if t == nil {
			return fault.NotFound("task", id)
		}
		out = append(out, s.View(t, q.policy, q.now, true))
	}
	if e.JSON {
		return writeJSON(e.stdout, out)
	}
	for i, t := range out {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printTask(e, t, s)
		if h := s.History[t.ID]; h != nil {
			fmt.Fprint(e.stdout, "queue        ")
			printEntry(e, q.policy.HistoryView(*h, q.now), q.now)
		}
	}
	return nil
}

func printTask(e *env, t workqueue.TaskJSON, s *workqueue.State) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, row(t.ID, text(t.Title)))
	fmt.Fprint(tw, row("status", t.Status))
	fmt.Fprint(tw, row("priority", fmt.Sprintf("P%d", t.Priority)))
	fmt.Fprint(tw, row("type", text(t.IssueType)))
	if len(t.Labels) > 0 {
		fmt.Fprint(tw, row("labels", text(strings.Join(t.Labels, ", "))))
	}
	if t.Assignee != "" {
		fmt.Fprint(tw, row("assignee", text(t.Assignee)))
	}
	fmt.Fprint(tw, row("created", fmtTime(&t.CreatedAt)+" by "+text(orDash(t.CreatedBy))))
	if t.ClosedAt != nil {
		fmt.Fprint(tw, row("closed", strings.TrimSpace(fmtTime(t.ClosedAt)+" "+text(t.CloseReason))))
	}
	statusOf := func(id string) string {
		if b := s.Tasks[id]; b != nil {
			return b.Status
		}
		return "?"
	}
	for _, d := range t.Dependencies {
		relation := "waits for" // a "blocks" edge: the task it depends on blocks this one
		if d.Type == "parent-child" {
			relation = "parent"
		}
		fmt.Fprint(tw, row(relation, text(d.DependsOnID)+" ("+statusOf(d.DependsOnID)+")"))
	}
	blocks, children := s.Dependents(t.ID)
	for _, id := range blocks {
		fmt.Fprint(tw, row("blocks", text(id)+" ("+statusOf(id)+")"))
	}
	for _, id := range children {
		fmt.Fprint(tw, row("child", text(id)+" ("+statusOf(id)+")"))
	}
	if t.Description != "" {
		for i, line := range textLines(t.Description) {
			label := ""
			if i == 0 {
				label = "description"
			}
			fmt.Fprint(tw, row(label, line))
		}
	}
	tw.Flush()
	for _, c := range t.Comments {
		for i, line := range textLines(c.Text) {
			if i == 0 {
				fmt.Fprintf(e.stdout, "  %s %s: %s\n", fmtTime(&c.CreatedAt), text(c.Author), line)
			} else {
				fmt.Fprintf(e.stdout, "    %s\n", line)
			}
		}
	}
}

type TaskListCmd struct {
	Status   string `enum:",open,in_progress,deferred,closed" default:"" help:"Only tasks with this status."`
	Label    string `short:"l" help:"Only tasks with this label."`
	Priority *int   `short:"p" help:"Only tasks with this priority."`
}

func (c *TaskListCmd) Run(e *env) error {
	if c.Priority != nil && (*c.Priority < 0 || *c.Priority > workqueue.MaxPriority) {
		return fault.New(fault.CodeInvalidPriority, nil, fmt.Sprintf("priority must be 0 (most urgent) to 4, got %d", *c.Priority), "priority", *c.Priority)
	}
	if c.Label != "" {
		if err := workqueue.ValidateLabel(c.Label); err != nil {
			return err
		}
	}
	q, s, err := e.readQueue(tracker)
	if err != nil {
		return err
	}
	tasks := s.List(q.policy, workqueue.ListFilter{Status: c.Status, Label: c.Label, Priority: c.Priority}, q.now)
	return printTasks(e, q, s, tasks)
}

// printTasks prints tasks as beads' JSON array or as aligned rows.
func printTasks(e *env, q *queue, s *workqueue.State, tasks []*workqueue.Task) error {
	if e.JSON {
		out := make([]workqueue.TaskJSON, 0, len(tasks))
		for _, t := range tasks {
			out = append(out, s.View(t, q.policy, q.now, false))
		}
		return writeJSON(e.stdout, out)
	}
	if len(tasks) == 0 {
		fmt.Fprintln(e.stdout, "no tasks")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, t := range tasks {
		labels := ""
		if len(t.Labels) > 0 {
			labels = "[" + text(strings.Join(t.Labels, ",")) + "]"
		}
		fmt.Fprint(tw, row(text(t.ID), fmt.Sprintf("P%d", t.Priority), s.EffectiveStatus(t, q.policy, q.now), text(t.Type), text(t.Title), labels))
	}
	return tw.Flush()
}

type TaskUpdateCmd struct {
	ID          string   `arg:"" complete:"task" help:"Task id."`
	Title       *string  `help:"New title."`
	Description *string  `short:"d" help:"New description."`
	Priority    *int     `short:"p" help:"New priority, 0 to 4."`
	Status      *string  `help:"open, in_progress, deferred or closed."`
	AddLabel    []string `sep:"none" placeholder:"LABEL" help:"Add a label (repeatable)."`
	RemoveLabel []string `sep:"none" placeholder:"LABEL" help:"Remove a label (repeatable)."`
}

func (c *TaskUpdateCmd) Run(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	u := workqueue.Update{Title: c.Title, Description: c.Description, Priority: c.Priority, Status: c.Status,
		AddLabels: c.AddLabel, RemoveLabels: c.RemoveLabel}
	if err := u.Validate(); err != nil {
		return err // usage errors before taking the lock
	}
	events, s, err := q.write(tracker, func(s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.UpdateTask(s, c.ID, u)
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, s.View(s.Tasks[c.ID], q.policy, q.now, false))
	}
	if len(events) == 0 {
		fmt.Fprintf(e.stdout, "%s unchanged: it already has those values\n", c.ID)
		return nil
	}
	fmt.Fprintf(e.stdout, "updated %s\n", c.ID)
	return nil
}

type TaskCloseCmd struct {
	IDs    []string `arg:"" name:"id" complete:"task" help:"Task ids."`
	Reason string   `short:"r" help:"Why it is closed."`
}

func (c *TaskCloseCmd) Run(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	_, s, err := q.write(tracker, func(s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.CloseTasks(s, c.IDs, c.Reason)
	})
	if err != nil {
		return err
	}
	if e.JSON {
		out := make([]workqueue.TaskJSON, 0, len(c.IDs))
		for _, id := range c.IDs {
			out = append(out, s.View(s.Tasks[id], q.policy, q.now, false))
		}
		return writeJSON(e.stdout, out)
	}
	for _, id := range c.IDs {
		fmt.Fprintf(e.stdout, "closed %s\n", id)
	}
	return nil
}

type TaskReopenCmd struct {
	ID string `arg:"" complete:"task" help:"Task id."`
}

func (c *TaskReopenCmd) Run(e *env) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	_, s, err := q.write(tracker, func(s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Reopen(s, c.ID)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		return writeJSON(e.stdout, s.View(s.Tasks[c.ID], q.policy, q.now, false))
	}
	fmt.Fprintf(e.stdout, "reopened %s\n", c.ID)
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
	return depChange(e, c.ID, c.Blocker, "added", workqueue.AddDep)
}

type TaskDepRmCmd struct {
	ID      string `arg:"" complete:"task" help:"The task that waits."`
	Blocker string `arg:"" help:"The task it waits for."`
}

func (c *TaskDepRmCmd) Run(e *env) error {
	return depChange(e, c.ID, c.Blocker, "removed", workqueue.RemoveDep)
}

func depChange(e *env, id, blocker, verb string, decide func(*workqueue.State, string, string) (eventlog.Draft, error)) error {
	q, err := e.queue()
	if err != nil {
		return err
	}
	if _, _, err := q.write(tracker, func(s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := decide(s, id, blocker)
		return []eventlog.Draft{d}, err
	}); err != nil {
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
	q, err := e.queue()
	if err != nil {
		return err
	}
	events, _, err := q.write(tracker, func(s *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.AddComment(s, c.ID, c.Text)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return err
	}
	if e.JSON {
		ev := events[0]
		return writeJSON(e.stdout, workqueue.CommentJSON{Author: ev.Actor, Text: c.Text, CreatedAt: ev.At})
	}
	fmt.Fprintf(e.stdout, "commented on %s\n", c.ID)
	return nil
}
