package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/fleet"
	"github.com/spoolhq/spool/internal/jobs"
	jobservice "github.com/spoolhq/spool/internal/jobs/service"
	"github.com/spoolhq/spool/internal/mergequeue"
	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
	orchservice "github.com/spoolhq/spool/internal/orchestrator/service"
	planservice "github.com/spoolhq/spool/internal/plans/service"
	prdservice "github.com/spoolhq/spool/internal/prdqueue/service"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
	"github.com/spoolhq/spool/projections"
)

// Sets are the allow-lists --tools names: read (what changes nothing),
// agent (what the orchestrator's trust boundary lets an agent do: read; it
// reports by its exit status and output, and its guard refuses any append)
// and all.
var Sets = map[string][]string{
	"read":  {"ready", "show", "stats", "merge_list", "merge_status", "job_list", "job_explain", "prd_show", "prd_report", "orchestrator_status", "status", "log"},
	"agent": {"ready", "show", "stats", "merge_list", "merge_status", "job_list", "job_explain", "prd_show", "prd_report", "orchestrator_status", "status", "log"},
	"all":   nil, // every tool: ToolNames, which Resolve reads (the table is made only when needed)
}

// ToolNames is every tool, in the table's order.
func ToolNames() []string {
	var out []string
	for _, t := range toolTable() {
		out = append(out, t.name)
	}
	return out
}

// toolTable is every tool. It is made on first use, not at start-up:
// only spool mcp needs it.
var toolTable = sync.OnceValue(func() []*tool {
	return []*tool{
		// The work queue.
		def("ready", "What next could claim now, most urgent first (spool ready --json).", false, ready),
		def("next", "Claim the most urgent eligible task under a lease (spool next --json); result null when nothing is eligible. Decided under the log's lock: two agents never get the same task.", true, next),
		def("heartbeat", "Extend the lease of a task you claimed (spool heartbeat).", true, heartbeat),
		def("done", "Record a successful attempt on a task you claimed and close it (spool done).", true, done),
		def("fail", "Record a failed attempt on a task you claimed; the queue's policy retries, backs off, demotes or blocks it (spool fail).", true, fail),
		def("show", "Tasks with their dependencies, dependents and comments (spool task show --json).", false, show),
		def("create", "Create a task (spool task add --json).", true, create),
		def("update", "Change a task's fields, status or labels (spool task update --json).", true, update),
		def("comment", "Comment on a task: progress and findings (spool task comment --json).", true, comment),
		def("dep_add", "Make a task wait for another (spool task dep add): id waits for blocker.", true, depAdd),
		def("block", "Mark a task Blocked by hand: never ready until unblocked (spool block).", true, block),
		def("unblock", "Clear Blocked (spool unblock).", true, unblock),
		def("stats", "Count the queue: completed, failed, in backoff, abandoned, blocked, working, pending, ready (spool stats --json).", false, stats),
		// The merge queue.
		def("merge_submit", "Queue a worktree's branch for the merge train (spool merge submit --json); idempotent.", true, mergeSubmit),
		def("merge_status", "One merge queue entry with its audit trail (spool merge show --json).", false, mergeStatus),
		def("merge_list", "The merge queue, pending entries first in position order (spool merge list --json).", false, mergeList),
		def("merge_cancel", "Cancel a merge queue entry (spool merge cancel --json).", true, mergeCancel),
		// The job scheduler.
		def("job_submit", "Submit a job to the scheduler (spool job submit --json).", true, jobSubmit),
		def("job_list", "The job queue in dispatch order with estimated starts (spool job list --json).", false, jobList),
		def("job_explain", "Why a job waits (spool job explain --json).", false, jobExplain),
		def("job_cancel", "Cancel a job (spool job cancel --json).", true, jobCancel),
		// The PRD queue.
		def("prd_show", "One PRD's manifest entry, gates and open questions (spool prd show --json).", false, prdShow),
		def("prd_report", "The PRD queue's reconciliation: a row per PRD and the counts (spool prd report --json).", false, prdReport),
		// The orchestrator and plans.
		def("orchestrator_status", "The orchestrator's active task and the ready queue's depth (spool orchestrator status --json).", false, orchestratorStatus),
		def("propose", "Propose tasks under a plan (spool plan feedback): validated whole and applied, or held for a person to approve; the same proposal twice makes nothing.", true, propose),
		// Context.
		def("status", "The log at a glance: events per type and writer, sync state (spool status --json).", false, status),
		def("log", "Events of the log, oldest first (spool log --json), by default the last 50 that match.", false, logEvents),
	}
})

