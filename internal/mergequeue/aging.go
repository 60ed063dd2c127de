package mergequeue

import (
	"fmt"
	"slices"
	"time"
)

// Starvation aging (so that low-priority entries are not passed over forever):
// a pending entry's effective priority improves by one level for every
// merge.aging it has waited since it was queued (its added_at: a resubmission
// starts the wait again, an update does not), down to 0. The train claims in
// effective order, ties by queue time then id, so a P4 entry that has waited
// long enough goes before a P3 queued after it, and nothing waits behind newer
// work for ever.
//
// The clock is the command's: the projection's positions (what verify
// checks) are the order without aging, which the log alone decides; every
// command that shows or uses an order (list, show, position, submit, the
// train's claim) computes OrderAt with its own now.

// EffectivePriority is base improved by one level per step waited between
// added and now, never below MinPriority; step 0 turns aging off.
func EffectivePriority(base int, added, now time.Time, step time.Duration) int {
	if step <= 0 || !now.After(added) || base <= MinPriority {
		return base
	}
	levels := now.Sub(added) / step
	if levels >= time.Duration(base-MinPriority) {
		return MinPriority
	}
	return base - int(levels)
}

// Standing is where a pending entry stands at a moment.
type Standing struct {
	Position  int           // 1..N in the order the train claims in
	Effective int           // its priority after aging
	Waited    time.Duration // since it was queued
}

// Aging says why an entry's effective priority differs from its own, e.g.
// "P4→P3 aged 7d", or "" when it does not.
func (st Standing) Aging(base int) string {
	if st.Effective == base {
		return ""
	}
	return fmt.Sprintf("P%d→P%d aged %s", base, st.Effective, Days(st.Waited))
}

// Days writes a wait in whole days, or hours under a day.
func Days(d time.Duration) string {
	if d >= 24*time.Hour {
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	return fmt.Sprintf("%dh", int(d/time.Hour))
}

// Order is the pending entries in the order the train claims them at a
// moment, with each one's standing.
type Order struct {
	Queue []*Entry
	at    map[int64]Standing
}

// Of is e's standing; false when e is not pending.
func (o Order) Of(e *Entry) (Standing, bool) {
	st, ok := o.at[e.ID]
	return st, ok
}

// OrderAt orders the pending entries by effective priority at now (step:
// merge.aging), then queue time, then id.
func (s *State) OrderAt(now time.Time, step time.Duration) Order {
	q := s.Queue()
	eff := make(map[int64]int, len(q))
	for _, e := range q {
		eff[e.ID] = EffectivePriority(e.Priority, e.AddedAt, now, step)
	}
	slices.SortStableFunc(q, func(a, b *Entry) int {
		if d := eff[a.ID] - eff[b.ID]; d != 0 {
			return d
		}
		if !a.AddedAt.Equal(b.AddedAt) {
			return a.AddedAt.Compare(b.AddedAt)
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	o := Order{Queue: q, at: make(map[int64]Standing, len(q))}
	for i, e := range q {
		var waited time.Duration
		if now.After(e.AddedAt) {
			waited = now.Sub(e.AddedAt)
		}
		o.at[e.ID] = Standing{Position: i + 1, Effective: eff[e.ID], Waited: waited}
	}
	return o
}

// PlacedIn is where en stands in order o (merge position,
// cancel, retry).
func (s *State) PlacedIn(en *Entry, o Order) Placed {
	p := Placed{EntryID: en.ID, EntryRef: en.Ref, PendingCount: s.PendingCount, Status: en.Status}
	if st, ok := o.Of(en); ok {
		pos := st.Position
		p.Position = &pos
		p.EffectivePriority = &st.Effective
		p.Aging = st.Aging(en.Priority)
	}
	return p
}

// Standing returns a copy of en as it stands in o: its position the
// effective one (0 when it is not pending).
func (o Order) Standing(en *Entry) *Entry {
	c := *en
	c.encoded = nil
	c.Position = 0
	if st, ok := o.Of(en); ok {
		c.Position = st.Position
	}
	return &c
}
