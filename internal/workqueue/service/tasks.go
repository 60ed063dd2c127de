package service

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/beads"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// The tracker's commands: add, show, list, ready, update, close, reopen,
// dependencies and comments.

// Add creates a task. It decides on the projection of task ids, so adding
// a task decodes no tasks (unless its dependencies and parent are to be
// resolved as bd does).
func (s *Service) Add(ctx context.Context, n workqueue.NewTask) (workqueue.TaskJSON, error) {
	if err := n.Validate(); err != nil {
		return workqueue.TaskJSON{}, err // usage errors before taking the lock
	}
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return workqueue.TaskJSON{}, err
	}
	prefix := s.settings.Prefix
	names := []string{workqueue.IDsName}
	resolve := s.PartialIDs && (len(n.Deps) > 0 || n.Parent != "" || len(n.Links) > 0)
	if resolve {
		names = Tracker
	}
	events, _, err := s.Env.Write(ctx, names, func(v *projections.View, actor string) ([]eventlog.Draft, error) {
		n := n
		if n.Owner == actor {
			n.Owner = "" // the fold's default
		}
		var ids workqueue.TaskIndex
		if resolve {
			st := stateOf(v)
			refs := slices.Clone(n.Deps)
			for _, l := range n.Links {
				refs = append(refs, l.ID)
			}
			if n.Parent != "" {
				refs = append(refs, n.Parent)
			}
			got, err := s.Resolve(st, refs)
			if err != nil {
				return nil, err
			}
			n.Deps = got[:len(n.Deps):len(n.Deps)]
			n.Links = slices.Clone(n.Links)
			for i := range n.Links {
				n.Links[i].ID = got[len(n.Deps)+i]
			}
			if n.Parent != "" {
				n.Parent = got[len(got)-1]
			}
			ids = st
		} else {
			ids, _ = projections.As[*workqueue.IDsProjection](v, workqueue.IDsName)
		}
		d, id, err := workqueue.AddTask(ids, n, prefix, writer, s.Now)
		drafts := []eventlog.Draft{d}
		for _, l := range n.Links { // in the same append: the task is made with its links
			drafts = append(drafts, eventlog.Draft{Type: workqueue.TypeDepAdded, Subject: id,
				Data: workqueue.DepData{Blocker: l.ID, Type: l.Type}})
		}
		return drafts, err
	})
	if err != nil {
		return workqueue.TaskJSON{}, err
	}
	created := workqueue.NewState()
	created.Apply(&events[0])
	return created.View(created.Task(events[0].Subject), s.Policy, s.Now), nil
}

// Show returns the tasks named as bd show has them, and the state to read
// their relations and history from.
func (s *Service) Show(ctx context.Context, ids []string) ([]workqueue.DetailJSON, *workqueue.State, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return nil, nil, err
	}
	if ids, err = s.Resolve(st, ids); err != nil {
		return nil, nil, err
	}
	out := make([]workqueue.DetailJSON, 0, len(ids))
	for _, id := range ids {
		t := st.Task(id)
		if t == nil {
			return nil, nil, workqueue.NoTask(id)
		}
		out = append(out, st.Show(t, s.Policy, s.Now))
	}
	return out, st, nil
}

// List returns the tasks that match, by priority then age.
func (s *Service) List(ctx context.Context, f workqueue.ListFilter) ([]*workqueue.Task, *workqueue.State, error) {
	st, err := s.Read(ctx, Tracker)
	if err != nil {
		return nil, nil, err
	}
	return st.List(s.Policy, f, s.Now), st, nil
}

// ListItems is task list --json (bd list's): the tasks that match, each
// with its dependency counts.
func (s *Service) ListItems(ctx context.Context, f workqueue.ListFilter) ([]workqueue.ListItemJSON, error) {
	tasks, st, err := s.List(ctx, f)
	if err != nil {
		return nil, err
	}
	counts := st.DependentCounts()
	out := make([]workqueue.ListItemJSON, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, st.ListItem(t, s.Policy, s.Now, counts))
	}
	return out, nil
}

