package workqueue

import (
	"io"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"time"
	"unsafe"

	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/table"
)

// task list --json prints every task. From a snapshot it does so without
// decoding the table's tasks: the index keeps every task's place in
// taskLess order and, by position, its status, priority, dependent count
// and listing's size when saved (listIndex), and a section holds the
// listings in that order (listorder.go). Only the tasks changed since the
// save (the state's map) are rendered as values, merged in at their
// places.

// listIndex is the listing index, parsed.
type listIndex struct {
	order    []uint32    // every position, in taskLess order
	at       []listEntry // by position
	statuses []string    // each status the index holds, once
}

// listEntry is what the listing index keeps of one task, together: a walk
// in list order comes to each at a random place, and reads it in one
// cache line rather than one per field.
type listEntry struct {
	start      int64  // where its listing starts in the section of listings (setStarts)
	size       uint32 // of its listing
	priority   int32
	dependents int32
	status     uint8 // statuses[status]
}

// listIndex parses the listing index; an error for one that does not
// parse (it passed the index's checksum: a crafted file or a bug).
func (t *taskTable) listIndex() (*listIndex, error) {
	n := t.Len()
	b, err := t.ReadSection(t.listing)
	if err != nil {
		return nil, err
	}
	// b is this index's own: its statuses may share it rather than a copy.
	rd := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b)))
	x := &listIndex{order: make([]uint32, n), at: make([]listEntry, n)}
	for k := range x.order {
		v := rd.Uint()
		if v >= uint64(n) {
			return nil, table.ErrDamaged
		}
		x.order[k] = uint32(v)
	}
	for i := range x.at {
		status, pr, deps, size := rd.Str(), rd.Int(), rd.Uint(), rd.Uint()
		if pr != int64(int32(pr)) || deps > math.MaxInt32 || size > math.MaxUint32 {
			return nil, table.ErrDamaged
		}
		k := slices.Index(x.statuses, status)
		if k < 0 {
			if k = len(x.statuses); k > math.MaxUint8 {
				return nil, table.ErrDamaged // not a table spool writes: read the tasks instead
			}
			x.statuses = append(x.statuses, status)
		}
		x.at[i] = listEntry{size: uint32(size), priority: int32(pr), dependents: int32(deps), status: uint8(k)}
	}
	return x, rd.End()
}

// listed is the tasks' table and its listing index, for a list written
// from the listings: nil without a table, or with an index that does not
// parse (the list is then made from the tasks).
func (s *State) listed() (*taskTable, *listIndex) {
	tt := s.trk.table()
	if tt == nil {
		return nil, nil
	}
	x, err := tt.listIndex()
	if err != nil {
		return nil, nil
	}
	return tt, x
}

// statusAt is the status of the task at position i when saved.
func (x *listIndex) statusAt(i uint32) string { return x.statuses[x.at[i].status] }

// setStarts sets where each position's listing starts in the section of
// listings.
func (x *listIndex) setStarts() {
	var at int64
	for _, i := range x.order {
		x.at[i].start = at
		at += int64(x.at[i].size)
	}
}

// withListings calls fn with the table mapped (table.Mapped) and its
// section of listings.
func (tt *taskTable) withListings(fn func(m table.Mapping, listings []byte) error) error {
	return tt.Mapped(func(m table.Mapping) error {
		listings, err := m.Section(tt.listings)
		if err != nil {
			return table.CorruptSection("section of listings", err)
		}
		return fn(m, listings)
	})
}

