package service

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// syncPending has the source carry out every pending request and records each outcome: task.synced,
// or task.sync_failed, given up after MaxSyncAttempts. A task's requests run
// in the order they were made, and a failure holds back the ones after it, so
// that "add blocked" never lands after a later "remove blocked".
//
// The requests run under the clone's sync lock, and the pending list is read
// after it is taken: two commands never run one request twice, and a request
// another command finished meanwhile is not run again. With wait false a
// command that finds the lock held leaves the work to its holder.
//
// What fails is a warning, never the command's error: the decision is in the
// log already, and the request stays pending for the next command.
func (s *Service) syncPending(ctx context.Context, wait bool) {
	unlock, ok := s.syncLock(ctx, wait)
	if !ok {
		return
	}
	defer unlock()
	st, err := s.Read(ctx, []string{workqueue.QueueName})
	if err != nil {
		s.Warn(fmt.Sprintf("%s requests stay pending: %v", s.source.Kind, err))
		return
	}
	// A snapshot: the writes below do not change it.
	var pending []*workqueue.Entry
	for h := range st.Entries() {
		if len(h.Pending) > 0 {
			pending = append(pending, h)
		}
	}
	slices.SortFunc(pending, func(a, b *workqueue.Entry) int { return strings.Compare(a.ID, b.ID) })
	reported := map[string]bool{} // one warning per error a command meets
	for _, h := range pending {
		id := h.ID
		for _, p := range h.Pending {
			if ctx.Err() != nil {
				return
			}
			if p.Failures > 0 && s.Now.Before(p.LastFailedAt.Add(workqueue.SyncWait(p.Failures))) {
				break // refused lately: not again before its wait, nor what follows it
			}
			runErr := s.run(ctx, id, p.SyncData)
			var outcome eventlog.Draft
			gaveUp := false
			if runErr == nil {
				outcome = eventlog.Draft{Type: workqueue.TypeSynced, Subject: id, Data: workqueue.SyncedData{Request: p.Request}}
			} else {
				gaveUp = p.Failures+1 >= workqueue.MaxSyncAttempts
				outcome = eventlog.Draft{Type: workqueue.TypeSyncFailed, Subject: id,
					Data: workqueue.SyncFailedData{Request: p.Request, Error: runErr.Error(), GaveUp: gaveUp}}
			}
			if _, _, err := s.Env.Write(ctx, []string{workqueue.QueueName}, func(*projections.View, string) ([]eventlog.Draft, error) {
				return []eventlog.Draft{outcome}, nil
			}); err != nil {
				s.Warn(fmt.Sprintf("%s %s for %s ran, but its outcome was not recorded (it will run again): %v", s.source.Kind, p, id, err))
				return
			}
			if runErr == nil {
				continue
			}
			if gaveUp {
				s.Warn(fmt.Sprintf("%s %s for %s failed %d times; spool gave up on it (spool history %s shows it): %v",
					s.source.Kind, p, id, workqueue.MaxSyncAttempts, id, runErr))
				continue
			}
			// Said once, when the source first refuses it; the queue's own
			// decision stands meanwhile (a demotion, Blocked hold in spool).
			if p.Failures == 0 && !reported[runErr.Error()] {
				reported[runErr.Error()] = true
				s.Warn(fmt.Sprintf("%s refused %s for %s: %v; spool's queue keeps its decision, and the request is tried again in %s, %d times at most (spool history shows it pending)",
					s.source.Kind, p, id, runErr, workqueue.SyncWait(1), workqueue.MaxSyncAttempts-1))
			}
			break
		}
	}
}

// syncLock takes the clone's sync lock, waiting up to lock.timeout when wait
// is set.
func (s *Service) syncLock(ctx context.Context, wait bool) (unlock func(), ok bool) {
	var timeout time.Duration
	if wait {
		timeout = s.settings.Core.LockTimeout
	}
	unlock, ok, err := s.Store.Mutex(ctx, "sync", timeout)
	switch {
	case ok:
		return unlock, true
	case err != nil:
		s.Warn(fmt.Sprintf("%s requests stay pending: %v", s.source.Kind, err))
	case wait:
		s.Warn(fmt.Sprintf("%s requests stay pending: another spool command held %s longer than lock.timeout", s.source.Kind, s.Store.MutexPath("sync")))
	}
	return nil, false
}

// run is one request: the bd/br command for it.
func (s *Service) run(ctx context.Context, id string, d workqueue.SyncData) error {
	switch d.Op {
	case workqueue.SyncClose:
		return s.source.Close(ctx, id, d.Reason)
	case workqueue.SyncLabelAdd:
		return s.source.LabelAdd(ctx, id, d.Label)
	case workqueue.SyncLabelRemove:
		return s.source.LabelRemove(ctx, id, d.Label)
	case workqueue.SyncPriority:
		if d.Priority != nil {
			return s.source.SetPriority(ctx, id, *d.Priority)
		}
	case workqueue.SyncComment:
		return s.source.Comment(ctx, id, d.Reason)
	case workqueue.SyncReopen:
		return s.source.Reopen(ctx, id)
	}
	return fmt.Errorf("unknown sync request %q for %s", d.Op, id)
}
