package service

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/beads"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// The queue's commands: next, heartbeat, done, fail, retry, block, unblock,
// history and stats, over spool's tracker or a bd/br source.

// candidates polls the bd/br source; nil for the native tracker. It runs
// before the lock is taken: the claim itself is decided under it.
func (s *Service) candidates(ctx context.Context, labels []string) ([]workqueue.Candidate, error) {
	if s.Native() {
		return nil, nil
	}
	issues, err := s.source.Ready(ctx, labels)
	if err != nil {
		return nil, err
	}
	cands := candidatesOf(issues)
	return cands, s.confirmUnlabelled(ctx, cands)
}

// confirmUnlabelled asks the source for the labels of each bead spool holds
// Blocked that ready lists without the blocked label: a ready that shows no
// labels at all (a br, a bd of another version) must not read as the label
// removed by hand (workqueue.UnblockedAtSource), which would hand Blocked
// beads out again. A bead whose labels cannot be read keeps it. With bd
// 0.49.1, whose ready shows labels, this runs once, for a label removed.
func (s *Service) confirmUnlabelled(ctx context.Context, cands []workqueue.Candidate) error {
	var st *workqueue.State
	for i := range cands {
		c := &cands[i]
		if slices.Contains(c.Labels, workqueue.BlockedLabel) {
			continue
		}
		if st == nil {
			var err error
			if st, err = s.Read(ctx, History); err != nil {
				return err
			}
		}
		if !workqueue.LabelledAtSource(st.Entry(c.ID)) {
			continue
		}
		if labels, err := s.source.Labels(ctx, c.ID); err != nil || slices.Contains(labels, workqueue.BlockedLabel) {
			c.Labels = workqueue.NormLabels(append(slices.Clone(c.Labels), workqueue.BlockedLabel))
		}
	}
	return nil
}

func candidatesOf(issues []beads.Issue) []workqueue.Candidate {
	out := make([]workqueue.Candidate, 0, len(issues))
	for _, i := range issues {
		out = append(out, workqueue.Candidate{ID: i.ID, Title: i.Title, Description: i.Description, Priority: i.Priority,
			IssueType: i.IssueType, Labels: workqueue.NormLabels(i.Labels), CreatedAt: i.CreatedAt})
	}
	return out
}

// Claimed is what next handed out: the task as beads shows it, and the claim.
type Claimed struct {
	workqueue.TaskJSON
	Attempt    int       `json:"attempt"`
	Worker     string    `json:"worker"`
	LeaseUntil time.Time `json:"lease_until"`
}

// AppendJSON declines: encoding/json writes it. Declared so that Claimed
// does not inherit TaskJSON's (jsonout.Appender), which would leave out
// the claim's fields.
func (Claimed) AppendJSON(dst []byte, _ jsonout.Format) ([]byte, bool) { return dst, false }

// Idle says why next found nothing: when something may be claimable (a
// backoff ending, a lease running out) and which task; zero when nothing waits.
type Idle struct {
	At   time.Time
	Task string
}

// Next claims the most urgent eligible task for worker (the actor when
// empty), recording the leases that expired on the way. A nil claim means
// nothing is eligible.
func (s *Service) Next(ctx context.Context, require, exclude []string, worker string) (*Claimed, Idle, error) {
	return s.NextAnd(ctx, require, exclude, worker, nil)
}