// WriteListJSON writes what cliout.WriteJSON writes of ListItemsJSON of
// List(p, f, now), from the snapshot's listings. It reports false, having
// written nothing, when it cannot: no snapshot, or a label to filter by
// (the caller then lists the tasks as values).
func (s *State) WriteListJSON(w io.Writer, p Policy, f ListFilter, now time.Time) (bool, error) {
	tt, x := s.listed()
	if tt == nil || f.Label != "" {
		return false, nil
	}
	admit := func(t *Task) bool {
		return (f.Status == "" || s.EffectiveStatus(t, now) == f.Status) && (f.Priority == nil || t.Priority == *f.Priority)
	}
	c := s.sinceSave(tt, x)
	var changed []*Task
	for _, t := range s.trk.m {
		if t != nil && admit(t) {
			changed = append(changed, t)
		}
	}
	sortTasks(changed)
	item := func(t *Task) any {
		n := c.dependents(t.ID)
		if v, ok := s.saved(t, now, false); ok {
			v.tail, v.item, v.dependents = t.listTail, true, n
			return v
		}
		return s.listItem(t, p, now, n)
	}
	return true, tt.withListings(func(m table.Mapping, listings []byte) error {
		var at int64 // where the next listing starts
		var items iter.Seq[any] = func(yield func(any) bool) {
			var cur savedItem // WriteSeq writes each item before it asks for the next
			walkMerged(x.order, changed, m.Record, c.placeIn(x.order), func(_ int, i uint32) bool {
				from := at
				at += int64(x.at[i].size)
				if c.changed(i) {
					return true // listed with the changed ones
				}
				if f.Priority != nil && int(x.at[i].priority) != *f.Priority {
					return true
				}
				status := x.statusAt(i)
				if status == StatusInProgress { // its lease may have run out since
					t := decodeOwned(m.Record(int(i)))
					return f.Status != "" && s.EffectiveStatus(t, now) != f.Status || yield(item(t))
				}
				if f.Status != "" && status != f.Status {
					return true
				}
				if core, tail := readListing(listings, from, at, tt, i); core != "" {
					return yield(cur.set(savedItem{core: core, tail: tail, item: true, dependents: c.dependentsAt(i)}))
				}
				return yield(s.listItem(decodeOwned(m.Record(int(i))), p, now, c.dependentsAt(i)))
			}, func(t *Task) bool { return yield(item(t)) })
		}
		return jsonout.WriteSeq(w, items, false)
	})
}

// sinceSave is what the tasks decoded or changed since the save change
// in a list drawn from the snapshot: the positions they hold (listed as
// they are now, not as saved), told by position (an id looked up per row,
// a string in a 1.6 MB index then a hash, was a quarter of task list
// --json), and the dependent counts they move: their saved records'
// links out taken back, their own added.
type sinceSave struct {
	tt       *taskTable
	x        *listIndex
	inM      []uint64
	adjust   map[string]int
	adjustAt map[uint32]int
	kept     map[string]uint32 // the saved position of each whose list key did not change (placeIn)
}

func (s *State) sinceSave(tt *taskTable, x *listIndex) *sinceSave {
	c := &sinceSave{tt: tt, x: x, inM: make([]uint64, (len(tt.IDs)+63)/64), adjust: map[string]int{}, adjustAt: map[uint32]int{}, kept: map[string]uint32{}}
	count := func(t *Task, by int) {
		if t.Parent != "" {
			c.adjust[t.Parent] += by
		}
		for _, d := range t.Blockers {
			c.adjust[d.ID] += by
		}
		for _, l := range t.Links {
			c.adjust[l.ID] += by
		}
	}
	for id, t := range s.trk.m {
		if i := tt.Find(id); i >= 0 {
			c.inM[i/64] |= 1 << (i % 64)
			base, _ := decodeRecord(tt.Record(i))
			count(base, -1)
			if t != nil && t.Priority == base.Priority && t.CreatedAt.Equal(base.CreatedAt) {
				c.kept[id] = uint32(i)
			}
		}
		if t != nil {
			count(t, 1)
		}
	}
	for id, n := range c.adjust {
		if i := tt.Find(id); i >= 0 && n != 0 {
			c.adjustAt[uint32(i)] = n
		}
	}
	return c
}