func wq(env store.Env) *wqservice.Service { return wqservice.Open(env) }

// The work queue.

type readyIn struct {
	Labels   []string `json:"labels,omitempty" jsonschema:"only tasks with every one of these labels"`
	LabelAny []string `json:"label_any,omitempty" jsonschema:"only tasks with at least one of these labels"`
	Limit    *int     `json:"limit,omitempty" jsonschema:"at most this many tasks (default 10; 0: all)"`
}

func ready(ctx context.Context, env store.Env, in readyIn) (any, string, error) {
	limit := 10
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 0 {
		return nil, "", fault.New(CodeInvalidArguments, nil, fmt.Sprintf("limit must not be negative, got %d", limit), "tool", "ready")
	}
	if err := validLabels(in.Labels, in.LabelAny); err != nil {
		return nil, "", err
	}
	return readyList(ctx, env, workqueue.ReadyFilter{All: in.Labels, Any: in.LabelAny}, limit)
}

// readyList is ready --json: spool's tasks as bd shows them, or with a
// bd/br source each issue as the source printed it.
func readyList(ctx context.Context, env store.Env, f workqueue.ReadyFilter, limit int) (any, string, error) {
	q := wq(env)
	if !q.Native() {
		issues, err := q.ReadyBeads(ctx, f, limit)
		if err != nil {
			return nil, "", err
		}
		out := make([]json.RawMessage, 0, len(issues))
		var ids []string
		for _, b := range issues {
			out = append(out, json.RawMessage(b.Raw))
			ids = append(ids, b.ID)
		}
		return out, readyText(ids), nil
	}
	tasks, st, err := q.Ready(ctx, f, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]workqueue.TaskJSON, 0, len(tasks))
	var ids []string
	for _, t := range tasks {
		out = append(out, st.View(t, q.Policy, q.Now))
		ids = append(ids, fmt.Sprintf("%s (P%d) %s", t.ID, t.Priority, oneLine(t.Title)))
	}
	return out, readyText(ids), nil
}

func readyText(rows []string) string {
	if len(rows) == 0 {
		return "no tasks ready"
	}
	return fmt.Sprintf("%d ready: %s", len(rows), strings.Join(rows, "; "))
}

func validLabels(lists ...[]string) error {
	for _, l := range lists {
		for _, label := range l {
			if err := workqueue.ValidateLabel(label); err != nil {
				return err
			}
		}
	}
	return nil
}

type nextIn struct {
	Labels        []string `json:"labels,omitempty" jsonschema:"only tasks with these labels, besides workqueue.label"`
	ExcludeLabels []string `json:"exclude_labels,omitempty" jsonschema:"never tasks with these labels"`
	Worker        string   `json:"worker,omitempty" jsonschema:"who works on it (default: the server's actor)"`
}

func next(ctx context.Context, env store.Env, in nextIn) (any, string, error) {
	if err := validLabels(in.Labels, in.ExcludeLabels); err != nil {
		return nil, "", err
	}
	q := wq(env)
	claim, idle, err := q.Next(ctx, in.Labels, in.ExcludeLabels, in.Worker)
	switch {
	case err != nil:
		return nil, "", err
	case claim != nil:
		return claim, fmt.Sprintf("claimed %s (P%d, attempt %d, lease until %s): %s", claim.ID, claim.Priority, claim.Attempt,
			claim.LeaseUntil.Format(time.RFC3339), oneLine(claim.Title)), nil
	case !idle.At.IsZero():
		return nil, fmt.Sprintf("nothing ready; %s may be claimable at %s", idle.Task, idle.At.Format(time.RFC3339)), nil
	}
	return nil, "nothing ready", nil
}

type idIn struct {
	ID string `json:"id" jsonschema:"the task's id"`
}

func heartbeat(ctx context.Context, env store.Env, in idIn) (any, string, error) {
	until, err := wq(env).Heartbeat(ctx, in.ID)
	if err != nil {
		return nil, "", err
	}
	return map[string]any{"id": in.ID, "lease_until": until}, fmt.Sprintf("%s: lease extended to %s", in.ID, until.Format(time.RFC3339)), nil
}