// NextAnd is Next with also's events, derived from the claim, in the same
// append: another domain records what it does with the claim atomically.
func (s *Service) NextAnd(ctx context.Context, require, exclude []string, worker string, also func(*workqueue.State, *workqueue.Claim) []eventlog.Draft) (*Claimed, Idle, error) {
	gate := s.Policy.Gate(require, exclude)
	gate.ExcludeTypes = s.ExcludeTypes
	cands, err := s.candidates(ctx, gate.Require)
	if err != nil {
		return nil, Idle{}, err
	}
	w, err := change(ctx, s, store.Claiming, Both, "", func(st *workqueue.State, actor string) ([]eventlog.Draft, *workqueue.Claim, error) {
		wk := worker
		if wk == "" {
			wk = actor
		}
		drafts, claim, err := workqueue.Next(st, cands, s.Native(), s.Policy, gate, wk, actor, s.Now)
		if err != nil || claim == nil || also == nil {
			return drafts, claim, err
		}
		// also sees the state Next's drafts lead to (the expiries recorded
		// on the way, then the claim), not the state before them.
		f := workqueue.NewFork(st, actor, s.Now)
		f.Add(drafts...)
		after, err := f.State()
		if err != nil {
			return nil, nil, err
		}
		return append(drafts, also(after, claim)...), claim, nil
	})
	if err != nil {
		return nil, Idle{}, err
	}
	claim, st := w.Result, w.State
	if claim == nil {
		admitted := func(yield func(*workqueue.Entry) bool) {
			for h := range st.Waiting() {
				if t := st.Task(h.ID); t != nil && (!gate.Admits(t.Labels) || !gate.AdmitsType(t.Type)) {
					continue // this next never takes it: its lease or backoff running out changes nothing
				}
				if !yield(h) {
					return
				}
			}
		}
		at, id := s.Policy.Wakeup(admitted, s.Now)
		return nil, Idle{At: at, Task: id}, nil
	}
	out := &Claimed{Attempt: claim.Attempt, Worker: claim.Worker, LeaseUntil: claim.LeaseUntil}
	if t := st.Task(claim.Task.ID); t != nil {
		out.TaskJSON = st.View(t, s.Policy, s.Now)
	} else {
		c := claim.Task
		out.TaskJSON = workqueue.TaskJSON{ID: c.ID, Title: c.Title, Description: c.Description, Status: workqueue.StatusInProgress,
			Priority: c.Priority, IssueType: c.IssueType, Labels: c.Labels, Assignee: claim.Worker, CreatedAt: c.CreatedAt}
	}
	return out, Idle{}, nil
}

// Heartbeat extends the lease of a claim the actor holds.
func (s *Service) Heartbeat(ctx context.Context, id string) (time.Time, error) {
	w, err := write(ctx, s, store.Claiming, History, func(st *workqueue.State, actor string) ([]eventlog.Draft, time.Time, error) {
		d, until, err := workqueue.Heartbeat(st, s.Policy, id, actor, s.Now)
		return []eventlog.Draft{d}, until, err
	})
	return w.Result, err
}

// Done records a successful attempt and closes the task (bd close for a bead).
func (s *Service) Done(ctx context.Context, id, reason string) (workqueue.EntryJSON, error) {
	return s.entryChange(ctx, store.Claiming, id, reason, func(st *workqueue.State, actor string) ([]eventlog.Draft, error) {
		return workqueue.Done(st, s.Policy, id, actor, reason, s.Now)
	})
}

// Fail records a failed attempt and what the policy makes of it.
func (s *Service) Fail(ctx context.Context, id, msg string) (workqueue.EntryJSON, error) {
	return s.entryChange(ctx, store.Claiming, id, "", func(st *workqueue.State, actor string) ([]eventlog.Draft, error) {
		return workqueue.Fail(st, s.Policy, id, actor, msg, s.Now)
	})
}

// Retry puts an abandoned, blocked or failed task back, attempts reset.
func (s *Service) Retry(ctx context.Context, id string) (workqueue.EntryJSON, error) {
	return s.entryChange(ctx, store.Local, id, "", func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Retry(st, s.Policy, id, s.Now)
		return []eventlog.Draft{d}, err
	})
}

// Block marks a task Blocked by hand.
func (s *Service) Block(ctx context.Context, id, reason string) (workqueue.EntryJSON, error) {
	return s.entryChange(ctx, store.Local, id, "", func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Block(st, id, reason)
		return []eventlog.Draft{d}, err
	})
}

// Unblock clears Blocked, optionally resetting the attempt counters.
func (s *Service) Unblock(ctx context.Context, id string, reset bool) (workqueue.EntryJSON, error) {
	return s.entryChange(ctx, store.Local, id, "", func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Unblock(st, id, reset)
		return []eventlog.Draft{d}, err
	})
}