// Ready returns the tasks next could claim now (f.All gates as next's
// --label does), in next's order; limit 0 is all.
func (s *Service) Ready(ctx context.Context, f workqueue.ReadyFilter, limit int) ([]*workqueue.Task, *workqueue.State, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return nil, nil, err
	}
	gate := s.Policy.Gate(f.All, nil)
	gate.ExcludeTypes = s.ExcludeTypes
	return st.Claimable(s.Policy, gate, f, s.Now, limit), st, nil
}

// WriteReadyJSON writes Ready's tasks, all of them, as --json lists them
// (State.WriteReadyJSON); false, having written nothing, when it cannot.
func (s *Service) WriteReadyJSON(ctx context.Context, f workqueue.ReadyFilter, w io.Writer) (bool, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return false, err
	}
	gate := s.Policy.Gate(f.All, nil)
	gate.ExcludeTypes = s.ExcludeTypes
	return st.WriteReadyJSON(w, s.Policy, gate, f, s.Now)
}

// ReadyBeads is ready with a bd/br source: the beads it offers that next
// could claim now, gated as next is (workqueue.label and the labels of f.All
// asked of the source, workqueue.exclude_labels, the queue's history), with
// f.Any on top, in next's order, as the source printed them; limit 0 is all.
func (s *Service) ReadyBeads(ctx context.Context, f workqueue.ReadyFilter, limit int) ([]beads.Issue, error) {
	gate := s.Policy.Gate(f.All, nil)
	issues, err := s.source.Ready(ctx, gate.Require)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]beads.Issue, len(issues))
	for _, i := range issues {
		byID[i.ID] = i
	}
	cands := candidatesOf(issues)
	st, err := s.Read(ctx, History)
	if err != nil {
		return nil, err
	}
	if len(f.Any) > 0 {
		cands = slices.DeleteFunc(cands, func(c workqueue.Candidate) bool {
			return !slices.ContainsFunc(f.Any, func(l string) bool { return slices.Contains(c.Labels, l) })
		})
	}
	sel := s.Policy.Select(cands, st.Entry, gate, s.Now, limit)
	out := make([]beads.Issue, len(sel))
	for i, c := range sel {
		out[i] = byID[c.ID]
	}
	return out, nil
}

// Update changes a task's fields; changed is false when it already had them
// (and nothing was appended).
func (s *Service) Update(ctx context.Context, id string, u workqueue.Update) (task workqueue.TaskJSON, changed bool, err error) {
	if err := u.Validate(); err != nil {
		return task, false, err
	}
	names := Tracker
	if u.TouchesBlocked() {
		names = Both // blocking and unblocking are the queue's too
	}
	w, err := write(ctx, s, store.Local, names, drafts(func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.UpdateTask(st, id, u)
	}))
	if err != nil {
		return task, false, err
	}
	return w.State.View(w.State.Task(id), s.Policy, s.Now), len(w.Events) > 0, nil
}

// Close closes every task or none, each once however often it is named.
// A task another actor holds under a live claim is refused, unless force
// and the actor is an admin.
func (s *Service) Close(ctx context.Context, refs []string, reason string, force bool) ([]workqueue.TaskJSON, error) {
	out, err := s.close(ctx, refs, reason, force)
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(t workqueue.TaskJSON) bool {
		dup := seen[t.ID]
		seen[t.ID] = true
		return dup
	}), err
}

func (s *Service) close(ctx context.Context, refs []string, reason string, force bool) ([]workqueue.TaskJSON, error) {
	return s.tasksChange(ctx, store.Local, refs, func(st *workqueue.State, ids []string, actor string) ([]eventlog.Draft, error) {
		override := force && slices.Contains(s.settings.Core.Admins, actor)
		if force && !override {
			return nil, fault.New(fault.CodeUnauthorized, fault.ErrUnauthorized,
				fmt.Sprintf("--force is for admins (the admins key of .spool/config.json); %s is not one", actor), "actor", actor)
		}
		for _, id := range ids {
			if err := workqueue.MayClose(st, id, actor, override, s.Now); err != nil {
				return nil, err
			}
		}
		return workqueue.CloseTasks(st, ids, reason)
	})
}