type doneIn struct {
	ID     string `json:"id" jsonschema:"a task you claimed"`
	Reason string `json:"reason,omitempty" jsonschema:"the close reason (default: done)"`
}

func done(ctx context.Context, env store.Env, in doneIn) (any, string, error) {
	if in.Reason == "" {
		in.Reason = "done"
	}
	h, err := wq(env).Done(ctx, in.ID, in.Reason)
	return entry(h, err)
}

type failIn struct {
	ID    string `json:"id" jsonschema:"a task you claimed"`
	Error string `json:"error" jsonschema:"what went wrong"`
}

func fail(ctx context.Context, env store.Env, in failIn) (any, string, error) {
	h, err := wq(env).Fail(ctx, in.ID, in.Error)
	return entry(h, err)
}

// entry is a queue history entry (done, fail, block, unblock --json).
func entry(h workqueue.EntryJSON, err error) (any, string, error) {
	if err != nil {
		return nil, "", err
	}
	text := fmt.Sprintf("%s %s, attempts %d", h.ID, h.Status, h.Attempts)
	if h.LastError != "" {
		text += ", last error: " + oneLine(h.LastError)
	}
	if h.NextEligibleAt != nil {
		text += ", next eligible at " + h.NextEligibleAt.Format(time.RFC3339)
	}
	return h, text, nil
}

type showIn struct {
	IDs []string `json:"ids" jsonschema:"task ids (at least one)"`
}

func show(ctx context.Context, env store.Env, in showIn) (any, string, error) {
	if len(in.IDs) == 0 {
		return nil, "", fault.New(CodeInvalidArguments, nil, "show: ids needs at least one task id", "tool", "show")
	}
	out, _, err := wq(env).Show(ctx, in.IDs)
	if err != nil {
		return nil, "", err
	}
	var rows []string
	for _, d := range out {
		rows = append(rows, fmt.Sprintf("%s [%s, P%d] %s", d.ID, d.Status, d.Priority, oneLine(d.Title)))
	}
	return out, strings.Join(rows, "; "), nil
}

type createIn struct {
	Title       string   `json:"title" jsonschema:"the task's title"`
	Description string   `json:"description,omitempty"`
	Design      string   `json:"design,omitempty" jsonschema:"how it is to be done"`
	Acceptance  string   `json:"acceptance,omitempty" jsonschema:"when it is done"`
	Notes       string   `json:"notes,omitempty"`
	Assignee    string   `json:"assignee,omitempty"`
	Priority    *int     `json:"priority,omitempty" jsonschema:"0 (most urgent) to 4; default 2"`
	Type        string   `json:"type,omitempty" jsonschema:"task (default), bug, feature, epic or chore"`
	Labels      []string `json:"labels,omitempty"`
	Deps        []string `json:"deps,omitempty" jsonschema:"tasks this one waits for"`
	Parent      string   `json:"parent,omitempty" jsonschema:"the parent task (an epic, say)"`
}

func create(ctx context.Context, env store.Env, in createIn) (any, string, error) {
	p, typ := 2, in.Type
	if in.Priority != nil {
		p = *in.Priority
	}
	if typ == "" {
		typ = "task"
	}
	t, err := wq(env).Add(ctx, workqueue.NewTask{Title: in.Title, Description: in.Description, Design: in.Design, Acceptance: in.Acceptance,
		Notes: in.Notes, Assignee: in.Assignee, Priority: p, Type: typ, Labels: in.Labels, Deps: in.Deps, Parent: in.Parent})
	if err != nil {
		return nil, "", err
	}
	return t, fmt.Sprintf("created %s: %s", t.ID, oneLine(t.Title)), nil
}

type updateIn struct {
	ID           string   `json:"id"`
	Title        *string  `json:"title,omitempty"`
	Description  *string  `json:"description,omitempty"`
	Design       *string  `json:"design,omitempty"`
	Acceptance   *string  `json:"acceptance,omitempty"`
	Notes        *string  `json:"notes,omitempty"`
	Assignee     *string  `json:"assignee,omitempty"`
	Priority     *int     `json:"priority,omitempty" jsonschema:"0 to 4"`
	Status       *string  `json:"status,omitempty" jsonschema:"open, in_progress, deferred or closed"`
	AddLabels    []string `json:"add_labels,omitempty"`
	RemoveLabels []string `json:"remove_labels,omitempty"`
	Parent       *string  `json:"parent,omitempty" jsonschema:"move it under this parent; empty removes its parent"`
}