// placeIn says where in order (the list order, taskLess) a changed task
// goes when its key is as saved: just after its saved copy, which the walk
// passes over. For the others (new, or moved) it says -1, and walkMerged
// searches. A search per task changed since the save read about 17
// records each, all over the table: 800 claims made task list --json a
// third slower and mapped twice the memory.
func (c *sinceSave) placeIn(order []uint32) func(*Task) int {
	if len(c.kept) == 0 {
		return nil
	}
	rank := make([]int32, len(order))
	for j, i := range order {
		rank[i] = int32(j)
	}
	return func(t *Task) int {
		if i, ok := c.kept[t.ID]; ok {
			return int(rank[i]) + 1
		}
		return -1
	}
}

// changed reports whether the task at position i is one of them.
func (c *sinceSave) changed(i uint32) bool { return c.inM[i/64]&(1<<(i%64)) != 0 }

// dependentsAt is the dependent count now of the task at position i.
func (c *sinceSave) dependentsAt(i uint32) int {
	if len(c.adjustAt) == 0 {
		return int(c.x.at[i].dependents)
	}
	return int(c.x.at[i].dependents) + c.adjustAt[i]
}

// dependents is the dependent count now of task id.
func (c *sinceSave) dependents(id string) int {
	n := c.adjust[id]
	if i := c.tt.Find(id); i >= 0 {
		n += int(c.x.at[i].dependents)
	}
	return n
}

// listingIn reads position i's listing from the section of listings, at
// the place x gives it (setStarts).
func listingIn(listings []byte, x *listIndex, tt *taskTable, i uint32) (core, tail string) {
	e := &x.at[i]
	return readListing(listings, e.start, e.start+int64(e.size), tt, i)
}

// readListing reads position i's listing, bytes [from, to) of the section
// of listings, checking it alone.
func readListing(listings []byte, from, to int64, tt *taskTable, i uint32) (core, tail string) {
	if from < 0 || to > int64(len(listings)) || from > to {
		panic(table.Corrupt(tt.IDs[i], table.ErrDamaged))
	}
	b := listings[from:to]
	rd := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b)))
	listing, ok := rd.Checked()
	core, tail, ok = splitListing(listing, ok && rd.End() == nil)
	if !ok {
		panic(table.Corrupt(tt.IDs[i], table.ErrDamaged))
	}
	return core, tail
}

// decodeOwned decodes a mapped record from a copy: the task's strings
// may become keys of the state's maps (a parent decoded for it, its
// history), which outlive the mapping.
func decodeOwned(r *table.Dec) *Task {
	t, _ := decodeRecord(r.Clone())
	return t
}

// walkMerged calls saved with each place j and position i of order (a
// table's tasks in taskLess order), and fresh with each of changed (sorted
// by taskLess) where it belongs among them, until either returns false. A
// changed task's place is what place says (when place is not nil and says
// one), or else found by a binary search, reading the keys of the records
// it probes with rec.
func walkMerged(order []uint32, changed []*Task, rec func(int) *table.Dec, place func(*Task) int, saved func(j int, i uint32) bool, fresh func(*Task) bool) {
	at := make([]int, len(changed))
	for k, c := range changed {
		if place != nil {
			if at[k] = place(c); at[k] >= 0 {
				continue
			}
		}
		at[k] = sort.Search(len(order), func(j int) bool {
			base, _ := decodeRecord(rec(int(order[j])))
			return taskLess(c, base)
		})
	}
	k := 0
	for j, i := range order {
		for ; k < len(changed) && at[k] <= j; k++ {
			if !fresh(changed[k]) {
				return
			}
		}
		if !saved(j, i) {
			return
		}
	}
	for ; k < len(changed); k++ {
		if !fresh(changed[k]) {
			return
		}
	}
}