// Reopen opens closed tasks again, every one or none.
func (s *Service) Reopen(ctx context.Context, refs []string, reason string) ([]workqueue.TaskJSON, error) {
	return s.tasksChange(ctx, store.Local, refs, func(st *workqueue.State, ids []string, actor string) ([]eventlog.Draft, error) {
		return workqueue.Each(st, ids, actor, s.Now, func(f *workqueue.Fork, id string) error {
			return f.Decide(func(st *workqueue.State) ([]eventlog.Draft, error) {
				d, err := workqueue.Reopen(st, id)
				if reason != "" {
					d.Data = workqueue.ReopenedData{Reason: reason} // recorded; the fold has no use for it
				}
				return []eventlog.Draft{d}, err
			})
		})
	})
}

// tasksChange runs a tracker decision about the tasks refs name (resolved
// under the lock), every one or none, and returns the tasks after it, one
// for each ref.
func (s *Service) tasksChange(ctx context.Context, mode store.Mode, refs []string, decide func(st *workqueue.State, ids []string, actor string) ([]eventlog.Draft, error)) ([]workqueue.TaskJSON, error) {
	w, err := write(ctx, s, mode, Both, func(st *workqueue.State, actor string) ([]eventlog.Draft, []string, error) {
		ids, err := s.Resolve(st, refs)
		if err != nil {
			return nil, nil, err
		}
		d, err := decide(st, ids, actor)
		return d, ids, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]workqueue.TaskJSON, 0, len(w.Result))
	for _, id := range w.Result {
		out = append(out, w.State.View(w.State.Task(id), s.Policy, s.Now))
	}
	return out, nil
}

// AddDep makes id wait for blocker; it returns the two ids (resolved).
func (s *Service) AddDep(ctx context.Context, id, blocker string) (string, string, error) {
	return s.dep(ctx, id, blocker, workqueue.AddDep)
}

// RemoveDep removes that dependency.
func (s *Service) RemoveDep(ctx context.Context, id, blocker string) (string, string, error) {
	return s.dep(ctx, id, blocker, workqueue.RemoveDep)
}

// AddDepOf makes id depend on other with bd's dependency type typ
// (workqueue.AddDepOf).
func (s *Service) AddDepOf(ctx context.Context, id, other, typ string) (string, string, error) {
	return s.deps(ctx, id, other, func(st workqueue.Tracker, id, other string) ([]eventlog.Draft, error) {
		d, err := workqueue.AddDepOf(st, id, other, typ)
		return []eventlog.Draft{d}, err
	})
}

// RemoveDeps removes every dependency of id on other, as bd dep remove.
func (s *Service) RemoveDeps(ctx context.Context, id, other string) (string, string, error) {
	return s.deps(ctx, id, other, workqueue.RemoveDeps)
}

func (s *Service) dep(ctx context.Context, ref, blockerRef string, decide func(workqueue.Tracker, string, string) (eventlog.Draft, error)) (id, blocker string, err error) {
	return s.deps(ctx, ref, blockerRef, func(st workqueue.Tracker, id, blocker string) ([]eventlog.Draft, error) {
		d, err := decide(st, id, blocker)
		return []eventlog.Draft{d}, err
	})
}

func (s *Service) deps(ctx context.Context, ref, blockerRef string, decide func(workqueue.Tracker, string, string) ([]eventlog.Draft, error)) (id, blocker string, err error) {
	w, err := write(ctx, s, store.Local, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, []string, error) {
		ids, err := s.Resolve(st, []string{ref, blockerRef})
		if err != nil {
			return nil, nil, err
		}
		d, err := decide(st, ids[0], ids[1])
		return d, ids, err
	})
	if err != nil {
		return "", "", err
	}
	return w.Result[0], w.Result[1], nil
}

// Comment notes text on a task and returns the comment.
func (s *Service) Comment(ctx context.Context, ref, text string) (workqueue.CommentJSON, error) {
	w, err := write(ctx, s, store.Local, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, string, error) {
		ids, err := s.Resolve(st, []string{ref})
		if err != nil {
			return nil, "", err
		}
		d, err := workqueue.AddComment(st, ids[0], text)
		return []eventlog.Draft{d}, ids[0], err
	})
	if err != nil {
		return workqueue.CommentJSON{}, err
	}
	all := w.State.Task(w.Result).Comments()
	return all[len(all)-1], nil
}