func update(ctx context.Context, env store.Env, in updateIn) (any, string, error) {
	t, changed, err := wq(env).Update(ctx, in.ID, workqueue.Update{Title: in.Title, Description: in.Description, Design: in.Design,
		Acceptance: in.Acceptance, Notes: in.Notes, Assignee: in.Assignee, Priority: in.Priority, Status: in.Status,
		AddLabels: in.AddLabels, RemoveLabels: in.RemoveLabels, Parent: in.Parent})
	if err != nil {
		return nil, "", err
	}
	if !changed {
		return t, in.ID + " unchanged: it already has those values", nil
	}
	return t, "updated " + in.ID, nil
}

type commentIn struct {
	ID   string `json:"id"`
	Text string `json:"text" jsonschema:"the comment"`
}

func comment(ctx context.Context, env store.Env, in commentIn) (any, string, error) {
	c, err := wq(env).Comment(ctx, in.ID, in.Text)
	if err != nil {
		return nil, "", err
	}
	return c, "commented on " + in.ID, nil
}

type depIn struct {
	ID      string `json:"id" jsonschema:"the task that waits"`
	Blocker string `json:"blocker" jsonschema:"the task it waits for"`
}

func depAdd(ctx context.Context, env store.Env, in depIn) (any, string, error) {
	if _, _, err := wq(env).AddDep(ctx, in.ID, in.Blocker); err != nil {
		return nil, "", err
	}
	return map[string]string{"id": in.ID, "blocker": in.Blocker, "dependency": "added"}, in.ID + " now waits for " + in.Blocker, nil
}

type blockIn struct {
	ID     string `json:"id"`
	Reason string `json:"reason" jsonschema:"why"`
}

func block(ctx context.Context, env store.Env, in blockIn) (any, string, error) {
	return entry(wq(env).Block(ctx, in.ID, in.Reason))
}

type unblockIn struct {
	ID            string `json:"id"`
	ResetAttempts bool   `json:"reset_attempts,omitempty" jsonschema:"also reset the attempt counters"`
}

func unblock(ctx context.Context, env store.Env, in unblockIn) (any, string, error) {
	return entry(wq(env).Unblock(ctx, in.ID, in.ResetAttempts))
}

type noIn struct{}

func stats(ctx context.Context, env store.Env, _ noIn) (any, string, error) {
	st, err := wq(env).Stats(ctx)
	if err != nil {
		return nil, "", err
	}
	return st, fmt.Sprintf("%d seen: %d completed, %d failed, %d abandoned, %d blocked, %d working, %d pending; %d ready now",
		st.TotalSeen, st.Completed, st.Failed, st.Abandoned, st.Blocked, st.Working, st.Pending, st.CurrentlyReady), nil
}

// The merge queue.

type mergeSubmitIn struct {
	Workspace  string `json:"workspace,omitempty" jsonschema:"the worktree to submit, by directory name or path (default: where the server runs)"`
	Priority   *int   `json:"priority,omitempty" jsonschema:"0 (most urgent) to 4"`
	Bead       string `json:"bead,omitempty" jsonschema:"the task id, for traceability"`
	NoPush     bool   `json:"no_push,omitempty" jsonschema:"do not push the branch to merge.remote first"`
	AutoCommit bool   `json:"auto_commit,omitempty" jsonschema:"commit uncommitted changes instead of refusing"`
}

func mergeSubmit(ctx context.Context, env store.Env, in mergeSubmitIn) (any, string, error) {
	if p := in.Priority; p != nil && (*p < mergequeue.MinPriority || *p > mergequeue.MaxPriority) {
		return nil, "", mergequeue.InvalidPriority(*p)
	}
	resp, err := mqservice.Open(env).Submit(ctx, mqservice.SubmitOptions{Workspace: in.Workspace, Priority: in.Priority, BeadID: in.Bead,
		NoPush: in.NoPush, AutoCommit: in.AutoCommit})
	if err != nil {
		return nil, "", err
	}
	text := fmt.Sprintf("entry %d %s: %s %s (ref %s)", resp.EntryID, resp.SubmissionType, resp.Workspace, resp.Branch, mergequeue.ShortRef(resp.EntryRef))
	if resp.Position != nil {
		text += fmt.Sprintf(", position %d of %d", *resp.Position, resp.PendingCount)
	}
	return resp, text, nil
}