// WriteReadyJSON writes what cliout.WriteJSON writes of ViewsJSON of
// Claimable(p, g, f, now, 0), from the snapshot's listings: a task that
// was ready by itself when saved (plainReady), is unchanged, and names no
// changed task, is ready now unless its history holds it back, and is
// written without a decode; under a gate or label filter, the table's
// section of labels and types passes over the saved tasks it does not
// admit. It reports false, having written nothing, when it cannot: no
// snapshot, Claimed or Unassigned, or the progressive policy's order.
func (s *State) WriteReadyJSON(w io.Writer, p Policy, g Gate, f ReadyFilter, now time.Time) (bool, error) {
	if p.Kind == Progressive || f.Claimed || f.Unassigned {
		return false, nil
	}
	tt, x := s.listed()
	if tt == nil {
		return false, nil
	}
	var admits *admitter // under a gate or filter: the saved open tasks they admit
	if gated(g, f) {
		var ok bool
		if admits, ok = s.trk.lazy.admits(g, f); !ok || !admits.whole() { // a plain task is copied unread
			return false, nil
		}
	}
	memo := map[string]bool{}
	ready := func(t *Task) bool {
		c := Candidate{ID: t.ID, IssueType: t.Type, Labels: t.Labels}
		return s.EffectiveStatus(t, now) == StatusOpen && f.Admits(t) && !s.blockedBy(t, memo, 0) && p.Skip(c, s.Entry(t.ID), g, now) == ""
	}
	// Each saved task is asked by its place: its id, read in list order
	// from all over the table, was a fifth of the walk. The tasks held now
	// are listed as they are; ready may decode more (blockers, parents),
	// unchanged, which the walk lists from the table.
	held := maps.Clone(s.trk.m)
	skip := placesIn(tt, held)
	var changed []*Task
	for _, t := range held {
		if t != nil && ready(t) {
			changed = append(changed, t)
		}
	}
	sortTasks(changed)
	named := placesIn(tt, s.namedByClosing(nil, true))
	view := func(t *Task) any {
		if v, ok := s.saved(t, now, false); ok {
			return v
		}
		return s.View(t, p, now)
	}
	x.setStarts()
	entries := s.heldBack(tt)
	return true, tt.withListings(func(m table.Mapping, listings []byte) error {
		var items iter.Seq[any] = func(yield func(any) bool) {
			var cur savedItem // WriteSeq writes each item before it asks for the next
			walkMerged(tt.open, changed, m.Record, nil, func(k int, i uint32) bool {
				if skip.has(int(i)) || admits != nil && !admits.has(k) {
					return true // held: listed as it is now; not admitted: never ready
				}
				switch {
				case named.has(int(i)): // a task it names was closed or reopened: read it whole
				case tt.waitsAt(k):
					return true // it still waits by itself
				case tt.plainAt(k):
					if entries.skips(i, p, now) {
						return true
					}
					if core, _ := listingIn(listings, x, tt, i); core != "" {
						return yield(cur.set(savedItem{core: core}))
					}
				}
				t := decodeOwned(m.Record(int(i)))
				return !ready(t) || yield(view(t))
			}, func(t *Task) bool { return yield(view(t)) })
		}
		return jsonout.WriteSeq(w, items, false)
	})
}

// WriteBeadsOpenListJSON writes what cliout.WriteJSON writes of
// BeadsOpenListJSON(p, now, 0), bd list --json --limit 0: every issue not
// closed, in bd list's order, from the snapshot's listings. Only the tasks
// changed since the save, those in progress (a lease may have run out)
// and those bd calls blocked are decoded. It reports false, having
// written nothing, without a snapshot.
func (s *State) WriteBeadsOpenListJSON(w io.Writer, p Policy, now time.Time) (bool, error) {
	tt, x := s.listed()
	if tt == nil {
		return false, nil
	}
	c := s.sinceSave(tt, x)
	var changed []*Task
	for _, t := range s.trk.m {
		if t != nil && s.BeadsStatus(t, p, now) != StatusClosed {
			changed = append(changed, t)
		}
	}
	sort.Slice(changed, func(a, b int) bool { return beadsListLess(changed[a], changed[b]) })
	x.setStarts()
	return true, tt.withListings(func(m table.Mapping, listings []byte) error {
		var items iter.Seq[any] = func(yield func(any) bool) {
			var cur savedItem // WriteSeq writes each item before it asks for the next
			j := 0
			for k := range beadsOpenOrder(tt, x) {
				i := tt.open[k]
				if c.changed(i) {
					continue
				}
				for ; j < len(changed) && beadsKeyOf(changed[j]).less(tt.beadsKeyAt(x, k)); j++ {
					if !yield(s.beadsItem(changed[j], p, now, c.dependents(changed[j].ID))) {
						return
					}
				}
				if status := x.statusAt(i); status != StatusInProgress && !(status == StatusOpen && tt.labelledAt(k)) {
					if core, tail := listingIn(listings, x, tt, i); core != "" {
						if !yield(cur.set(savedItem{core: core, tail: tail, item: true, dependents: c.dependentsAt(i)})) {
							return
						}
						continue
					}
				}
				if !yield(s.beadsItem(decodeOwned(m.Record(int(i))), p, now, c.dependentsAt(i))) {
					return
				}
			}
			for ; j < len(changed); j++ {
				if !yield(s.beadsItem(changed[j], p, now, c.dependents(changed[j].ID))) {
					return
				}
			}
		}
		return jsonout.WriteSeq(w, items, false)
	})
}

