package bdcli

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spoolhq/spool/internal/cliout"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// bd's commands that change tasks: create, update, close, reopen, comments
// add, label add/remove/list and dep add/remove. Each is one append.

type bdCreateCmd struct {
	Title       string   `arg:"" optional:"" help:"The issue's title."`
	TitleFlag   string   `name:"title" help:"The title (instead of the argument)."`
	Description string   `short:"d" help:"Description."`
	Design      string   `help:"Design notes."`
	Acceptance  string   `help:"Acceptance criteria."`
	Notes       string   `help:"Notes."`
	Priority    string   `short:"p" default:"2" help:"0-4 or P0-P4."`
	Type        string   `short:"t" default:"task" help:"task, bug, feature, epic or chore."`
	Assignee    string   `short:"a" help:"Assignee."`
	Labels      []string `short:"l" help:"Labels (comma-separated)."`
	Label       []string `hidden:"" help:"Alias for --labels."`
	Parent      string   `help:"Parent issue (an epic, say)."`
	Deps        []string `help:"Dependencies, comma-separated: ID (blocks), or TYPE:ID (blocks, parent-child, related, discovered-from, …)."`
	Silent      bool     `help:"Print only the new issue's id."`
	ExternalRef string   `name:"external-ref" help:"A reference to the issue in another system (gh-9, jira-ABC)."`
	ID          string   `name:"id" help:"Refused: not supported by spool."`
	Template    string   `name:"from-template" help:"Refused: not supported by spool."`
}

func (c *bdCreateCmd) Run(b *bdEnv) error {
	switch {
	case c.Template != "":
		return notSupported("create --from-template", bdRefusals["template"])
	case c.ID != "":
		return notSupported("create --id", "ids are hashes of this clone's writer id, the time and the title, so that clones create issues offline without colliding; "+
			"one given by hand could collide (bd import of a JSONL file keeps the ids it has)")
	}
	title := cmp.Or(c.TitleFlag, c.Title)
	prio, err := bdPriority(c.Priority)
	if err != nil {
		return err
	}
	c.Type = bdType(c.Type)
	var deps []string
	var links []workqueue.Link
	parent := c.Parent
	for _, d := range c.Deps {
		kind, id, ok := strings.Cut(strings.TrimSpace(d), ":")
		if !ok {
			kind, id = workqueue.DepBlocks, kind
		}
		switch kind {
		case workqueue.DepBlocks:
			deps = append(deps, id)
		case workqueue.DepParentChild:
			if parent != "" && parent != id {
				return bdUsage("--deps %s: a task has one parent in spool, and it is %s", d, parent)
			}
			parent = id
		default:
			if err := workqueue.CheckDepType(kind); err != nil {
				return err
			}
			links = append(links, workqueue.Link{ID: id, Type: kind})
		}
	}
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	n := workqueue.NewTask{Title: title, Description: c.Description, Design: c.Design, Acceptance: c.Acceptance, Notes: c.Notes,
		ExternalRef: c.ExternalRef, Assignee: c.Assignee, Owner: bdOwner(b, q), Priority: prio, Type: c.Type, Labels: append(c.Labels, c.Label...),
		Deps: deps, Parent: parent, Links: links}
	t, err := q.Add(b.ctx, n)
	if err != nil {
		return err
	}
	t = workqueue.Beads(t)
	switch {
	case c.Silent:
		fmt.Fprintln(b.stdout, t.ID)
	case b.JSON:
		out, err := cliout.JSONCompact(t)
		if err != nil {
			return err
		}
		fmt.Fprintln(b.stdout, string(out))
	default:
		fmt.Fprintf(b.stdout, "✓ Created issue: %s\n  Title: %s\n  Priority: P%d\n  Status: %s\n", t.ID, cliout.Text(t.Title), t.Priority, t.Status)
	}
	return nil
}

type bdQCmd struct {
	Title    []string `arg:"" help:"The issue's title (the words joined)."`
	Priority string   `short:"p" default:"2" help:"0-4 or P0-P4."`
	Type     string   `short:"t" default:"task" help:"task, bug, feature, epic or chore."`
	Labels   []string `short:"l" help:"Labels (comma-separated)."`
}