// Decide runs decide (a caller's combination of the queue's decide
// functions and its own events) as one append through the remote, as the
// claimant's own commands do, and returns task id's history after it and
// the decision's result. reason is a close's, for bd/br. Like every
// decision, decide must be repeatable: a claim whose remote moved runs it
// again on what it fetched.
func Decide[R any](ctx context.Context, s *Service, id, reason string, decide func(st *workqueue.State, actor string) ([]eventlog.Draft, R, error)) (workqueue.EntryJSON, R, error) {
	w, err := change(ctx, s, store.Claiming, Both, reason, decide)
	if err != nil {
		var zero R
		return workqueue.EntryJSON{}, zero, err
	}
	return s.entryView(w.State, id), w.Result, nil
}

// entryChange runs a queue decision and returns the task's history after
// it. The claimant's own decisions (done, fail, an orchestrator's outcome)
// go through Env.Claim like the claim, so no other machine sees the task
// held after it was finished, nor takes it again.
func (s *Service) entryChange(ctx context.Context, mode store.Mode, id, reason string, decide func(*workqueue.State, string) ([]eventlog.Draft, error)) (workqueue.EntryJSON, error) {
	w, err := change(ctx, s, mode, Both, reason, drafts(decide))
	if err != nil {
		return workqueue.EntryJSON{}, err
	}
	return s.entryView(w.State, id), nil
}

// Entry is one task's history as it stands now.
func (s *Service) Entry(ctx context.Context, id string) (workqueue.EntryJSON, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return workqueue.EntryJSON{}, err
	}
	if st.Entry(id) == nil && st.Task(id) == nil {
		return workqueue.EntryJSON{}, workqueue.NoTask(id)
	}
	return s.entryView(st, id), nil
}

// Histories is every task the queue has seen, by id.
func (s *Service) Histories(ctx context.Context) ([]workqueue.EntryJSON, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return nil, err
	}
	all := slices.SortedFunc(st.Entries(), func(a, b *workqueue.Entry) int { return strings.Compare(a.ID, b.ID) })
	out := make([]workqueue.EntryJSON, 0, len(all))
	for _, h := range all {
		out = append(out, s.Policy.HistoryView(*h, s.Now))
	}
	return out, nil
}

// Stats counts the queue's tasks by where they are: with spool's tracker
// every task, with a bd/br source the tasks it offers now and every task
// with a history.
func (s *Service) Stats(ctx context.Context) (workqueue.Stats, error) {
	gate := s.Policy.Gate(nil, nil)
	cands, err := s.candidates(ctx, gate.Require)
	if err != nil {
		return workqueue.Stats{}, err
	}
	names := History
	if s.Native() {
		names = Both
	}
	st, err := s.Read(ctx, names)
	if err != nil {
		return workqueue.Stats{}, err
	}
	if s.Native() {
		return st.NativeStats(s.Policy, gate, s.Now), nil
	}
	ready := len(s.Policy.Select(cands, st.Entry, gate, s.Now, workqueue.Unsorted))
	return s.Policy.Stats(st, false, cands, ready, s.Now), nil
}

// Wakeup is when something in the queue may next become claimable (a
// backoff ending, a lease running out; zero: nothing waits): what waits for
// work sleeps until then, as no event says so.
func (s *Service) Wakeup(ctx context.Context) (time.Time, error) {
	st, err := s.Read(ctx, []string{workqueue.QueueName})
	if err != nil {
		return time.Time{}, err
	}
	at, _ := s.Policy.Wakeup(st.Waiting(), s.Now)
	return at, nil
}

// ExpireClaims records every claim whose lease ran out, as next would on
// its way, and returns the tasks released and when the next lease runs out.
// When none ran out it reads only: no lock, no actor.
func (s *Service) ExpireClaims(ctx context.Context) (released []string, next time.Time, err error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(workqueue.Expire(st, s.Policy, s.Now)) == 0 {
		return nil, workqueue.NextExpiry(st, s.Now), nil
	}
	w, err := change(ctx, s, store.Local, Both, "", drafts(func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.Expire(st, s.Policy, s.Now), nil
	}))
	if err != nil {
		return nil, time.Time{}, err
	}
	st = w.State
	for _, e := range w.Events {
		if e.Type == workqueue.TypeLeaseExpired {
			released = append(released, e.Subject)
		}
	}
	return released, workqueue.NextExpiry(st, s.Now), nil
}
