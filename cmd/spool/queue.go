package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// queue is what the task and work-queue commands share: the store, the
// command's one clock reading and the configured policy and source.
type queue struct {
	e      *env
	st     *store.Store
	now    time.Time
	policy workqueue.Policy
	source string
	beads  workqueue.Beads
}

func (e *env) queue() (*queue, error) {
	now, err := e.now()
	if err != nil {
		return nil, err
	}
	st, err := e.open()
	if err != nil {
		return nil, err
	}
	q := &queue{e: e, st: st, now: now, policy: workqueue.PolicyFrom(st.Config), source: st.Config.String("workqueue.source")}
	q.beads = workqueue.Beads{Kind: q.source, Bin: st.Config.String("workqueue.source_bin"), Dir: st.Repo.WorkTree}
	return q, nil
}

func (q *queue) native() bool { return q.source == workqueue.SourceNative }

// Which projections a command opens: a command about tasks does not decode
// the queue's history, and the other way round.
var (
	tracker   = []string{workqueue.Name}
	history   = []string{workqueue.QueueName, workqueue.IDsName}
	bothSides = []string{workqueue.Name, workqueue.QueueName}
)

// stateOf assembles what the Decide functions see; a side not opened is nil.
func stateOf(v *projections.View) *workqueue.State {
	s := &workqueue.State{}
	if p, ok := v.Get(workqueue.Name).(*workqueue.TasksProjection); ok {
		s.Tasks = p.State().Tasks
	}
	if p, ok := v.Get(workqueue.QueueName).(*workqueue.QueueProjection); ok {
		s.History = p.State().History
	}
	if p, ok := v.Get(workqueue.IDsName).(*workqueue.IDsProjection); ok {
		s.IDs = p
	}
	return s
}

// read returns the named projections up to date.
// readQueue opens the queue and reads the named projections: what every
// read-only work-queue command starts with.
func (e *env) readQueue(names []string) (*queue, *workqueue.State, error) {
	q, err := e.queue()
	if err != nil {
		return nil, nil, err
	}
	s, err := q.read(names)
	return q, s, err
}

func (q *queue) read(names []string) (*workqueue.State, error) {
	v, err := q.st.Read(q.e.ctx, names...)
	if err != nil {
		return nil, err
	}
	return stateOf(v), nil
}

// write decides under the log's lock and appends; it returns the state after.
func (q *queue) write(names []string, decide func(s *workqueue.State, actor string) ([]eventlog.Draft, error)) ([]eventlog.Event, *workqueue.State, error) {
	actor, err := q.e.actor(q.e.ctx, q.st.Repo)
	if err != nil {
		return nil, nil, err
	}
	events, v, err := q.st.Write(q.e.ctx, q.now, actor, names, func(v *projections.View) ([]eventlog.Draft, error) {
		return decide(stateOf(v), actor)
	})
	if err != nil {
		return nil, nil, err
	}
	return events, stateOf(v), nil
}

// mirror runs the bd/br commands that match drafts when the source is
// external: done closes, Blocked adds the label, unblock and retry remove it,
// demotion lowers the priority. It runs under the lock before the append, so
// a failing command appends nothing.
func (q *queue) mirror(ctx context.Context, drafts []eventlog.Draft, closeReason string) error {
	if q.native() {
		return nil
	}
	for _, d := range drafts {
		var err error
		switch data := d.Data.(type) {
		case workqueue.AttemptData:
			if d.Type == workqueue.TypeSucceeded {
				err = q.beads.Close(ctx, d.Subject, closeReason)
			}
		case workqueue.BlockedData:
			err = q.beads.LabelAdd(ctx, d.Subject, workqueue.BlockedLabel)
		case workqueue.UnblockedData:
			err = q.beads.LabelRemove(ctx, d.Subject, workqueue.BlockedLabel)
		case workqueue.RetriedData:
			if data.PreviousStatus == workqueue.HistBlocked {
				err = q.beads.LabelRemove(ctx, d.Subject, workqueue.BlockedLabel)
			}
		case workqueue.DemotedData:
			err = q.beads.SetPriority(ctx, d.Subject, data.To)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// entryView is a task's history as it stands now.
func (q *queue) entryView(s *workqueue.State, id string) workqueue.EntryJSON {
	if h := s.History[id]; h != nil {
		return q.policy.HistoryView(*h, q.now)
	}
	return workqueue.EntryJSON{ID: id, Status: workqueue.HistPending}
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printEntry is the one-line human summary of a history entry at now.
func printEntry(e *env, h workqueue.EntryJSON, now time.Time) {
	fmt.Fprintf(e.stdout, "%s  %s  attempts %d", h.ID, h.Status, h.Attempts)
	if h.LastError != "" {
		fmt.Fprintf(e.stdout, "  last error: %s", text(h.LastError))
	}
	switch {
	case h.NextEligibleAt != nil && h.NextEligibleAt.After(now):
		fmt.Fprintf(e.stdout, "  next eligible at %s", fmtTime(h.NextEligibleAt))
	case h.NextEligibleAt != nil:
		fmt.Fprint(e.stdout, "  eligible again now")
	}
	fmt.Fprintln(e.stdout)
}