// Run is bd q, quick capture: create, and print the id alone. bd's q
// records no creator or owner; spool records who made every issue.
func (c *bdQCmd) Run(b *bdEnv) error {
	prio, err := bdPriority(c.Priority)
	if err != nil {
		return err
	}
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	t, err := q.Add(b.ctx, workqueue.NewTask{Title: strings.Join(c.Title, " "), Priority: prio, Type: bdType(c.Type), Labels: c.Labels})
	if err != nil {
		return err
	}
	fmt.Fprintln(b.stdout, t.ID)
	return nil
}

// bdType is a type as bd's IssueType.Normalize has it: its aliases of
// feature, in any case.
func bdType(t string) string {
	switch strings.ToLower(t) {
	case "enhancement", "feat":
		return "feature"
	}
	return t
}

// bdOwner is who bd create records as the owner: $GIT_AUTHOR_EMAIL, then
// git user.email (bd's getOwner), whoever the actor is.
func bdOwner(b *bdEnv, q *wqservice.Service) string {
	if email := strings.TrimSpace(os.Getenv("GIT_AUTHOR_EMAIL")); email != "" {
		return email
	}
	return git.UserEmail(b.ctx, q.Store.Repo)
}

type bdUpdateCmd struct {
	IDs         []string `arg:"" name:"id" help:"Issue ids."`
	Status      string   `short:"s" help:"open, in_progress (claims it under a lease), blocked, deferred or closed."`
	Claim       bool     `help:"Claim it: in_progress, assigned to you (fails if another actor holds it)."`
	Priority    *string  `short:"p" help:"0-4 or P0-P4."`
	Title       *string  `help:"New title."`
	Description *string  `short:"d" help:"New description."`
	Design      *string  `help:"New design."`
	Acceptance  *string  `help:"New acceptance criteria."`
	AcceptCrit  *string  `name:"acceptance-criteria" hidden:""`
	Notes       *string  `help:"New notes."`
	Assignee    *string  `short:"a" help:"New assignee; with in_progress, who the claim is for."`
	AddLabel    []string `name:"add-label" help:"Add labels."`
	RemoveLabel []string `name:"remove-label" help:"Remove labels."`
	SetLabels   []string `name:"set-labels" help:"Replace every label."`
	Parent      *string  `help:"New parent issue ID (reparents the issue; \"\" removes its parent)."`
	Reason      string   `help:"Why: the close reason with --status closed, the block reason with blocked."`
	ExternalRef *string  `name:"external-ref" help:"New reference to the issue in another system (\"\" clears it)."`
}

func (c *bdUpdateCmd) Run(b *bdEnv) error {
	status := c.Status
	if c.Claim {
		if status != "" && status != workqueue.StatusInProgress {
			return bdUsage("--claim sets in_progress; it cannot be combined with --status %s", status)
		}
		status = workqueue.StatusInProgress
	}
	if status != "" && !slices.Contains(workqueue.BeadsStatuses, status) {
		return fault.New(workqueue.CodeInvalidStatus, nil, fmt.Sprintf("invalid status: %s", status), "status", status)
	}
	u := workqueue.Update{Title: c.Title, Description: c.Description, Design: c.Design, Acceptance: c.Acceptance, Notes: c.Notes,
		ExternalRef: c.ExternalRef, AddLabels: c.AddLabel, RemoveLabels: c.RemoveLabel, SetLabels: c.SetLabels, Parent: c.Parent}
	if u.Acceptance == nil {
		u.Acceptance = c.AcceptCrit
	}
	if c.Priority != nil {
		p, err := bdPriority(*c.Priority)
		if err != nil {
			return err
		}
		u.Priority = &p
	}
	worker := ""
	if c.Assignee != nil {
		if status == workqueue.StatusInProgress {
			worker = *c.Assignee // the claim assigns it
		} else {
			u.Assignee = c.Assignee
		}
	}
	if u.Empty() && status == "" {
		return fault.Usagef(workqueue.CodeNothingToUpdate, "no updates specified")
	}
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	out, err := q.Change(b.ctx, c.IDs, u, status, worker, c.Reason)
	if err != nil {
		return err
	}
	return b.printIssues(out, func(t workqueue.TaskJSON) string { return "✓ Updated issue: " + cliout.Text(t.ID) })
}

