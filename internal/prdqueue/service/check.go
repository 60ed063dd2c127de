package service

import (
	"context"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Check records the queue-ready checks of every queued PRD (of one feature,
// or all): selectable when the epic or one of its descendants is ready work
// in the source, and doctorPass, which the caller took from spool doctor.
func (s *Service) Check(ctx context.Context, feature string, doctorPass bool) (*prdqueue.State, error) {
	st, err := s.Read(ctx)
	if err != nil {
		return nil, err
	}
	if feature != "" && st.Features[feature] == nil {
		return nil, NotFoundFeature(feature)
	}
	selectable := map[string]bool{} // by epic
	ready, err := s.readySet(ctx)
	if err != nil {
		return nil, err
	}
	for _, slug := range st.FeatureSlugs() {
		if feature != "" && slug != feature {
			continue
		}
		for _, p := range st.Features[slug].Items {
			epic := st.PRDs[p].Epic
			if st.Items[prdqueue.ItemKey{Feature: slug, PRD: p}].State != prdqueue.Queued || epic == "" {
				continue
			}
			if _, done := selectable[epic]; !done {
				if selectable[epic], err = s.selectable(ctx, epic, ready); err != nil {
					return nil, err
				}
			}
		}
	}
	st, _, err = s.write(ctx, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, error) {
		var drafts []eventlog.Draft
		for _, slug := range st.FeatureSlugs() {
			if feature != "" && slug != feature {
				continue
			}
			for _, p := range st.Features[slug].Items {
				it := st.Items[prdqueue.ItemKey{Feature: slug, PRD: p}]
				if it.State == prdqueue.Queued {
					drafts = append(drafts, prdqueue.Check(it, selectable[st.PRDs[p].Epic], doctorPass)...)
				}
			}
		}
		return drafts, nil
	})
	return st, err
}

// Recheck keeps readiness current without prd check: it checks again
// whether the epic of every queued PRD whose readiness says a check passes
// (prdqueue.Rechecks) still has ready work, and records what changed, with
// the doctor_pass the last prd check found. watch and the git hooks run it
// on every pass, so a closed epic stops being queue-ready there and then.
// It returns the items whose readiness it changed, and does nothing (no
// lock, no tracker read) when no readiness says a check passes.
func (s *Service) Recheck(ctx context.Context) ([]prdqueue.ManifestItem, error) {
	st, err := s.Read(ctx)
	if err != nil || len(prdqueue.Rechecks(st)) == 0 {
		return nil, err
	}
	ready, err := s.readySet(ctx)
	if err != nil {
		return nil, err
	}
	selectable := map[string]bool{} // by epic
	for _, it := range prdqueue.Rechecks(st) {
		epic := st.PRDs[it.PRD].Epic
		if _, done := selectable[epic]; !done {
			if selectable[epic], err = s.selectable(ctx, epic, ready); err != nil {
				return nil, err
			}
		}
	}
	w, err := writeAs(ctx, s, store.Local, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, []prdqueue.ItemKey, error) {
		var changed []prdqueue.ItemKey
		var drafts []eventlog.Draft
		for _, it := range prdqueue.Rechecks(st) {
			sel, known := selectable[st.PRDs[it.PRD].Epic]
			if d := prdqueue.Check(it, sel, it.DoctorPass); known && len(d) > 0 {
				drafts = append(drafts, d...)
				changed = append(changed, prdqueue.ItemKey{Feature: it.Feature, PRD: it.PRD})
			}
		}
		return drafts, changed, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]prdqueue.ManifestItem, 0, len(w.Result))
	for _, k := range w.Result {
		out = append(out, w.State.ManifestItem(w.State.Items[k]))
	}
	return out, nil
}

// readySet is the ids of ready work with their ancestors: for spool's
// tracker, every ready task and the parents above it; for bd/br, the ids
// bd ready lists (descendants are asked for per epic).
func (s *Service) readySet(ctx context.Context) (map[string]bool, error) {
	set := map[string]bool{}
	if s.source != nil {
		issues, err := s.source.Ready(ctx, nil)
		if err != nil {
			return nil, err
		}
		for _, i := range issues {
			set[i.ID] = true
		}
		return set, nil
	}
	v, err := s.Store.Read(ctx, workqueue.Name)
	if err != nil {
		return nil, err
	}
	tasks, _ := projections.As[*workqueue.TasksProjection](v, workqueue.Name)
	ts := tasks.State()
	for _, t := range ts.Ready(s.Policy, workqueue.ReadyFilter{Claimed: true}, s.Now, workqueue.Unsorted) {
		for id, depth := t.ID, 0; id != "" && !set[id] && depth < 64; depth++ {
			set[id] = true
			if p := ts.Task(id); p != nil {
				id = p.Parent
			} else {
				id = ""
			}
		}
	}
	return set, nil
}

func (s *Service) selectable(ctx context.Context, epic string, ready map[string]bool) (bool, error) {
	if ready[epic] || s.source == nil {
		return ready[epic], nil
	}
	return s.source.ReadyUnder(ctx, epic)
}

// NotFoundFeature is the error for a feature run that does not exist.
func NotFoundFeature(slug string) error { return fault.NotFound("feature", slug) }