type entryIn struct {
	Entry string `json:"entry" jsonschema:"the entry's number, or a unique prefix (4+ characters) of its entry_ref"`
}

func mergeStatus(ctx context.Context, env store.Env, in entryIn) (any, string, error) {
	mq := mqservice.Open(env)
	q, en, err := mq.Entry(ctx, in.Entry)
	if err != nil {
		return nil, "", err
	}
	shown, err := mq.Show(ctx, q, en) // as merge show: aging and every attempt's log
	if err != nil {
		return nil, "", err
	}
	return shown, fmt.Sprintf("entry %d %s: %s", en.ID, en.Status, en.Branch), nil
}

type mergeListIn struct {
	All bool `json:"all,omitempty" jsonschema:"also merged, failed_terminal and cancelled entries"`
}

func mergeList(ctx context.Context, env store.Env, in mergeListIn) (any, string, error) {
	mq := mqservice.Open(env)
	q, err := mq.Queue(ctx)
	if err != nil {
		return nil, "", err
	}
	o := mq.Order(q) // aging counted, as merge list
	entries := q.ListedIn(in.All, o)
	text := fmt.Sprintf("%d entries, %d pending", len(entries), q.PendingCount)
	if q.Frozen {
		text += "; frozen: " + oneLine(q.FrozenReason)
	}
	return rawJSON(q.ListJSONIn(entries, o)), text, nil
}

type mergeCancelIn struct {
	Entry  string `json:"entry" jsonschema:"the entry's number, or a unique prefix (4+ characters) of its entry_ref"`
	Reason string `json:"reason,omitempty" jsonschema:"why, for the audit trail"`
}

func mergeCancel(ctx context.Context, env store.Env, in mergeCancelIn) (any, string, error) {
	mq := mqservice.Open(env)
	q, en, err := mq.Cancel(ctx, in.Entry, in.Reason)
	if err != nil {
		return nil, "", err
	}
	return q.PlacedIn(en, mq.Order(q)), fmt.Sprintf("entry %d cancelled (%s)", en.ID, en.Status), nil
}

// The job scheduler.

type jobSubmitIn struct {
	Argv       []string `json:"argv" jsonschema:"the program and its arguments"`
	Name       string   `json:"name,omitempty" jsonschema:"a name (default: the program's)"`
	Priority   string   `json:"priority,omitempty" jsonschema:"urgent (admins), normal (default) or background"`
	Project    string   `json:"project,omitempty" jsonschema:"the project its slot time counts against"`
	GPUs       *int     `json:"gpus,omitempty" jsonschema:"slots it needs (default 1)"`
	Segments   *int     `json:"segments,omitempty" jsonschema:"segments (default 1): it can be paused, cancelled or yield between them"`
	StartAfter string   `json:"start_after,omitempty" jsonschema:"not before this time: RFC 3339, 2026-11-24 03:00, 03:00, or a duration such as 2h"`
	OffPeak    bool     `json:"off_peak,omitempty" jsonschema:"only inside scheduler.off_peak"`
	Every      string   `json:"every,omitempty" jsonschema:"recurring: daily, weekly or a cron expression"`
}

