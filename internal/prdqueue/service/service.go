// Package service is the PRD queue's service: every prd command goes
// through it. It reads PRD files from the work tree (facts.go), decides with
// the pure functions of prdqueue under the log's lock, and creates epics in
// the work source, spool's tracker in the same append as the outcome, or
// bd/br between an intent and an outcome event (promote.go).
package service

import (
	"context"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/beads"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/prd"
	"github.com/spoolhq/spool/internal/prdqueue"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
)

// Service is the PRD queue for one command.
type Service struct {
	store.Env
	Dir    string // the work tree PRD paths are relative to
	Policy workqueue.Policy
	source *beads.Source // nil: epics are spool tasks
	cache  cache
	wq     workqueue.Settings
}

// Open reads the configuration; dir is the work tree the command runs in.
func Open(env store.Env, dir string) *Service {
	wq := workqueue.SettingsFrom(env.Store.Config)
	s := &Service{Env: env, Dir: dir, Policy: wq.Policy, wq: wq}
	if kind := wq.Source; kind != workqueue.SourceNative {
		s.source = &beads.Source{Kind: kind, Bin: wq.SourceBin, Dir: env.Store.Repo.WorkTree}
	}
	s.cache = cache{files: map[string]cached{}}
	return s
}

// Read returns the queue up to date.
func (s *Service) Read(ctx context.Context) (*prdqueue.State, error) {
	v, err := s.Store.Read(ctx, prdqueue.Name)
	if err != nil {
		return nil, err
	}
	return stateOf(v), nil
}

// ReadFeature is Read for the commands that take a feature ("": all of
// them): not_found when there is no such feature run.
func (s *Service) ReadFeature(ctx context.Context, feature string) (*prdqueue.State, error) {
	st, err := s.Read(ctx)
	if err == nil && feature != "" && st.Features[feature] == nil {
		err = NotFoundFeature(feature)
	}
	return st, err
}

func stateOf(v *projections.View) *prdqueue.State {
	p, _ := projections.As[*prdqueue.Projection](v, prdqueue.Name)
	return p.State()
}

// decision is a PRD queue decision, on the queue's state and the view of
// the other projections it opened: the drafts to append and the command's
// result. Like store.Decider it must be repeatable.
type decision[R any] func(st *prdqueue.State, v *projections.View, actor string) ([]eventlog.Draft, R, error)

// written is what a write appended, the state after it and its result.
type written[R any] struct {
	State  *prdqueue.State
	Events []eventlog.Event
	Result R
}

// write decides under the log's lock and appends; it returns the state
// after the events.
func (s *Service) write(ctx context.Context, names []string, decide func(st *prdqueue.State, v *projections.View, actor string) ([]eventlog.Draft, error)) (*prdqueue.State, []eventlog.Event, error) {
	w, err := writeAs(ctx, s, store.Local, names, func(st *prdqueue.State, v *projections.View, actor string) ([]eventlog.Draft, struct{}, error) {
		d, err := decide(st, v, actor)
		return d, struct{}{}, err
	})
	return w.State, w.Events, err
}

// writeAs runs decide on the PRD queue and the projections names; a
// promotion goes store.Claiming, which sync.claims = remote takes through
// the git remote: two machines never promote the same PRD.
func writeAs[R any](ctx context.Context, s *Service, mode store.Mode, names []string, decide decision[R]) (written[R], error) {
	w, err := store.WriteAs(ctx, s.Env, mode, append([]string{prdqueue.Name}, names...), func(v *projections.View, actor string) ([]eventlog.Draft, R, error) {
		return decide(stateOf(v), v, actor)
	})
	if err != nil {
		return written[R]{}, err
	}
	return written[R]{State: stateOf(w.View), Events: w.Events, Result: w.Result}, nil
}

// Start starts a feature run; it returns the manifest.
func (s *Service) Start(ctx context.Context, slug, mode string, workerCap int) (prdqueue.Manifest, bool, error) {
	st, events, err := s.write(ctx, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, error) {
		return prdqueue.StartFeature(st, slug, mode, workerCap)
	})
	if err != nil {
		return prdqueue.Manifest{}, false, err
	}
	return st.Manifest(slug), len(events) > 0, nil
}

// Add adds a PRD to a feature run.
func (s *Service) Add(ctx context.Context, feature, slug, path string) (prdqueue.ManifestItem, bool, error) {
	st, events, err := s.write(ctx, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, error) {
		return prdqueue.AddItem(st, feature, slug, path)
	})
	if err != nil {
		return prdqueue.ManifestItem{}, false, err
	}
	return st.ManifestItem(st.Items[prdqueue.ItemKey{Feature: feature, PRD: slug}]), len(events) > 0, nil
}