type bdCloseCmd struct {
	IDs        []string `arg:"" name:"id" help:"Issue ids."`
	Reason     string   `short:"r" help:"Why it is closed."`
	Resolution string   `hidden:""`
	Message    string   `short:"m" hidden:""`
}

func (c *bdCloseCmd) Run(b *bdEnv) error {
	reason := cmp.Or(c.Reason, c.Resolution, c.Message, "Closed")
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	out, err := q.Finish(b.ctx, c.IDs, reason)
	if err != nil {
		return err
	}
	return b.printIssues(out, func(t workqueue.TaskJSON) string {
		return fmt.Sprintf("✓ Closed %s: %s", cliout.Text(t.ID), cliout.Text(t.CloseReason))
	})
}

type bdReopenCmd struct {
	IDs    []string `arg:"" name:"id" help:"Issue ids."`
	Reason string   `short:"r" help:"Why it is reopened (recorded in task.reopened)."`
}

func (c *bdReopenCmd) Run(b *bdEnv) error {
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	out, err := q.Reopen(b.ctx, c.IDs, c.Reason)
	if err != nil {
		return err
	}
	return b.printIssues(out, func(t workqueue.TaskJSON) string { return "↻ Reopened " + cliout.Text(t.ID) })
}

// bdCommentCmd is bd's older "comment ID TEXT".
type bdCommentCmd struct {
	Args []string `arg:"" help:"ID TEXT."`
	File string   `short:"f" help:"Read the text from this file."`
}

func (c *bdCommentCmd) Run(b *bdEnv) error { return addComment(b, c.Args, c.File) }

// addComment is comments add ID TEXT (or ID -f FILE).
func addComment(b *bdEnv, args []string, file string) error {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return bdUsage("reading %s: %v", file, err)
		}
		args = append(args, string(data))
	}
	if len(args) != 2 {
		return bdUsage("comments add takes an issue id and the comment's text")
	}
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	cm, err := q.Comment(b.ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, cm)
	}
	fmt.Fprintf(b.stdout, "Comment added to %s\n", cm.IssueID)
	return nil
}

type bdLabelCmd struct {
	Add     bdLabelAddCmd     `cmd:"" help:"Add a label: add ID... LABEL."`
	Remove  bdLabelRemoveCmd  `cmd:"" help:"Remove a label: remove ID... LABEL."`
	List    bdLabelListCmd    `cmd:"" help:"List an issue's labels."`
	ListAll bdLabelListAllCmd `cmd:"" name:"list-all" help:"List every label with how many issues have it."`
}

type bdLabelAddCmd struct {
	Args []string `arg:"" help:"Issue ids, then the label."`
}

func (c *bdLabelAddCmd) Run(b *bdEnv) error { return changeLabel(b, c.Args, true) }

type bdLabelRemoveCmd struct {
	Args []string `arg:"" help:"Issue ids, then the label."`
}

func (c *bdLabelRemoveCmd) Run(b *bdEnv) error { return changeLabel(b, c.Args, false) }

// changeLabel adds or removes the last of args on the issues before it.
func changeLabel(b *bdEnv, args []string, add bool) error {
	if len(args) < 2 {
		return bdUsage("label add and label remove take issue ids, then a label")
	}
	label := args[len(args)-1]
	if err := workqueue.ValidateLabel(label); err != nil {
		return err
	}
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	u, verb, done := workqueue.Update{AddLabels: []string{label}}, "added", "✓ Added label '%s' to %s"
	if !add {
		u, verb, done = workqueue.Update{RemoveLabels: []string{label}}, "removed", "✓ Removed label '%s' from %s"
	}
	tasks, err := q.Change(b.ctx, args[:len(args)-1], u, "", "", "")
	if err != nil {
		return err
	}
	type result struct {
		IssueID string `json:"issue_id"`
		Label   string `json:"label"`
		Status  string `json:"status"`
	}
	var out []result
	for _, t := range tasks {
		out = append(out, result{t.ID, label, verb})
	}
	if b.JSON {
		return cliout.WriteJSON(b.stdout, out)
	}
	for _, r := range out {
		fmt.Fprintf(b.stdout, done+"\n", cliout.Text(label), r.IssueID)
	}
	return nil
}