func jobSubmit(ctx context.Context, env store.Env, in jobSubmitIn) (any, string, error) {
	q := jobservice.Open(env)
	n := jobs.Submit{Name: in.Name, Project: in.Project, Tier: jobs.Tier(in.Priority), Slots: 1, Segments: 1, Argv: in.Argv,
		OffPeak: in.OffPeak, Every: in.Every}
	if n.Tier == "" {
		n.Tier = "normal"
	}
	if in.GPUs != nil {
		n.Slots = *in.GPUs
	}
	if in.Segments != nil {
		n.Segments = *in.Segments
	}
	if n.Slots < 1 || n.Slots > jobs.SlotLimit { // before the service, whose 0 means the default
		return nil, "", jobs.InvalidGPUs(n.Slots, 0)
	}
	if n.Segments < 1 || n.Segments > jobs.SegmentLimit {
		return nil, "", jobs.InvalidSegments(n.Segments)
	}
	if in.StartAfter != "" {
		var err error
		if n.StartAfter, err = jobs.ParseTime(in.StartAfter, env.Now, q.Policy.Zone); err != nil {
			return nil, "", err
		}
	}
	out, err := q.Submit(ctx, n)
	if err != nil {
		return nil, "", err
	}
	if out.Schedule != "" {
		return out, fmt.Sprintf("scheduled %s every %s; next at %s", out.Schedule, in.Every, out.NextAt.Format(time.RFC3339)), nil
	}
	return out, fmt.Sprintf("%s %s", out.Status, out.ID), nil
}

type jobListIn struct {
	All bool `json:"all,omitempty" jsonschema:"also the jobs that ended"`
}

func jobList(ctx context.Context, env store.Env, in jobListIn) (any, string, error) {
	q := jobservice.Open(env)
	st, err := q.Read(ctx)
	if err != nil {
		return nil, "", err
	}
	rows := st.List(q.Policy, env.Now, in.All)
	if rows == nil {
		rows = []jobs.Row{}
	}
	return rows, fmt.Sprintf("%d jobs", len(rows)), nil
}

type jobIn struct {
	Job string `json:"job" jsonschema:"the job's id"`
}

func jobExplain(ctx context.Context, env store.Env, in jobIn) (any, string, error) {
	q := jobservice.Open(env)
	st, err := q.Read(ctx)
	if err != nil {
		return nil, "", err
	}
	x, err := st.Explain(q.Policy, in.Job, env.Now)
	if err != nil {
		return nil, "", err
	}
	return x, fmt.Sprintf("%s (%s): %s; %s", x.ID, x.Tier, x.Status, strings.Join(x.Reasons, "; ")), nil
}

func jobCancel(ctx context.Context, env store.Env, in jobIn) (any, string, error) {
	j, err := jobservice.Open(env).Cancel(ctx, in.Job)
	if err != nil {
		return nil, "", err
	}
	return j, fmt.Sprintf("cancel %s: %s", j.ID, j.Status), nil
}

// The PRD queue.

type prdIn struct {
	PRD     string `json:"prd" jsonschema:"the PRD's slug"`
	Feature string `json:"feature,omitempty" jsonschema:"the feature run, when more than one has this PRD"`
}

func prdShow(ctx context.Context, env store.Env, in prdIn) (any, string, error) {
	st, err := prdservice.Open(env, env.Store.Repo.WorkTree).ReadFeature(ctx, "") // FindItem checks the feature
	if err != nil {
		return nil, "", err
	}
	it, err := st.FindItem(in.PRD, in.Feature)
	if err != nil {
		return nil, "", err
	}
	m, p := st.ManifestItem(it), st.PRDs[it.PRD]
	questions := p.OpenQuestions
	if questions == nil {
		questions = []string{}
	}
	return map[string]any{"feature_slug": it.Feature, "item": m, "prd_approval": p.PRDGate,
		"beads_approval": p.BeadsGate, "open_questions": questions, "queue_ready": st.QueueReady(it)}, fmt.Sprintf("%s %s", m.PRDSlug, m.State), nil
}

type featureIn struct {
	Feature string `json:"feature,omitempty" jsonschema:"the feature's slug (default: every feature run)"`
}

func prdReport(ctx context.Context, env store.Env, in featureIn) (any, string, error) {
	st, err := prdservice.Open(env, env.Store.Repo.WorkTree).ReadFeature(ctx, in.Feature)
	if err != nil {
		return nil, "", err
	}
	r := st.Report(in.Feature)
	return r, fmt.Sprintf("discovered %d, approved %d, queued %d, queue_failed %d", r.Counts.Discovered, r.Counts.Approved,
		r.Counts.Queued, r.Counts.QueueFailed), nil
}

// The orchestrator and plans.

func orchestratorStatus(ctx context.Context, env store.Env, _ noIn) (any, string, error) {
	status, _, err := orchservice.Open(env).Status(ctx)
	if err != nil {
		return nil, "", err
	}
	text := "current task: none"
	if a := status.CurrentTask; a != nil {
		text = fmt.Sprintf("current task: %s, attempt %d, %s", a.TaskID, a.Attempt, a.Phase)
	}
	return status, fmt.Sprintf("%s; %d ready", text, status.QueueDepth), nil
}

