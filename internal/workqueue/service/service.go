// Package service is the work queue's service: every task and queue command
// goes through it. It opens the projections a command needs, decides with
// the pure functions of workqueue under the log's lock, appends, and only
// then has a bd/br source do what was decided (internal/beads), each request
// recorded before it runs and marked done after, so a crash in between
// leaves it pending for the next command.
package service

import (
	"context"
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/beads"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Service is the work queue for one command.
type Service struct {
	store.Env
	Policy workqueue.Policy
	// PartialIDs has the tracker's commands take ids as bd does (see
	// workqueue.State.ResolveID), resolved on the state they decide on.
	PartialIDs bool
	// ExcludeTypes are issue types next never hands out (the orchestrator
	// keeps epics from its agents).
	ExcludeTypes []string
	source       *beads.Source   // nil: spool's own tracker
	hooks        workqueue.Hooks // the notification hooks configured
	settings     workqueue.Settings
}

// Open reads the queue's configuration; nothing is read from the log yet.
func Open(env store.Env) *Service {
	set := workqueue.SettingsFrom(env.Store.Config)
	s := &Service{Env: env, Policy: set.Policy, hooks: set.Hooks, settings: set}
	if kind := set.Source; kind != workqueue.SourceNative {
		s.source = &beads.Source{Kind: kind, Bin: set.SourceBin, Dir: env.Store.Repo.WorkTree}
	}
	return s
}

// Native reports whether ready work comes from spool's own tracker.
func (s *Service) Native() bool { return s.source == nil }

// PollInterval is how often a bd/br source is asked for ready work by what
// waits for it: its ready work changes without
// the log knowing. Zero for spool's own tracker, whose log says when.
func (s *Service) PollInterval() time.Duration {
	if s.Native() {
		return 0
	}
	return s.settings.PollInterval
}

// Which projections a command opens: a command about tasks does not decode
// the queue's history, and the other way round.
var (
	Tracker = []string{workqueue.Name}
	History = []string{workqueue.QueueName, workqueue.IDsName}
	Both    = []string{workqueue.Name, workqueue.QueueName}
)

// stateOf assembles what the decide functions see under the log's lock,
// the fold's own state; a side not opened is nil.
func stateOf(v *projections.View) *workqueue.State { return combined(v, false) }

// snapshot is stateOf for a reader to keep: later writes of this process
// (a long-running command's next step, another goroutine's) do not change
// it. It is taken under the store's lock.
func (s *Service) snapshot(v *projections.View) (st *workqueue.State) {
	s.Store.Hold(func() { st = combined(v, true) })
	return st
}

func combined(v *projections.View, snapshot bool) *workqueue.State {
	var tasks, history *workqueue.State
	var ids workqueue.TaskIndex
	if p, ok := projections.As[*workqueue.TasksProjection](v, workqueue.Name); ok {
		tasks = p.State()
		if snapshot {
			tasks = p.Snapshot()
		}
	}
	if p, ok := projections.As[*workqueue.QueueProjection](v, workqueue.QueueName); ok {
		history = p.State()
		if snapshot {
			history = p.Snapshot()
		}
	}
	if p, ok := projections.As[*workqueue.IDsProjection](v, workqueue.IDsName); ok {
		ids = p
		if snapshot {
			ids = p.Snapshot()
		}
	}
	return workqueue.Combine(tasks, history, ids)
}

// Read returns the named projections up to date, as a snapshot later
// writes do not change.
func (s *Service) Read(ctx context.Context, names []string) (*workqueue.State, error) {
	v, err := s.Store.Read(ctx, names...)
	if err != nil {
		return nil, err
	}
	return s.snapshot(v), nil
}

// decision is a queue decision: the drafts to append and the command's
// result. Like store.Decider it must be repeatable.
type decision[R any] func(st *workqueue.State, actor string) ([]eventlog.Draft, R, error)

// written is what a queue write appended, the state after it and its
// decision's result.
type written[R any] struct {
	Events []eventlog.Event
	State  *workqueue.State
	Result R
}

// write decides under the log's lock and appends (store.Claiming for a
// claim and what its holder records, which sync.claims = remote takes
// through the git remote); it returns the events, the state after them and
// the result. An abandonment or a Blocked it decides carries the request
// for its notification hook, which runs after the append (runHooks), with
// any an earlier command of this clone left.
func write[R any](ctx context.Context, s *Service, mode store.Mode, names []string, decide decision[R]) (written[R], error) {
	w, err := store.WriteAs(ctx, s.Env, mode, names, func(v *projections.View, actor string) ([]eventlog.Draft, R, error) {
		drafts, r, err := decide(stateOf(v), actor)
		if err != nil || len(s.hooks) == 0 {
			return drafts, r, err
		}
		reqs, err := workqueue.HookRequests(drafts, s.hooks)
		return append(drafts, reqs...), r, err
	})
	if err != nil {
		return written[R]{}, err
	}
	out := written[R]{Events: w.Events, State: s.snapshot(w.View), Result: w.Result}
	if made := slices.ContainsFunc(w.Events, func(e eventlog.Event) bool { return e.Type == workqueue.TypeHookRequested }); made || s.ownHooks(out.State) {
		s.runHooks(ctx, made)
		// The state after the outcomes too, for what the command prints.
		if st2, err := s.Read(ctx, names); err == nil {
			out.State = st2
		}
	}
	return out, nil
}

// change is write for the queue's decisions that a bd/br source must hear
// of: the requests go into the same append, then run (see syncPending).
func change[R any](ctx context.Context, s *Service, mode store.Mode, names []string, reason string, decide decision[R]) (written[R], error) {
	out, err := write(ctx, s, mode, names, func(st *workqueue.State, actor string) ([]eventlog.Draft, R, error) {
		drafts, r, err := decide(st, actor)
		if err != nil || s.Native() {
			return drafts, r, err
		}
		return append(drafts, workqueue.SyncRequests(drafts, reason)...), r, nil
	})
	if err != nil || s.Native() {
		return out, err
	}
	// Every pending request runs, this command's and those earlier commands
	// left (bd failed, or spool died between the decision and bd), each
	// tried once per command. A command that made requests waits for a
	// command syncing meanwhile; one that made none leaves the work to it.
	made := slices.ContainsFunc(out.Events, func(e eventlog.Event) bool { return e.Type == workqueue.TypeSyncRequested })
	s.syncPending(ctx, made)
	if !made {
		return out, nil
	}
	// The state after the outcomes too, for what the command prints.
	out.State, err = s.Read(ctx, names)
	return out, err
}

// drafts adapts a decision with no result.
func drafts(decide func(st *workqueue.State, actor string) ([]eventlog.Draft, error)) decision[struct{}] {
	return func(st *workqueue.State, actor string) ([]eventlog.Draft, struct{}, error) {
		d, err := decide(st, actor)
		return d, struct{}{}, err
	}
}

// Resolve finds the tasks refs name: with PartialIDs as bd does, else the
// ids as given (the decision refuses one that names no task).
func (s *Service) Resolve(st *workqueue.State, refs []string) ([]string, error) {
	if !s.PartialIDs {
		return refs, nil
	}
	prefix := s.settings.Prefix
	ids := make([]string, len(refs))
	for i, r := range refs {
		id, err := st.ResolveID(prefix, r)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// entryView is a task's history as it stands now.
func (s *Service) entryView(st *workqueue.State, id string) workqueue.EntryJSON {
	if h := st.Entry(id); h != nil {
		return s.Policy.HistoryView(*h, s.Now)
	}
	return workqueue.EntryJSON{ID: id, Status: workqueue.HistPending}
}
