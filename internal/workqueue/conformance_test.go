package workqueue_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// The tracker, the queue's history and the id index fold the same events:
// one model of a clone drives all three.
func TestTasksConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{Spec: workqueue.Spec, NewClone: newTaskClone})
}

func TestHistoryConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{Spec: workqueue.QueueSpec, NewClone: newTaskClone})
}

func TestTaskIDsConformance(t *testing.T) {
	t.Parallel()
	projectiontest.Run(t, projectiontest.Suite{Spec: workqueue.IDsSpec, NewClone: newTaskClone})
}

// taskClone decides what spool's task and queue commands would on one
// clone, against the tasks and history it has folded.
type taskClone struct {
	s      *workqueue.State
	writer string
	pol    workqueue.Policy
}

func newTaskClone(writer string) projectiontest.Clone {
	pol := workqueue.DefaultPolicy()
	pol.Lease = 20 * time.Minute // short enough that claims expire between commands
	pol.MaxFailures = 3
	if writer[len(writer)-1]%2 == 1 { // clones may run either policy: the fold must not care
		pol.Kind = workqueue.Progressive
	}
	return &taskClone{s: workqueue.NewState(), writer: writer, pol: pol}
}

func (c *taskClone) Apply(e *eventlog.Event) { c.s.Apply(e) }

// start is when the external source's tasks were created.
var start = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

var (
	taskActors  = []string{"ada@example.com", "bob@example.com", "zoë@example.com"}
	taskTitles  = []string{"Fix the login page", "Ünïcode títle ✓", `Quote "this" and \ that`, "  padded  ", "<b>html</b> & more", "\u212aelvin in \u0130stanbul"}
	taskLabels  = []string{"backend", "ui", "urgent", "blocked", "good-first-issue", "ünï"}
	taskTexts   = []string{"", "one line", "two\nlines\n", "tab\there, emoji 🚀"}
	depTypes    = []string{"related", "discovered-from", "parent-child", "duplicates", "blocks"}
	externalIDs = []string{"bd-1", "bd-2", "bd-3", "bd-4", "bd-5", "bd-6", "bd-7", "bd-8"}
)

// Command decides one of spool's task or queue commands.
func (c *taskClone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	actor := pick(r, taskActors)
	ids := c.s.SortedIDs()
	if len(ids) < 3 || r.IntN(7) == 0 {
		drafts, err := c.add(r, ids, now)
		return actor, drafts, err
	}
	id := pick(r, ids)
	var drafts []eventlog.Draft
	var err error
	one := func(d eventlog.Draft, e error) { drafts, err = []eventlog.Draft{d}, e }
	switch r.IntN(13) {
	case 0, 1:
		drafts, err = workqueue.UpdateTask(c.s, id, c.update(r))
	case 2:
		drafts, err = workqueue.CloseTasks(c.s, []string{id}, pick(r, taskTexts))
	case 3:
		one(workqueue.Reopen(c.s, id))
	case 4:
		t := c.s.Task(id)
		switch r.IntN(5) {
		case 0:
			one(workqueue.AddDep(c.s, id, pick(r, ids)))
		case 1:
			one(workqueue.AddDepOf(c.s, id, pick(r, ids), pick(r, depTypes)))
		case 2:
			if len(t.Blockers) > 0 {
				one(workqueue.RemoveDep(c.s, id, t.Blockers[0].ID))
			}
		case 3:
			parent := "" // re-parenting, or no parent any more
			if r.IntN(3) > 0 {
				parent = pick(r, ids)
			}
			drafts, err = workqueue.UpdateTask(c.s, id, workqueue.Update{Parent: &parent})
		default:
			if len(t.Links) > 0 {
				drafts, err = workqueue.RemoveDeps(c.s, id, t.Links[0].ID)
			} else if t.Parent != "" {
				drafts, err = workqueue.RemoveDeps(c.s, id, t.Parent)
			}
		}
	case 5:
		one(workqueue.AddComment(c.s, id, pick(r, taskTexts[1:])))
	case 6, 7, 8:
		drafts, err = c.next(r, actor, now)
	case 9:
		if drafts = c.synced(r); drafts == nil {
			drafts = c.hookRan(r)
		}
	default:
		return c.finish(r, now)
	}
	return actor, drafts, err
}

func (c *taskClone) add(r *rand.Rand, ids []string, now time.Time) ([]eventlog.Draft, error) {
	n := workqueue.NewTask{Title: pick(r, taskTitles), Description: pick(r, taskTexts), Priority: r.IntN(5),
		Type: pick(r, workqueue.IssueTypes), Labels: subset(r, taskLabels)}
	if len(ids) > 0 && r.IntN(3) == 0 {
		n.Deps = []string{pick(r, ids)}
	}
	if len(ids) > 0 && r.IntN(5) == 0 {
		n.Parent = pick(r, ids)
	}
	d, _, err := workqueue.AddTask(c.s, n, "sp", c.writer, now)
	return []eventlog.Draft{d}, err
}

func (c *taskClone) update(r *rand.Rand) workqueue.Update {
	var u workqueue.Update
	switch r.IntN(5) {
	case 0:
		title := pick(r, taskTitles) + " (edited)"
		u.Title = &title
	case 1:
		text := pick(r, taskTexts)
		u.Description = &text
	case 2:
		p := r.IntN(5)
		u.Priority = &p
	case 3:
		status := pick(r, []string{workqueue.StatusOpen, workqueue.StatusDeferred, workqueue.StatusClosed})
		u.Status = &status
	}
	u.AddLabels, u.RemoveLabels = subset(r, taskLabels), subset(r, taskLabels)
	return u
}