type proposeIn struct {
	Category   string         `json:"category" jsonschema:"what kind of finding (architecture decisions need a person's approval)"`
	PlanID     string         `json:"mapped_plan_id" jsonschema:"the plan the tasks go under"`
	Tasks      []proposedTask `json:"proposed_tasks" jsonschema:"the tasks proposed"`
	FeedbackID string         `json:"feedback_id,omitempty" jsonschema:"the pending feedback this categorizes"`
}

type proposedTask struct {
	Title        string   `json:"title"`
	Description  string   `json:"description,omitempty"`
	Priority     *int     `json:"priority,omitempty" jsonschema:"0 to 4"`
	Dependencies []string `json:"dependencies,omitempty" jsonschema:"ids of existing tasks it waits for"`
}

func propose(ctx context.Context, env store.Env, in proposeIn) (any, string, error) {
	data, err := json.Marshal(in) // the proposal as plan feedback reads it, checked whole there
	if err != nil {
		return nil, "", err
	}
	out, err := planservice.Open(env).Feedback(ctx, data)
	if err != nil {
		return nil, "", err
	}
	switch {
	case out.Held != "":
		return out, "held for approval as " + out.Held, nil
	case out.Existing:
		return out, "proposed before: nothing new", nil
	}
	return out, fmt.Sprintf("applied: %d tasks (%s)", len(out.TaskIDs), strings.Join(out.TaskIDs, ", ")), nil
}

// Context.

func status(ctx context.Context, env store.Env, _ noIn) (any, string, error) {
	st := env.Store
	v, err := st.Read(ctx, "stats")
	if err != nil {
		return nil, "", err
	}
	stats, _ := projections.As[*projections.Stats](v, projections.StatsSpec.Name)
	writer, err := st.Log.WriterID()
	if err != nil {
		return nil, "", err
	}
	synced, err := fleet.SyncStatus(ctx, st, stats.ByWriter)
	if err != nil {
		return nil, "", err
	}
	quarantined, err := st.Log.Quarantined()
	if err != nil {
		return nil, "", err
	}
	if quarantined == nil {
		quarantined = []string{}
	}
	return map[string]any{
		"root": st.Repo.Root, "log": st.Log.Dir(), "writer": writer, "events": stats.Events,
		"by_type": stats.ByType, "by_writer": stats.ByWriter, "last_lc": stats.LastLC, "last_at": stats.LastAt,
		"sync": synced, "quarantined": quarantined,
	}, fmt.Sprintf("%d events from %d writers", stats.Events, len(stats.ByWriter)), nil
}

type logIn struct {
	Types   []string `json:"types,omitempty" jsonschema:"only events of these types; patterns such as task.* work"`
	Subject string   `json:"subject,omitempty" jsonschema:"only events about this subject (a task id, merge/<id>, a job id)"`
	By      string   `json:"by,omitempty" jsonschema:"only events by this actor"`
	Since   string   `json:"since,omitempty" jsonschema:"only events at or after an RFC 3339 time, or within a duration such as 2h"`
	N       *int     `json:"n,omitempty" jsonschema:"only the last n matching events (default 50; 0: all)"`
}

func logEvents(ctx context.Context, env store.Env, in logIn) (any, string, error) {
	n := 50
	if in.N != nil {
		n = *in.N
	}
	if n < 0 {
		return nil, "", fault.New(CodeInvalidArguments, nil, fmt.Sprintf("n must not be negative, got %d", n), "tool", "log")
	}
	f, err := eventlog.ParseFilter(in.Types, in.Subject, in.By, in.Since, env.Now)
	if err != nil {
		return nil, "", fault.New(CodeInvalidArguments, err, strings.TrimPrefix(err.Error(), eventlog.ErrFilter.Error()+": "), "tool", "log")
	}
	out, _, err := env.Store.Latest(ctx, f.Subject, n, f.Match)
	if err != nil {
		return nil, "", err
	}
	return out, fmt.Sprintf("%d events", len(out)), nil
}

// oneLine keeps something a user wrote on one short line of a text.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}
