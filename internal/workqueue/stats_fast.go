package workqueue

import (
	"math/bits"
	"slices"
	"time"
)

// NativeStats is Policy.Stats for spool's own tracker, with ready counted as
// next would (gate g, the configured one): what spool stats prints. On a
// state read from the snapshots it decodes no task it need not: the index
// of the task table says which tasks are closed, which carry the blocked
// label and which were ready by themselves when it was saved (open, no
// parent, every blocker closed); only the history's entries, the tasks
// changed since and those whose blockers changed are read. When no task
// was decoded or changed since, the table's summary serves without its
// index (summaryStats); under a gate (labels or types), the table's
// section of the open tasks' labels and types says which it admits.
// Otherwise (a state held whole, a section that does not read), every task.
func (s *State) NativeStats(p Policy, g Gate, now time.Time) Stats {
	admits := s.admitted(g, ReadyFilter{}) // under a gate: which open tasks it admits, by place in open
	if admits != nil && !admits.whole() {
		admits = nil // a plain task is counted unread: only on the section's word
	}
	if s.trk.lazy == nil || gated(g, ReadyFilter{}) && admits == nil {
		cands := Candidates(s.Ready(p, ReadyFilter{}, now, Unsorted))
		ready := len(p.Select(cands, s.Entry, g, now, Unsorted))
		return p.Stats(s, true, nil, ready, now)
	}
	if len(s.trk.m) == 0 || s.trk.lazy.loaded.Load() == nil {
		if adm, ok := s.admittedAt(admits); ok {
			return s.summaryStats(p, g, now, adm)
		}
	}
	tt := s.trk.table()
	n := tt.Len()
	newSet := func() bitset { return newBitset(n) }

	// What Ready and Select would count: first the tasks decoded or
	// changed since the table was saved (rest), read whole below.
	rest := make([]*Task, 0, len(s.trk.m))
	changed := newSet() // their positions in the table
	for id, t := range s.trk.m {
		rest = append(rest, t)
		if i := tt.Find(id); i >= 0 {
			changed.set(i)
		}
	}
	var named map[string]bool
	counted := newSet() // plain tasks counted ready, before their history is looked at
	kOf := make([]int32, n)
	var st Stats
	ready := 0
	readyNow := func(t *Task, memo map[string]bool) bool { return s.readyNow(p, g, t, memo, now) }
	memo := map[string]bool{}
	var read []*Task // unchanged tasks that must be read: a blocker changed, or not plain
	for k, i := range tt.open {
		kOf[i] = int32(k)
		if changed.has(int(i)) || admits != nil && !admits.has(k) {
			continue // changed: read below; not admitted: never ready
		}
		id := tt.IDs[i]
		waits, plain := tt.waitsAt(k), tt.plainAt(k)
		if waits || plain {
			if named == nil {
				named = s.namedByClosing(nil, true)
			}
			if named[id] {
				read = append(read, s.Task(id))
				continue
			}
		}
		switch {
		case waits:
		case plain:
			ready++
			counted.set(int(i))
		default:
			read = append(read, s.Task(id))
		}
	}
	for _, t := range read {
		if readyNow(t, memo) {
			ready++
		}
	}
	for _, t := range rest {
		if readyNow(t, memo) {
			ready++
		}
	}

	// The statuses: every task not changed since the table by what the
	// index says (closed: completed; open: blocked by its label, or
	// pending), unless it has a history entry.
	entry := newSet()
	one := func(id string, i int, h *Entry) {
		switch {
		case i >= 0 && !changed.has(i):
			entry.set(i)
			if !tt.isOpen(i) {
				return // closed: completed, counted below
			}
			stub := &Task{Status: StatusOpen}
			if tt.labelledAt(int(kOf[i])) {
				stub.Labels = []string{BlockedLabel}
			}
			p.count(&st, stub, h, now)
			if counted.has(i) && p.Skip(Candidate{}, h, Gate{}, now) != "" { // the gate admitted it
				ready-- // plain, but its history holds it back
			}
		case s.trk.m[id] == nil:
			p.count(&st, nil, h, now) // no such task
		}
	}
	// The history: what was decoded or changed, then the table's other
	// entries, in id order as the tasks are (found by a search from the
	// last one found), each decoded for the moment.
	for id, h := range s.hst.m {
		one(id, tt.Find(id), h)
	}
	if ht := s.hst.table; ht != nil {
		from := 0
		for j, r := range ht.All() {
			id := ht.IDs[j]
			if _, ok := s.hst.m[id]; ok {
				continue
			}
			i := findFrom(tt.IDs, from, id)
			if i >= 0 {
				from = i + 1
				if !tt.isOpen(i) && !changed.has(i) {
					continue // a closed task is completed whatever its history says: not decoded
				}
			}
			one(id, i, decodeEntry(r))
		}
	}
	for k, i := range tt.open {
		if changed.has(int(i)) || entry.has(int(i)) {
			continue
		}
		st.TotalSeen++
		if tt.labelledAt(k) {
			st.Blocked++
		} else {
			st.Pending++
		}
	}
	closed := n - len(tt.open)
	for w, c := range changed {
		closed -= bits.OnesCount64(c &^ openMask(tt, w))
	}
	st.TotalSeen += closed
	st.Completed += closed
	for _, t := range rest { // not what the walk decoded since: counted by the index
		p.count(&st, t, s.Entry(t.ID), now)
	}
	st.CurrentlyReady = ready
	return st
}

// openMask is word w of the table's open tasks as a set (isOpen).
func openMask(t *taskTable, w int) uint64 {
	if t.Len() > 0 {
		t.isOpen(0) // builds openBits
	}
	return t.openBits[w]
}

// findFrom is the position of id in ids (sorted), or -1; id sorts after
// ids[from-1]. It gallops from there: the ids looked up in order are found
// in a few comparisons each.
func findFrom(ids []string, from int, id string) int {
	hi, step := from, 1
	for hi < len(ids) && ids[hi] < id {
		from, hi, step = hi+1, hi+step, step*2
	}
	hi = min(hi+1, len(ids))
	if i, ok := slices.BinarySearch(ids[from:hi], id); ok {
		return from + i
	}
	return -1
}

// readyNow reports whether next could claim t at now (memo: blockedBy's).
func (s *State) readyNow(p Policy, g Gate, t *Task, memo map[string]bool, now time.Time) bool {
	return s.EffectiveStatus(t, now) == StatusOpen && !s.blockedBy(t, memo, 0) &&
		p.Skip(Candidates([]*Task{t})[0], s.Entry(t.ID), g, now) == ""
}
