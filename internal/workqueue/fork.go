package workqueue

import (
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// Fork is a state that drafts are applied to as they are decided, leaving
// the state it was made from as it was: a command about several tasks
// decides each on the state after the decisions before it, as the log will
// have them. Drafts are applied when the state is next asked for (a command
// about one task never copies anything); the maps are copied then, and a
// task or entry when a draft first touches it.
type Fork struct {
	base    *State
	s       *State
	cow     copyOnWrite
	actor   string
	now     time.Time
	drafts  []eventlog.Draft
	applied int // how many of drafts the state has
}

// NewFork starts a fork of s for drafts by actor at now.
func NewFork(s *State, actor string, now time.Time) *Fork {
	return &Fork{base: s, s: s, actor: actor, now: now}
}

// State is the state after the drafts added so far.
func (f *Fork) State() (*State, error) {
	if err := f.apply(f.drafts[f.applied:]); err != nil {
		return nil, err
	}
	f.applied = len(f.drafts)
	return f.s, nil
}

// Drafts are the drafts added so far, in order.
func (f *Fork) Drafts() []eventlog.Draft { return f.drafts }

// Add keeps drafts, for the state to have them next time it is asked for.
func (f *Fork) Add(drafts ...eventlog.Draft) {
	f.drafts = append(f.drafts, drafts...)
}

func (f *Fork) apply(drafts []eventlog.Draft) error {
	if len(drafts) == 0 {
		return nil
	}
	if f.s == f.base {
		f.cow.share(f.base)
	}
	for _, d := range drafts {
		f.s = f.cow.own(f.s, d.Subject)
		e, err := d.Event(f.actor, f.now)
		if err != nil {
			return err
		}
		if f.s.Tasks != nil { // a side the command did not open stays unopened
			f.s.applyTask(e)
		}
		if f.s.History != nil {
			f.s.applyEntry(e)
		}
	}
	return nil
}

// clone copies h deeply enough that applying events to the copy leaves h as it was.
func (h *Entry) clone() *Entry {
	c := *h
	c.Pending, c.SyncFailed, c.Hooks = slices.Clone(h.Pending), slices.Clone(h.SyncFailed), slices.Clone(h.Hooks)
	return &c
}

// clone copies t deeply enough that applying events to the copy leaves t as it was.
func (t *Task) clone() *Task {
	c := *t
	c.Labels, c.Blockers, c.Links = slices.Clone(t.Labels), slices.Clone(t.Blockers), slices.Clone(t.Links)
	x := *t.Detail()
	x.comments = x.comments[:len(x.comments):len(x.comments)] // shared: an append copies
	c.detail, c.rawDetail = &x, ""
	return &c
}

// Each decides about every id once, in order (a repeated id is decided
// the first time only), each on the state after the decisions before it,
// and returns every draft: what bd update and bd close do with several ids.
func Each(s *State, ids []string, actor string, now time.Time, decide func(f *Fork, id string) error) ([]eventlog.Draft, error) {
	f := NewFork(s, actor, now)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if err := decide(f, id); err != nil {
			return nil, err
		}
	}
	return f.Drafts(), nil
}

// Decide runs one decision on the fork's state and adds its drafts.
func (f *Fork) Decide(decide func(s *State) ([]eventlog.Draft, error)) error {
	s, err := f.State()
	if err != nil {
		return err
	}
	drafts, err := decide(s)
	if err != nil {
		return err
	}
	f.Add(drafts...)
	return nil
}
