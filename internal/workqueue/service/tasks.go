package service

import (
	"context"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// The tracker's commands: add, show, list, ready, update, close, reopen,
// dependencies and comments.

// Add creates a task. It decides on the projection of task ids, so adding
// a task decodes no tasks.
func (s *Service) Add(ctx context.Context, n workqueue.NewTask) (workqueue.TaskJSON, error) {
	if err := n.Validate(); err != nil {
		return workqueue.TaskJSON{}, err // usage errors before taking the lock
	}
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return workqueue.TaskJSON{}, err
	}
	prefix := s.Store.Config.String("ids.prefix")
	events, _, err := s.Env.Write(ctx, []string{workqueue.IDsName}, func(v *projections.View, actor string) ([]eventlog.Draft, error) {
		if n.Owner == actor {
			n.Owner = "" // the fold's default
		}
		ids, _ := projections.As[*workqueue.IDsProjection](v, workqueue.IDsName)
		d, _, err := workqueue.AddTask(ids, n, prefix, writer, s.Now)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return workqueue.TaskJSON{}, err
	}
	created := workqueue.NewState()
	created.Apply(&events[0])
	return created.View(created.Tasks[events[0].Subject], s.Policy, s.Now), nil
}

// Show returns the tasks named as bd show has them, and the state to read
// their relations and history from.
func (s *Service) Show(ctx context.Context, ids []string) ([]workqueue.DetailJSON, *workqueue.State, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return nil, nil, err
	}
	out := make([]workqueue.DetailJSON, 0, len(ids))
	for _, id := range ids {
		t := st.Tasks[id]
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

// Ready returns open tasks nothing blocks, most urgent first; limit 0 is all.
func (s *Service) Ready(ctx context.Context, f workqueue.ReadyFilter, limit int) ([]*workqueue.Task, *workqueue.State, error) {
	st, err := s.Read(ctx, Tracker)
	if err != nil {
		return nil, nil, err
	}
	return st.Ready(s.Policy, f, s.Now, limit), st, nil
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
	events, st, err := s.write(ctx, names, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.UpdateTask(st, id, u)
	})
	if err != nil {
		return task, false, err
	}
	return st.View(st.Tasks[id], s.Policy, s.Now), len(events) > 0, nil
}

// Close closes every task or none.
func (s *Service) Close(ctx context.Context, ids []string, reason string) ([]workqueue.TaskJSON, error) {
	return s.tasksChange(ctx, ids, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.CloseTasks(st, ids, reason)
	})
}

// Reopen opens closed tasks again, every one or none.
func (s *Service) Reopen(ctx context.Context, ids []string) ([]workqueue.TaskJSON, error) {
	return s.tasksChange(ctx, ids, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		var drafts []eventlog.Draft
		for _, id := range ids {
			d, err := workqueue.Reopen(st, id)
			if err != nil {
				return nil, err
			}
			drafts = append(drafts, d)
		}
		return drafts, nil
	})
}

// tasksChange runs a tracker decision about ids, every one or none, and
// returns the tasks after it.
func (s *Service) tasksChange(ctx context.Context, ids []string, decide func(*workqueue.State, string) ([]eventlog.Draft, error)) ([]workqueue.TaskJSON, error) {
	_, st, err := s.write(ctx, Both, decide)
	if err != nil {
		return nil, err
	}
	out := make([]workqueue.TaskJSON, 0, len(ids))
	for _, id := range ids {
		out = append(out, st.View(st.Tasks[id], s.Policy, s.Now))
	}
	return out, nil
}

// AddDep makes id wait for blocker.
func (s *Service) AddDep(ctx context.Context, id, blocker string) error {
	return s.dep(ctx, id, blocker, workqueue.AddDep)
}

// RemoveDep removes that dependency.
func (s *Service) RemoveDep(ctx context.Context, id, blocker string) error {
	return s.dep(ctx, id, blocker, workqueue.RemoveDep)
}

func (s *Service) dep(ctx context.Context, id, blocker string, decide func(*workqueue.State, string, string) (eventlog.Draft, error)) error {
	_, _, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := decide(st, id, blocker)
		return []eventlog.Draft{d}, err
	})
	return err
}

// Comment notes text on a task and returns the comment.
func (s *Service) Comment(ctx context.Context, id, text string) (workqueue.CommentJSON, error) {
	_, st, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.AddComment(st, id, text)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return workqueue.CommentJSON{}, err
	}
	all := st.Tasks[id].Comments()
	return all[len(all)-1], nil
}

// Comments lists a task's comments, oldest first.
func (s *Service) Comments(ctx context.Context, id string) ([]workqueue.CommentJSON, error) {
	st, err := s.Read(ctx, Tracker)
	if err != nil {
		return nil, err
	}
	t := st.Tasks[id]
	if t == nil {
		return nil, workqueue.NoTask(id)
	}
	return t.Comments(), nil
}

// Change is bd update: the fields u sets, then the status (when not ""),
// which claims the task for worker, blocks, finishes or reopens it (see
// workqueue.SetStatus); one append for all of ids, or none.
func (s *Service) Change(ctx context.Context, ids []string, u workqueue.Update, status, worker, reason string) ([]workqueue.TaskJSON, error) {
	if err := u.ValidateFields(); err != nil {
		return nil, err
	}
	return s.tasksChange(ctx, ids, func(st *workqueue.State, actor string) ([]eventlog.Draft, error) {
		w := worker
		if w == "" {
			w = actor
		}
		var drafts []eventlog.Draft
		for _, id := range ids {
			if !u.Empty() {
				d, err := workqueue.UpdateTask(st, id, u)
				if err != nil {
					return nil, err
				}
				drafts = append(drafts, d...)
			}
			if status != "" {
				d, err := workqueue.SetStatus(st, s.Policy, id, status, w, actor, reason, s.Now)
				if err != nil {
					return nil, err
				}
				drafts = append(drafts, d...)
			}
		}
		return drafts, nil
	})
}

// Finish is bd close: the actor's claim succeeds (done), any other task is
// closed; a closed task is left as it is.
func (s *Service) Finish(ctx context.Context, ids []string, reason string) ([]workqueue.TaskJSON, error) {
	return s.tasksChange(ctx, ids, func(st *workqueue.State, actor string) ([]eventlog.Draft, error) {
		var drafts []eventlog.Draft
		for _, id := range ids {
			d, err := workqueue.Finish(st, s.Policy, id, actor, reason, s.Now)
			if err != nil {
				return nil, err
			}
			drafts = append(drafts, d...)
		}
		return drafts, nil
	})
}

// CloseEpics closes the open epics whose children are all closed, with
// bd's reason, and returns their ids.
func (s *Service) CloseEpics(ctx context.Context) ([]string, error) {
	var ids []string
	_, _, err := s.write(ctx, Both, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		ids = ids[:0]
		for _, e := range st.EpicsEligible(s.Policy, s.Now) {
			ids = append(ids, e.Epic.ID)
		}
		return workqueue.CloseTasks(st, ids, "All children completed")
	})
	return ids, err
}

// Import records every task of recs that differs from spool's (one append)
// and returns how many did.
func (s *Service) Import(ctx context.Context, recs []workqueue.TaskJSON) (int, error) {
	events, _, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.ImportTasks(st, recs)
	})
	return len(events), err
}
