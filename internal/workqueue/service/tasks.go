package service

import (
	"context"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
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
	events, _, err := s.Env.Write(ctx, []string{workqueue.IDsName}, func(v *projections.View, _ string) ([]eventlog.Draft, error) {
		ids, _ := projections.As[*workqueue.IDsProjection](v, workqueue.IDsName)
		d, _, err := workqueue.AddTask(ids, n, prefix, writer, s.Now)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return workqueue.TaskJSON{}, err
	}
	created := workqueue.NewState()
	created.Apply(&events[0])
	return created.View(created.Tasks[events[0].Subject], s.Policy, s.Now, false), nil
}

// Show returns the tasks named, with comments, and the state to read their
// relations and history from.
func (s *Service) Show(ctx context.Context, ids []string) ([]workqueue.TaskJSON, *workqueue.State, error) {
	st, err := s.Read(ctx, Both)
	if err != nil {
		return nil, nil, err
	}
	out := make([]workqueue.TaskJSON, 0, len(ids))
	for _, id := range ids {
		t := st.Tasks[id]
		if t == nil {
			return nil, nil, fault.NotFound("task", id)
		}
		out = append(out, st.View(t, s.Policy, s.Now, true))
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
	events, st, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.UpdateTask(st, id, u)
	})
	if err != nil {
		return task, false, err
	}
	return st.View(st.Tasks[id], s.Policy, s.Now, false), len(events) > 0, nil
}

// Close closes every task or none.
func (s *Service) Close(ctx context.Context, ids []string, reason string) ([]workqueue.TaskJSON, error) {
	_, st, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		return workqueue.CloseTasks(st, ids, reason)
	})
	if err != nil {
		return nil, err
	}
	out := make([]workqueue.TaskJSON, 0, len(ids))
	for _, id := range ids {
		out = append(out, st.View(st.Tasks[id], s.Policy, s.Now, false))
	}
	return out, nil
}

// Reopen opens a closed task again.
func (s *Service) Reopen(ctx context.Context, id string) (workqueue.TaskJSON, error) {
	_, st, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.Reopen(st, id)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return workqueue.TaskJSON{}, err
	}
	return st.View(st.Tasks[id], s.Policy, s.Now, false), nil
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
	events, _, err := s.write(ctx, Tracker, func(st *workqueue.State, _ string) ([]eventlog.Draft, error) {
		d, err := workqueue.AddComment(st, id, text)
		return []eventlog.Draft{d}, err
	})
	if err != nil {
		return workqueue.CommentJSON{}, err
	}
	e := events[0]
	return workqueue.CommentJSON{Author: e.Actor, Text: text, CreatedAt: e.At}, nil
}