// next claims for a worker: the native tracker's ready tasks, or now and
// then an external source's (history without tasks).
func (c *taskClone) next(r *rand.Rand, actor string, now time.Time) ([]eventlog.Draft, error) {
	worker := fmt.Sprintf("agent-%d", r.IntN(3))
	var g workqueue.Gate
	if r.IntN(3) == 0 {
		var cands []workqueue.Candidate
		for i, id := range externalIDs {
			cands = append(cands, workqueue.Candidate{ID: id, Title: "external " + id, Priority: i % 5, IssueType: "task", CreatedAt: start})
		}
		drafts, _, err := workqueue.Next(c.s, cands, false, c.pol, g, worker, actor, now)
		return append(drafts, workqueue.SyncRequests(drafts, "")...), err
	}
	if r.IntN(4) == 0 {
		g.Require = []string{pick(r, taskLabels)}
	}
	drafts, _, err := workqueue.Next(c.s, nil, true, c.pol, g, worker, actor, now)
	return drafts, err
}

// finish acts on an entry of the queue: heartbeat, done or fail by whoever
// holds the claim, or retry, block and unblock.
func (c *taskClone) finish(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	var hids, working []string
	for h := range c.s.Entries() {
		id := h.ID
		hids = append(hids, id)
		if h.Status == workqueue.HistWorking {
			working = append(working, id)
		}
	}
	if len(hids) == 0 {
		return "", nil, nil
	}
	if len(working) > 0 && r.IntN(4) > 0 { // mostly the claims a worker holds
		hids = working
	}
	sort.Strings(hids)
	h := c.s.Entry(pick(r, hids))
	actor := h.Actor
	if actor == "" || r.IntN(8) == 0 {
		actor = pick(r, taskActors)
	}
	reason := pick(r, taskTexts)
	drafts, err := c.decideOn(r, h, actor, reason, now)
	if err == nil && slices.Contains(externalIDs, h.ID) {
		// The queue's decisions on a bd/br task carry the requests that
		// tell bd/br, in the same append (workqueue/service).
		drafts = append(drafts, workqueue.SyncRequests(drafts, reason)...)
	}
	if err == nil {
		// And an abandonment or a Blocked the request for its hook.
		var reqs []eventlog.Draft
		reqs, err = workqueue.HookRequests(drafts, workqueue.Hooks{workqueue.HookAbandoned: {"notify"}, workqueue.HookBlocked: {"notify"}})
		drafts = append(drafts, reqs...)
	}
	return actor, drafts, err
}

// hookRan records that a hook request started, or how it finished, as the
// service does around running it.
func (c *taskClone) hookRan(r *rand.Rand) []eventlog.Draft {
	ids := c.s.WithHooks()
	if len(ids) == 0 {
		return nil
	}
	id := ids[0] // the first task with a hook to run
	p := c.s.Entry(id).Hooks[0]
	if r.IntN(2) == 0 && !p.Started {
		return []eventlog.Draft{{Type: workqueue.TypeHookStarted, Subject: id, Data: workqueue.HookRequestData{Request: p.Request}}}
	}
	code := r.IntN(3)
	return []eventlog.Draft{{Type: workqueue.TypeHookFinished, Subject: id, Data: workqueue.HookFinishedData{Request: p.Request, ExitCode: &code}}}
}

func (c *taskClone) decideOn(r *rand.Rand, h *workqueue.Entry, actor, reason string, now time.Time) ([]eventlog.Draft, error) {
	one := func(d eventlog.Draft, err error) ([]eventlog.Draft, error) { return []eventlog.Draft{d}, err }
	switch r.IntN(7) {
	case 0:
		d, _, err := workqueue.Heartbeat(c.s, c.pol, h.ID, actor, now)
		return []eventlog.Draft{d}, err
	case 1, 2:
		return workqueue.Done(c.s, c.pol, h.ID, actor, reason, now)
	case 3, 4:
		return workqueue.Fail(c.s, c.pol, h.ID, actor, pick(r, taskTexts[1:]), now)
	case 5:
		return one(workqueue.Retry(c.s, c.pol, h.ID, now))
	}
	if r.IntN(2) == 0 {
		return one(workqueue.Block(c.s, h.ID, "waiting for "+pick(r, taskTexts[1:])))
	}
	return one(workqueue.Unblock(c.s, h.ID, r.IntN(2) == 0))
}

// synced records that bd/br did the oldest request a task has pending, as
// the service does once the bd/br command succeeded (any clone may: two
// clones may record the same request done).
func (c *taskClone) synced(r *rand.Rand) []eventlog.Draft {
	for _, id := range externalIDs {
		if h := c.s.Entry(id); h != nil && len(h.Pending) > 0 && r.IntN(2) == 0 {
			return []eventlog.Draft{{Type: workqueue.TypeSynced, Subject: id, Data: workqueue.SyncedData{Request: h.Pending[0].Request}}}
		}
	}
	return nil
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

func subset(r *rand.Rand, from []string) []string {
	var out []string
	for _, s := range from {
		if r.IntN(4) == 0 {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}
