package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/projections"
)

// Sync reads every PRD file the queue's features name (one feature's when
// feature is set) and records what changed: gates, open questions, content,
// approvals, and the moves of submitted PRDs that follow. A submitted PRD
// whose file is gone, leads outside the work tree or has front matter
// spool cannot read is recorded so (prd.unreadable, with a warning the
// first time): its entries wait, and go on when a sync reads it again.
// Another file that cannot be read is a warning, and that PRD is left as
// it was; a PRD not yet submitted may have no file. It returns the events
// appended. When nothing changed it takes no lock and, with the cache,
// reads no file.
func (s *Service) Sync(ctx context.Context, feature string) (int, error) {
	s.loadCache()
	defer s.saveCache()
	st, err := s.Read(ctx)
	if err != nil {
		return 0, err
	}
	if feature != "" && st.Features[feature] == nil {
		return 0, NotFoundFeature(feature)
	}
	paths, submitted := map[string]string{}, map[string]bool{}
	for _, slug := range st.FeatureSlugs() {
		if feature != "" && slug != feature {
			continue
		}
		for _, p := range st.Features[slug].Items {
			paths[p] = st.PRDs[p].Path
			if st.Items[prdqueue.ItemKey{Feature: slug, PRD: p}].State.Submitted() {
				submitted[p] = true
			}
		}
	}
	facts := map[string]prdqueue.Facts{}
	unreadable := map[string]*fault.Error{}
	var changed []string
	for _, slug := range slices.Sorted(maps.Keys(paths)) {
		var known *prdqueue.Facts
		if p := st.PRDs[slug]; p.Read {
			known = &prdqueue.Facts{PRDGate: p.PRDGate, BeadsGate: p.BeadsGate, OpenQuestions: p.OpenQuestions, Hash: p.Hash}
		}
		f, err := s.facts(paths[slug], known)
		if err != nil {
			bad := fault.Classify(err)
			switch {
			case len(prdqueue.Unreadable(st, slug, bad.Code, bad.Message)) > 0:
				unreadable[slug] = bad
				changed = append(changed, slug)
				s.Warn(fmt.Sprintf("PRD %s waits: %s", slug, bad.Message))
			case st.PRDs[slug].Unreadable == bad.Code:
				// recorded already: the manifest says it
			case errors.Is(err, errMissing) && !submitted[slug]:
				// not written yet
			default:
				s.Warn(fmt.Sprintf("PRD %s left as it was: %v", slug, err))
			}
			continue
		}
		facts[slug] = f
		if len(prdqueue.Reconcile(st, slug, f, false, s.Now)) > 0 {
			changed = append(changed, slug)
		}
	}
	if len(changed) == 0 {
		return 0, nil
	}
	_, events, err := s.write(ctx, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, error) {
		var drafts []eventlog.Draft
		for _, slug := range changed {
			switch bad := unreadable[slug]; {
			case st.PRDs[slug] == nil:
			case bad != nil:
				drafts = append(drafts, prdqueue.Unreadable(st, slug, bad.Code, bad.Message)...)
			default:
				drafts = append(drafts, prdqueue.Reconcile(st, slug, facts[slug], false, s.Now)...)
			}
		}
		return drafts, nil
	})
	return len(events), err
}
