package prdqueue

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// Feature is a feature run: its settings and its PRDs in manifest order.
type Feature struct {
	Slug      string    `json:"slug"`
	Mode      string    `json:"mode"`
	WorkerCap int       `json:"worker_cap"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Items     []string  `json:"items"` // PRD slugs, in the order added
}

// Item is one PRD in one feature run: its state in the queue.
type Item struct {
	Feature     string `json:"feature"`
	PRD         string `json:"prd"`
	State       Status `json:"state"`
	RetryCount  int    `json:"retry_count,omitempty"`
	LastError   string `json:"last_error,omitempty"`
	Selectable  bool   `json:"selectable,omitempty"`
	DoctorPass  bool   `json:"doctor_pass,omitempty"`
	InFlight    bool   `json:"in_flight,omitempty"`    // enqueue_started without its outcome
	Key         string `json:"key,omitempty"`          // the key of the enqueue in flight, or the last one
	EnqueuedKey string `json:"enqueued_key,omitempty"` // the key this item was queued with
}

// PRD is what the PRD file says and what was approved, whichever features
// name it: one file, one approval history, one epic.
type PRD struct {
	Slug           string   `json:"slug"`
	Path           string   `json:"path"`
	Read           bool     `json:"read,omitempty"`
	PRDGate        string   `json:"prd_gate,omitempty"`
	BeadsGate      string   `json:"beads_gate,omitempty"`
	OpenQuestions  []string `json:"open_questions,omitempty"`
	Hash           string   `json:"hash,omitempty"`
	Version        int      `json:"version"`                 // approval_version: 1 until an approved PRD is edited and approved again
	ApprovedHash   string   `json:"approved_hash,omitempty"` // the content the PRD gate approved; "" when none is current
	Invalidated    bool     `json:"invalidated,omitempty"`   // edited after its approval, not approved since
	SeenUnapproved bool     `json:"seen_unapproved,omitempty"`
	Epic           string   `json:"epic,omitempty"`
	// Unreadable is why the file could not be read at the last sync (a
	// code, with its message in UnreadableError); "" once it is read again.
	Unreadable      string `json:"unreadable,omitempty"`
	UnreadableError string `json:"unreadable_error,omitempty"`
}

// ItemKey names an item.
type ItemKey struct{ Feature, PRD string }

// State is the PRD queue.
type State struct {
	Features map[string]*Feature
	Items    map[ItemKey]*Item
	PRDs     map[string]*PRD
	Keys     map[string]string // idempotency keys enqueued, with their epic

	byPRD map[string][]*Item // the items of each PRD, by feature: an index, not saved
}

// NewState returns an empty queue.
func NewState() *State {
	return &State{Features: map[string]*Feature{}, Items: map[ItemKey]*Item{}, PRDs: map[string]*PRD{}, Keys: map[string]string{},
		byPRD: map[string][]*Item{}}
}

// Name is the projection's name.
const Name = "prd"

// Spec registers the projection: the manifests are work-tree files.
var Spec = projections.Spec{Name: Name, Version: 3, New: func() projections.Projection { return &Projection{s: NewState()} }}

// Projection folds the PRD queue's events.
type Projection struct{ s *State }

// State returns the folded state.
func (p *Projection) State() *State { return p.s }

// Key is the PRD's idempotency key now: <prd_slug>:<approval_version>.
func (p *PRD) Key() string { return p.Slug + ":" + strconv.Itoa(p.Version) }

// PRDApproved reports whether the PRD gate is approved for this content.
func (p *PRD) PRDApproved() bool {
	return p.PRDGate == GateApproved && p.ApprovedHash != "" && p.ApprovedHash == p.Hash
}

// BeadsApproved reports whether the beads gate is approved.
func (p *PRD) BeadsApproved() bool { return p.BeadsGate == GateApproved }

// ItemsOf returns the items that name a PRD, by feature.
func (s *State) ItemsOf(prd string) []*Item { return s.byPRD[prd] }

// index adds an item to byPRD, keeping each PRD's items by feature.
func (s *State) index(it *Item) {
	list := append(s.byPRD[it.PRD], it)
	sort.Slice(list, func(i, j int) bool { return list[i].Feature < list[j].Feature })
	s.byPRD[it.PRD] = list
}

// FeatureSlugs returns the features' slugs in order.
func (s *State) FeatureSlugs() []string {
	out := make([]string, 0, len(s.Features))
	for slug := range s.Features {
		out = append(out, slug)
	}
	sort.Strings(out)
	return out
}

func (p *Projection) Apply(e *eventlog.Event) error {
	p.s.Apply(e)
	return nil
}

// Apply folds one event. Events it cannot use (unknown items, moves the
// table forbids, bad data) are skipped.
func (s *State) Apply(e *eventlog.Event) {
	switch e.Type {
	case TypeFeatureStarted:
		var d FeatureData
		// The slug names its manifest's file, and promote runs up to the
		// cap's workers at once: only what prd start takes.
		if json.Unmarshal(e.Data, &d) != nil || s.Features[d.FeatureSlug] != nil || e.Subject != FeatureSubject(d.FeatureSlug) ||
			CheckSlug("feature", d.FeatureSlug) != nil || d.WorkerCap < 1 || d.WorkerCap > MaxWorkerCap ||
			d.Mode != ModeConflictAware && d.Mode != ModeSequential {
			return
		}
		s.Features[d.FeatureSlug] = &Feature{Slug: d.FeatureSlug, Mode: d.Mode, WorkerCap: d.WorkerCap, CreatedAt: e.At, UpdatedAt: e.At}
		return
	}
	slug, ok := prdSlug(e.Subject)
	if !ok {
		return
	}
	switch e.Type {
	case TypeAdded:
		var d AddedData
		f := s.featureOf(e, &d.FeatureSlug, &d)
		if f == nil {
			return
		}
		k := ItemKey{d.FeatureSlug, slug}
		if s.Items[k] != nil {
			return
		}
		if s.PRDs[slug] == nil {
			if !SafePath(d.PRDPath) { // spool prd approve writes into it: only what prd add takes
				return
			}
			s.PRDs[slug] = &PRD{Slug: slug, Path: d.PRDPath, Version: 1}
		}
		it := &Item{Feature: d.FeatureSlug, PRD: slug, State: Pending}
		s.Items[k] = it
		s.index(it)
		f.Items = append(f.Items, slug)
		f.UpdatedAt = e.At
	case TypeRemoved:
		var d ItemData
		f := s.featureOf(e, &d.FeatureSlug, &d)
		if f == nil || s.Items[ItemKey{d.FeatureSlug, slug}] == nil {
			return
		}
		delete(s.Items, ItemKey{d.FeatureSlug, slug})
		s.byPRD[slug] = slices.DeleteFunc(slices.Clone(s.byPRD[slug]), func(it *Item) bool { return it.Feature == d.FeatureSlug })
		f.Items = slices.DeleteFunc(f.Items, func(x string) bool { return x == slug })
		f.UpdatedAt = e.At
	case TypeTransitioned:
		var d TransitionData
		it := s.itemOf(e, &d.FeatureSlug, &d)
		if it == nil || it.State != d.From || !CanTransition(d.From, d.To) {
			return
		}
		if d.From == QueueFailed && d.To == Approved {
			it.RetryCount, it.LastError = 0, "" // prd retry: a fresh start
		}
		it.State, it.Selectable, it.DoctorPass = d.To, false, false
	case TypeRead:
		var d ReadData
		p := s.PRDs[slug]
		if p == nil || json.Unmarshal(e.Data, &d) != nil {
			return
		}
		p.Read, p.PRDGate, p.BeadsGate, p.OpenQuestions, p.Hash = true, d.PRDGate, d.BeadsGate, d.OpenQuestions, d.ContentHash
		p.Unreadable, p.UnreadableError = "", ""
		if p.Invalidated && p.PRDGate != GateApproved {
			p.SeenUnapproved = true
		}
		s.touch(slug, e.At)
	case TypeUnreadable:
		var d UnreadableData
		p := s.PRDs[slug]
		if p == nil || json.Unmarshal(e.Data, &d) != nil || !unreadableReasons[d.Reason] {
			return
		}
		p.Unreadable, p.UnreadableError = d.Reason, d.Error
		s.touch(slug, e.At)
	case TypeApproved, TypeApprovalInvalidated:
		var d ApprovalData
		p := s.PRDs[slug]
		if p == nil || json.Unmarshal(e.Data, &d) != nil || d.ApprovalVersion < 1 {
			return
		}
		p.Version = d.ApprovalVersion
		if e.Type == TypeApproved {
			p.ApprovedHash, p.Invalidated, p.SeenUnapproved = d.ContentHash, false, false
		} else {
			p.ApprovedHash, p.Invalidated, p.SeenUnapproved = "", true, p.PRDGate != GateApproved
		}
		s.touch(slug, e.At)
	case TypeEnqueueStarted, TypeEnqueued, TypeEnqueueFailed:
		var d EnqueueData
		it := s.itemOf(e, &d.FeatureSlug, &d)
		if it == nil || d.IdempotencyKey == "" {
			return
		}
		switch e.Type {
		case TypeEnqueueStarted:
			it.InFlight, it.Key = true, d.IdempotencyKey
		case TypeEnqueued:
			if d.EpicID == "" || s.Keys[d.IdempotencyKey] != "" && s.Keys[d.IdempotencyKey] != d.EpicID {
				return // the key's first epic stays: one key, one epic
			}
			it.InFlight, it.Key, it.EnqueuedKey, it.LastError = false, d.IdempotencyKey, d.IdempotencyKey, ""
			it.RetryCount = max(it.RetryCount, d.Attempt-1)
			if it.State == Approved {
				it.State = Queued
			}
			s.PRDs[slug].Epic = d.EpicID
			s.Keys[d.IdempotencyKey] = d.EpicID
		case TypeEnqueueFailed:
			it.LastError, it.Key = d.Error, d.IdempotencyKey
			it.RetryCount = max(it.RetryCount, d.Attempt-1)
			if d.Final {
				it.InFlight = false
				if it.State == Approved {
					it.State = QueueFailed
				}
			}
		}
	case TypeChecked:
		var d CheckData
		it := s.itemOf(e, &d.FeatureSlug, &d)
		if it == nil {
			return
		}
		it.Selectable, it.DoctorPass = d.Selectable, d.DoctorPass
	default:
		return
	}
}

// prdSlug is the PRD a subject names, when it is a slug prd add takes:
// anyone who can push writes events, and a slug names files.
func prdSlug(subject string) (string, bool) {
	if len(subject) > 4 && subject[:4] == "prd/" && CheckSlug("PRD", subject[4:]) == nil {
		return subject[4:], true
	}
	return "", false
}

// featureOf decodes e.Data into data and returns the feature it names.
func (s *State) featureOf(e *eventlog.Event, feature *string, data any) *Feature {
	if json.Unmarshal(e.Data, data) != nil {
		return nil
	}
	return s.Features[*feature]
}

// itemOf decodes e.Data into data and returns the item it names, marking
// its feature updated.
func (s *State) itemOf(e *eventlog.Event, feature *string, data any) *Item {
	f := s.featureOf(e, feature, data)
	if f == nil {
		return nil
	}
	slug, _ := prdSlug(e.Subject)
	it := s.Items[ItemKey{*feature, slug}]
	if it != nil {
		f.UpdatedAt = e.At
	}
	return it
}

// touch marks every feature that names the PRD updated.
func (s *State) touch(prd string, at time.Time) {
	for _, it := range s.ItemsOf(prd) {
		s.Features[it.Feature].UpdatedAt = at
	}
}

// snapshot is the state as JSON, in a stable order.
type snapshot struct {
	Features []*Feature  `json:"features"`
	Items    []*Item     `json:"items"`
	PRDs     []*PRD      `json:"prds"`
	Keys     [][2]string `json:"keys"`
}

func (p *Projection) MarshalState() ([]byte, error) {
	s := p.s
	var snap snapshot
	for _, slug := range s.FeatureSlugs() {
		f := s.Features[slug]
		snap.Features = append(snap.Features, f)
		for _, prd := range f.Items {
			snap.Items = append(snap.Items, s.Items[ItemKey{slug, prd}])
		}
	}
	for _, slug := range slices.Sorted(maps.Keys(s.PRDs)) {
		snap.PRDs = append(snap.PRDs, s.PRDs[slug])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Keys)) {
		snap.Keys = append(snap.Keys, [2]string{k, s.Keys[k]})
	}
	return json.Marshal(snap)
}

func (p *Projection) UnmarshalState(b []byte) error {
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return err
	}
	s := NewState()
	for _, f := range snap.Features {
		s.Features[f.Slug] = f
	}
	for _, it := range snap.Items {
		s.Items[ItemKey{it.Feature, it.PRD}] = it
		s.index(it)
	}
	for _, prd := range snap.PRDs {
		s.PRDs[prd.Slug] = prd
	}
	for _, kv := range snap.Keys {
		s.Keys[kv[0]] = kv[1]
	}
	p.s = s
	return nil
}