// Comments lists a task's comments, oldest first, and returns its id.
func (s *Service) Comments(ctx context.Context, ref string) (string, []workqueue.CommentJSON, error) {
	st, err := s.Read(ctx, Tracker)
	if err != nil {
		return "", nil, err
	}
	ids, err := s.Resolve(st, []string{ref})
	if err != nil {
		return "", nil, err
	}
	t := st.Task(ids[0])
	if t == nil {
		return "", nil, workqueue.NoTask(ids[0])
	}
	return t.ID, t.Comments(), nil
}

// Change is bd update: the fields u sets, then the status (when not ""),
// which claims the task for worker, blocks, finishes or reopens it (see
// workqueue.SetStatus); each task once, on the state after the ones before
// it; one append for all of refs, or none.
func (s *Service) Change(ctx context.Context, refs []string, u workqueue.Update, status, worker, reason string) ([]workqueue.TaskJSON, error) {
	if err := u.ValidateFields(); err != nil {
		return nil, err
	}
	mode := store.Local
	if status == workqueue.StatusInProgress {
		mode = store.Claiming // a claim, as next's
	}
	return s.tasksChange(ctx, mode, refs, func(st *workqueue.State, ids []string, actor string) ([]eventlog.Draft, error) {
		w := worker
		if w == "" {
			w = actor
		}
		u := u
		if u.Parent != nil && *u.Parent != "" { // an id as bd takes it, as the tasks' own
			got, err := s.Resolve(st, []string{*u.Parent})
			if err != nil {
				return nil, err
			}
			u.Parent = &got[0]
		}
		return workqueue.Each(st, ids, actor, s.Now, func(f *workqueue.Fork, id string) error {
			if !u.Empty() {
				err := f.Decide(func(st *workqueue.State) ([]eventlog.Draft, error) { return workqueue.UpdateTask(st, id, u) })
				if err != nil {
					return err
				}
			}
			if status == "" {
				return nil
			}
			return f.Decide(func(st *workqueue.State) ([]eventlog.Draft, error) {
				return workqueue.SetStatus(st, s.Policy, id, status, w, actor, reason, s.Now)
			})
		})
	})
}

// Finish is bd close: the actor's claim succeeds (done), any other task is
// closed; a closed task is left as it is. Each task once, as Change.
func (s *Service) Finish(ctx context.Context, refs []string, reason string) ([]workqueue.TaskJSON, error) {
	return s.tasksChange(ctx, store.Local, refs, func(st *workqueue.State, ids []string, actor string) ([]eventlog.Draft, error) {
		return workqueue.Each(st, ids, actor, s.Now, func(f *workqueue.Fork, id string) error {
			return f.Decide(func(st *workqueue.State) ([]eventlog.Draft, error) {
				return workqueue.Finish(st, s.Policy, id, actor, reason, s.Now)
			})
		})
	})
}

// CloseEpics closes the open epics whose children are all closed, with
// bd's reason, and returns their ids.
func (s *Service) CloseEpics(ctx context.Context) ([]string, error) {
	w, err := write(ctx, s, store.Local, Both, func(st *workqueue.State, _ string) ([]eventlog.Draft, []string, error) {
		var ids []string
		for _, e := range st.EpicsEligible(s.Policy, s.Now) {
			ids = append(ids, e.Epic.ID)
		}
		d, err := workqueue.CloseTasks(st, ids, "All children completed")
		return d, ids, err
	})
	return w.Result, err
}

// Import records every task of recs that differs from spool's (one append)
// and returns how many did.
func (s *Service) Import(ctx context.Context, recs []workqueue.TaskJSON) (int, error) {
	w, err := write(ctx, s, store.Local, Tracker, drafts(func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.ImportTasks(st, recs)
	}))
	return len(w.Events), err
}

// RemoveOrphanDeps removes every dependency on an issue the tracker does
// not have (workqueue.OrphanDeps), in one append, and returns them.
func (s *Service) RemoveOrphanDeps(ctx context.Context) ([]workqueue.DepJSON, error) {
	w, err := write(ctx, s, store.Local, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, []workqueue.DepJSON, error) {
		removed := st.OrphanDeps()
		return workqueue.RemoveOrphanDeps(st), removed, nil
	})
	return w.Result, err
}