type bdLabelListCmd struct {
	ID string `arg:"" help:"Issue id."`
}

func (c *bdLabelListCmd) Run(b *bdEnv) error {
	q, st, err := b.tracker(false)
	if err != nil {
		return err
	}
	ids, err := q.Resolve(st, []string{c.ID})
	if err != nil {
		return err
	}
	t := st.Task(ids[0])
	if t == nil {
		return workqueue.NoTask(ids[0])
	}
	// As the task has them: bd's view turns the blocked label into the
	// blocked status, and a label list must still show it.
	labels := cliout.NonNil(st.View(t, q.Policy, q.Now).Labels)
	if b.JSON {
		return cliout.WriteJSON(b.stdout, labels)
	}
	if len(labels) == 0 {
		fmt.Fprintf(b.stdout, "\n%s has no labels\n", ids[0])
		return nil
	}
	fmt.Fprintf(b.stdout, "\n🏷 Labels for %s:\n", ids[0])
	for _, l := range labels {
		fmt.Fprintf(b.stdout, "  - %s\n", cliout.Text(l))
	}
	return nil
}

type bdDepCmd struct {
	Add    bdDepAddCmd    `cmd:"" help:"ISSUE depends on DEPENDS-ON (blocks, or another --type)."`
	Remove bdDepRemoveCmd `cmd:"" aliases:"rm" help:"Remove every dependency of ISSUE on DEPENDS-ON."`
	Tree   bdDepTreeCmd   `cmd:"" help:"Show the dependency tree of an issue."`
	Cycles bdDepCyclesCmd `cmd:"" help:"Detect dependency cycles."`
}

type bdDepAddCmd struct {
	ID        string `arg:"" help:"The issue that depends."`
	DependsOn string `arg:"" name:"depends-on" help:"The issue it depends on."`
	Type      string `short:"t" default:"blocks" help:"blocks (waits for it), parent-child (its child), or a link that blocks nothing: related, discovered-from, duplicates, supersedes, …"`
}

func (c *bdDepAddCmd) Run(b *bdEnv) error { return changeDep(b, c.ID, c.DependsOn, c.Type, true) }

type bdDepRemoveCmd struct {
	ID        string `arg:"" help:"The issue that depends."`
	DependsOn string `arg:"" name:"depends-on" help:"The issue it depends on."`
}

func (c *bdDepRemoveCmd) Run(b *bdEnv) error { return changeDep(b, c.ID, c.DependsOn, "", false) }

// changeDep adds "id depends on dependsOn" of type typ, or removes every
// dependency of id on dependsOn.
func changeDep(b *bdEnv, id, dependsOn, typ string, add bool) error {
	q, err := b.queue(true)
	if err != nil {
		return err
	}
	status := "removed"
	if add {
		status = "added"
		id, dependsOn, err = q.AddDepOf(b.ctx, id, dependsOn, typ)
	} else {
		id, dependsOn, err = q.RemoveDeps(b.ctx, id, dependsOn)
	}
	if err != nil {
		return err
	}
	result := map[string]string{"issue_id": id, "depends_on_id": dependsOn, "status": status}
	if add {
		result["type"] = typ
	}
	if b.JSON {
		out, err := cliout.JSONCompact(result)
		if err != nil {
			return err
		}
		fmt.Fprintln(b.stdout, string(out))
		return nil
	}
	if add {
		fmt.Fprintf(b.stdout, "✓ Added dependency: %s depends on %s (%s)\n", id, dependsOn, cliout.Text(typ))
	} else {
		fmt.Fprintf(b.stdout, "✓ Removed dependency: %s no longer depends on %s\n", id, dependsOn)
	}
	return nil
}