// itemChange decides about one item, found under the lock.
func (s *Service) itemChange(ctx context.Context, slug, feature string, decide func(st *prdqueue.State, it *prdqueue.Item) ([]eventlog.Draft, error)) (prdqueue.ManifestItem, error) {
	w, err := writeAs(ctx, s, store.Local, nil, func(st *prdqueue.State, _ *projections.View, _ string) ([]eventlog.Draft, prdqueue.ItemKey, error) {
		it, err := st.FindItem(slug, feature)
		if err != nil {
			return nil, prdqueue.ItemKey{}, err
		}
		d, err := decide(st, it)
		return d, prdqueue.ItemKey{Feature: it.Feature, PRD: it.PRD}, err
	})
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	if it := w.State.Items[w.Result]; it != nil {
		return w.State.ManifestItem(it), nil
	}
	return prdqueue.ManifestItem{PRDSlug: slug}, nil
}

// Discover moves a pending PRD into discovery.
func (s *Service) Discover(ctx context.Context, slug, feature string) (prdqueue.ManifestItem, error) {
	return s.itemChange(ctx, slug, feature, func(_ *prdqueue.State, it *prdqueue.Item) ([]eventlog.Draft, error) {
		d, err := prdqueue.Discover(it)
		return []eventlog.Draft{d}, err
	})
}

// Retry puts a queue_failed PRD back, for the next promote: to approved, or
// to the state its gates give now.
func (s *Service) Retry(ctx context.Context, slug, feature string) (prdqueue.ManifestItem, error) {
	return s.itemChange(ctx, slug, feature, func(st *prdqueue.State, it *prdqueue.Item) ([]eventlog.Draft, error) {
		return prdqueue.Retry(st, it, s.Now)
	})
}

// Remove takes a PRD out of its feature run.
func (s *Service) Remove(ctx context.Context, slug, feature string) error {
	_, err := s.itemChange(ctx, slug, feature, func(_ *prdqueue.State, it *prdqueue.Item) ([]eventlog.Draft, error) {
		if it.InFlight {
			return nil, fault.New(fault.CodeInvalidStateTransition, fault.ErrInvalidTransition,
				"PRD "+slug+" has an enqueue in flight; run spool prd promote first", "prd_slug", slug)
		}
		return []eventlog.Draft{prdqueue.Remove(it)}, nil
	})
	return err
}

// pathOf is the file of a PRD the queue knows.
func (s *Service) pathOf(ctx context.Context, slug, feature string) (string, error) {
	st, err := s.Read(ctx)
	if err != nil {
		return "", err
	}
	it, err := st.FindItem(slug, feature)
	if err != nil {
		return "", err
	}
	return st.PRDs[it.PRD].Path, nil
}

// Submit sends a PRD for approval; its file must exist.
func (s *Service) Submit(ctx context.Context, slug, feature string) (prdqueue.ManifestItem, error) {
	path, err := s.pathOf(ctx, slug, feature)
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	f, err := s.facts(path, nil)
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	return s.itemChange(ctx, slug, feature, func(st *prdqueue.State, it *prdqueue.Item) ([]eventlog.Draft, error) {
		return prdqueue.Submit(st, it, f, s.Now)
	})
}

// Gate names the front matter key of a gate: "prd" or "beads".
func Gate(name string) (string, bool) {
	switch name {
	case "prd":
		return prd.PRDGateKey, true
	case "beads":
		return prd.BeadsGateKey, true
	}
	return "", false
}

// Approve writes `approved` into a gate of the PRD's front matter (to be
// committed like any change) and records the approval: for the PRD gate an
// approval act, which after an edit is a new approval_version.
func (s *Service) Approve(ctx context.Context, slug, feature, gate string) (prdqueue.ManifestItem, error) {
	key, ok := Gate(gate)
	if !ok {
		return prdqueue.ManifestItem{}, fault.Usagef(fault.CodeUsage, "--gate must be prd or beads, got %q", gate)
	}
	path, err := s.pathOf(ctx, slug, feature)
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	full, info, err := s.statPRD(path)
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	data, err := readPRD(full, path)
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	if _, err := parse(path, data); err != nil { // front matter that cannot take a value
		return prdqueue.ManifestItem{}, err
	}
	changed, err := prd.SetGate(data, key, prdqueue.GateApproved)
	if err != nil {
		return prdqueue.ManifestItem{}, fault.New(prdqueue.CodeInvalidFrontMatter, err, path+": front matter: "+err.Error(), "file", path)
	}
	if string(changed) != string(data) {
		if err := durable.WriteWorkTreeFile(full, changed, info.Mode().Perm()); err != nil {
			return prdqueue.ManifestItem{}, fault.New(fault.CodeStorage, err, "cannot write "+path+": "+err.Error(), "file", path)
		}
	}
	f, err := parse(path, changed)
	if err != nil {
		return prdqueue.ManifestItem{}, err
	}
	return s.itemChange(ctx, slug, feature, func(st *prdqueue.State, it *prdqueue.Item) ([]eventlog.Draft, error) {
		return prdqueue.Reconcile(st, it.PRD, f, gate == "prd", s.Now), nil
	})
}
