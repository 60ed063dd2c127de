package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// RunHooks runs the notification hooks this clone was asked to run and
// that nobody has run yet (spool stopped between a decision and its hook):
// what spool watch does on every pass. It reads only when there are none.
func (s *Service) RunHooks(ctx context.Context) error {
	st, err := s.Read(ctx, []string{workqueue.QueueName})
	if err != nil {
		return err
	}
	if s.ownHooks(st) {
		s.runHooks(ctx, false)
	}
	return nil
}

// ownHooks reports whether st has hook requests this clone made and nobody
// finished. A state without the queue's history has none to say.
func (s *Service) ownHooks(st *workqueue.State) bool {
	ids := st.WithHooks()
	if len(ids) == 0 {
		return false
	}
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		return false
	}
	for _, id := range ids {
		if h := st.Entry(id); h != nil && slices.ContainsFunc(h.Hooks, func(p workqueue.PendingHook) bool { return p.Writer == writer }) {
			return true
		}
	}
	return false
}

// runHooks runs every hook request this clone made and nobody finished, in
// task order, each with task.hook_started before it and task.hook_finished
// after. A request another clone made is that clone's to run: the log is
// shared, the hook is not run twice. One that started and did not finish
// is not run again (the hook may have done its work; spool's process group
// ended it with spool): its outcome records that spool stopped.
//
// They run under the clone's hooks lock, and the list is read after it is
// taken: two commands never run one request. With wait false a command
// that finds the lock held leaves the work to its holder. A hook that fails
// is a warning, never the command's error: the decision is in the log.
func (s *Service) runHooks(ctx context.Context, wait bool) {
	hooks := s.hooks
	timeout := s.settings.HookTimeout
	var lockWait time.Duration
	if wait {
		lockWait = s.settings.Core.LockTimeout + timeout // the holder may be running a hook
	}
	unlock, ok, err := s.Store.Mutex(ctx, "hooks", lockWait)
	switch {
	case err != nil:
		s.Warn(fmt.Sprintf("notification hooks stay pending: %v", err))
		return
	case !ok:
		if wait {
			s.Warn(fmt.Sprintf("notification hooks stay pending: another spool command held %s longer than lock.timeout and workqueue.hook_timeout", s.Store.MutexPath("hooks")))
		}
		return
	}
	defer unlock()
	writer, err := s.Store.Log.WriterID()
	if err != nil {
		s.Warn(fmt.Sprintf("notification hooks stay pending: %v", err))
		return
	}
	st, err := s.Read(ctx, []string{workqueue.QueueName})
	if err != nil {
		s.Warn(fmt.Sprintf("notification hooks stay pending: %v", err))
		return
	}
	type job struct {
		id string
		p  workqueue.PendingHook
	}
	var jobs []job // copied: the writes below change the state they were read from
	for _, id := range st.WithHooks() {
		for _, p := range st.Entry(id).Hooks {
			if p.Writer == writer {
				jobs = append(jobs, job{id, p})
			}
		}
	}
	record := func(id string, d eventlog.Draft) error {
		// Recorded even after an interrupt: the outcome is what makes the
		// request done.
		_, _, err := s.Env.Write(context.WithoutCancel(ctx), []string{workqueue.QueueName}, func(*projections.View, string) ([]eventlog.Draft, error) {
			return []eventlog.Draft{d}, nil
		})
		return err
	}
	for _, j := range jobs {
		key := workqueue.HookKey(j.p.Hook)
		outcome := workqueue.HookFinishedData{Request: j.p.Request}
		switch argv := hooks[j.p.Hook]; {
		case j.p.Started:
			outcome.Error = "interrupted: spool stopped while the hook ran; it is not run again"
		case len(argv) == 0:
			outcome.Error = key + " is no longer set"
		case ctx.Err() != nil:
			return // the next command runs it
		default:
			if err := record(j.id, eventlog.Draft{Type: workqueue.TypeHookStarted, Subject: j.id,
				Data: workqueue.HookRequestData{Request: j.p.Request}}); err != nil {
				s.Warn(fmt.Sprintf("%s for %s did not run (it stays pending): %v", key, j.id, err))
				return
			}
			outcome.ExitCode, outcome.Error = s.runHook(ctx, argv, j.id, j.p, timeout)
		}
		if err := record(j.id, eventlog.Draft{Type: workqueue.TypeHookFinished, Subject: j.id, Data: outcome}); err != nil {
			s.Warn(fmt.Sprintf("%s for %s ran, but its outcome was not recorded (it is not run again): %v", key, j.id, err))
			return
		}
		switch {
		case outcome.Error != "":
			s.Warn(fmt.Sprintf("%s for %s: %s", key, j.id, outcome.Error))
		case *outcome.ExitCode != 0:
			s.Warn(fmt.Sprintf("%s for %s exited %d", key, j.id, *outcome.ExitCode))
		}
	}
}

// runHook runs argv for request p about task id: in the work tree, in a
// process group of its own (internal/proc), the event on stdin, stopped
// after timeout. It returns the exit status, or why there is none, with
// the end of what the hook wrote on stderr when it failed.
func (s *Service) runHook(ctx context.Context, argv []string, id string, p workqueue.PendingHook, timeout time.Duration) (*int, string) {
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stderr := &tail{max: 2048}
	env := append(os.Environ(), "SPOOL_HOOK="+p.Hook, "SPOOL_EVENT="+p.Event, "SPOOL_TASK_ID="+id)
	err := proc.Run(hctx, proc.Cmd{Argv: argv, Dir: s.Store.Repo.WorkTree, Env: env,
		Stdin: bytes.NewReader(p.Stdin(id)), Stderr: stderr})
	var exit *proc.ExitError
	switch {
	case err == nil:
		code := 0
		return &code, ""
	case hctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return nil, fmt.Sprintf("timed out after %s (workqueue.hook_timeout)%s", timeout, stderr.suffix())
	case ctx.Err() != nil:
		return nil, "interrupted: spool was stopped while the hook ran" + stderr.suffix()
	case errors.As(err, &exit) && exit.Code >= 0:
		code := exit.Code
		if stderr.Len() > 0 {
			return &code, "exit status " + fmt.Sprint(code) + stderr.suffix()
		}
		return &code, ""
	case errors.As(err, &exit):
		return nil, err.Error() + stderr.suffix()
	}
	return nil, "cannot start: " + err.Error()
}

// tail keeps the last max bytes written to it.
type tail struct {
	bytes.Buffer
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	t.Buffer.Write(p)
	if over := t.Len() - t.max; over > 0 {
		t.Next(over)
	}
	return n, nil
}

// suffix is ": " and what the hook wrote on stderr, or "".
func (t *tail) suffix() string {
	if b := bytes.TrimSpace(t.Bytes()); len(b) > 0 {
		return ": " + string(b)
	}
	return ""
}
