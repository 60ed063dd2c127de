package service

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
)

// trail reads an entry's audit trail from the log: every merge event about
// it, in replay order (lease renewals aside). N numbers events along the log.
// Events name their entry by ref (older ones by number), not by subject:
// the number in a subject is the one the writing clone gave. Events the fold
// resolved as a conflict between clones say what it made of them instead:
// Skipped, or the status the entry got (a duplicate submission's cancelled).
func trail(ctx context.Context, st *store.Store, e *mergequeue.Entry) ([]mergequeue.AuditStep, error) {
	r, err := st.Log.Read(nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	subject := mergequeue.Subject(e.ID)
	ref := []byte(e.Ref)
	resolved := map[string]mergequeue.Resolution{}
	for _, c := range e.Conflicts {
		resolved[c.Event] = c
	}
	steps := []mergequeue.AuditStep{}
	for n := 1; ; n++ {
		ev, _, err := r.Next()
		if err == io.EOF {
			return steps, nil
		}
		if err != nil {
			return nil, err
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !strings.HasPrefix(ev.Type, "merge.") || ev.Type == mergequeue.EvLeaseRenewed {
			continue
		}
		// Cheap tests first: most events are about other entries.
		if ev.ID != e.Ref && ev.Subject != subject && (len(ref) == 0 || !bytes.Contains(ev.Data, ref)) {
			continue
		}
		var d mergequeue.EntryData
		if json.Unmarshal(ev.Data, &d) != nil {
			continue
		}
		switch {
		case ev.Type == mergequeue.EvSubmitted:
			if ev.ID != e.Ref {
				continue
			}
		case d.EntryRef != "":
			if d.EntryRef != e.Ref {
				continue
			}
		case d.EntryID != e.ID: // an older event without a ref
			continue
		}
		step := mergequeue.StepOf(ev, &d)
		step.N = n
		if c, ok := resolved[ev.ID]; ok {
			if c.To == "" {
				step.Skipped = c.Reason
			} else {
				step.To, step.Reason = c.To, c.Reason
			}
		}
		steps = append(steps, step)
	}
}

// Refused reads the refused submissions (merge.refused) from the log, oldest first.
func (s *Service) Refused(ctx context.Context) ([]mergequeue.Refused, error) {
	r, err := s.Store.Log.Read(nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := []mergequeue.Refused{}
	for n := 1; ; n++ {
		ev, _, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ev.Type != mergequeue.EvRefused {
			continue
		}
		var d mergequeue.RefusedData
		if json.Unmarshal(ev.Data, &d) != nil || d.Code == "" {
			continue
		}
		out = append(out, mergequeue.Refused{At: ev.At, Actor: ev.Actor, Event: ev.ID, RefusedData: d})
	}
}