// beadsOpenOrder yields the places in tt.open in bd list's order: by
// priority, the newest first, then by id. tt.open is by priority, the
// oldest first, then by id, so each priority's runs of one creation time
// come in reverse, each run as it is.
func beadsOpenOrder(tt *taskTable, x *listIndex) iter.Seq[int] {
	return func(yield func(int) bool) {
		n := len(tt.open)
		for a := 0; a < n; {
			b := a + 1
			for b < n && x.at[tt.open[b]].priority == x.at[tt.open[a]].priority {
				b++
			}
			for hi := b; hi > a; { // the runs of [a, b), from the last
				lo := hi - 1
				for lo > a && tt.createdAt(lo-1) == tt.createdAt(hi-1) {
					lo--
				}
				for k := lo; k < hi; k++ {
					if !yield(k) {
						return
					}
				}
				hi = lo
			}
			a = b
		}
	}
}

// placesIn marks the places in tt of m's ids.
func placesIn[V any](tt *taskTable, m map[string]V) bitset {
	b := newBitset(len(tt.IDs))
	for id := range m {
		if i := tt.Find(id); i >= 0 {
			b.set(i)
		}
	}
	return b
}

// heldEntries finds the history entries of the saved tasks, by their place in
// the tasks' table (heldBack).
type heldEntries struct {
	s       *State
	ids     []string // the tasks' table's
	at      []int32  // by place: the place of the entry in the history's table, -1 none
	changed bitset   // by place: an entry changed since the save
}

// heldBack readies heldEntries for tt: the places of its ids in the history's
// table by one merge of the two sorted lists (a search per ready task,
// 65,000 at 100,000 tasks, was a fifth of ready -n 0 --json).
func (s *State) heldBack(tt *taskTable) *heldEntries {
	e := &heldEntries{s: s, ids: tt.IDs, changed: placesIn(tt, s.hst.m)}
	h := s.hst.table
	if h == nil {
		return e
	}
	e.at = make([]int32, len(tt.IDs))
	j := 0
	for i, id := range tt.IDs {
		for j < len(h.IDs) && h.IDs[j] < id {
			j++
		}
		e.at[i] = -1
		if j < len(h.IDs) && h.IDs[j] == id {
			e.at[i] = int32(j)
		}
	}
	return e
}

// skips reports whether its history holds back the task at place i (p.Skip,
// a gate that admits it). An entry no event changed since the save is
// read as stats reads it (historyTable.statsEntry): one that neither holds
// a claim nor failed from its class in the index, without a decode.
func (e *heldEntries) skips(i uint32, p Policy, now time.Time) bool {
	h := e.s.hst.table
	if h == nil || e.changed.has(int(i)) {
		return p.Skip(Candidate{}, e.s.Entry(e.ids[i]), Gate{}, now) != ""
	}
	if e.at[i] < 0 {
		return false // no entry
	}
	var x Entry
	return p.Skip(Candidate{}, h.statsEntry(int(e.at[i]), &x), Gate{}, now) != ""
}
