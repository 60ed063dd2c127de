package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// pending is one task.sync_requested to carry out.
type pending struct {
	task, request string
	data          json.RawMessage
}

// sync has the source do each request, in order, and records each one done
// with task.synced. It stops at the first failure: that request and the
// ones after it stay pending, for the next command (flush) to retry.
func (s *Service) sync(ctx context.Context, requests []pending) error {
	for _, r := range requests {
		var d workqueue.SyncData
		if err := json.Unmarshal(r.data, &d); err != nil {
			return err
		}
		if err := s.run(ctx, r.task, d); err != nil {
			return err
		}
		done := eventlog.Draft{Type: workqueue.TypeSynced, Subject: r.task, Data: workqueue.SyncedData{Request: r.request}}
		if _, _, err := s.Env.Write(ctx, nil, func(*projections.View, string) ([]eventlog.Draft, error) {
			return []eventlog.Draft{done}, nil
		}); err != nil {
			return err
		}
	}
	return nil
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
	}
	return fmt.Errorf("unknown sync request %q for %s", d.Op, id)
}

// flush retries the requests an earlier command left pending (bd failed, or
// spool died between the decision and the bd command). A failure here is a
// warning: the command at hand goes on, and the request stays pending.
func (s *Service) flush(ctx context.Context) {
	st, err := s.Read(ctx, []string{workqueue.QueueName})
	if err != nil {
		return
	}
	var requests []pending
	for id, h := range st.History {
		for _, p := range h.Pending {
			data, _ := json.Marshal(p.SyncData)
			requests = append(requests, pending{task: id, request: p.Request, data: data})
		}
	}
	if len(requests) == 0 {
		return
	}
	sort.SliceStable(requests, func(i, j int) bool { return requests[i].task < requests[j].task })
	if err := s.sync(ctx, requests); err != nil {
		s.Warn(fmt.Sprintf("a %s request left pending by an earlier command failed again (it stays pending): %v", s.source.Kind, err))
	}
}
