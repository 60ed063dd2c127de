package mergequeue

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/internal/table"
	"github.com/spoolhq/spool/projections"
)

// The snapshot is a table (internal/table), as the work queue's are: a
// record per entry holding its line of merge-queue.json, the active
// entries' records first, so that opening reads the index and the active
// entries with one read, and the ended entries' records stay unread until
// something asks for one of them. The index holds the queue's own fields,
// the identities, and the ended entries' refs and dedupe keys, so that a
// lookup by either reads no record.
const snapshotMagic = "spool-merge-2\n"

// Record ids: a kind letter, then the entry id in 12 digits, so that the
// active entries sort first and each kind in id order.
const (
	activeRecord = 'a'
	endedRecord  = 'e'
)

func recordID(kind byte, id int64) string { return fmt.Sprintf("%c%012d", kind, id) }

// parseRecordID returns the entry id of a record id of kind, 0 if it is not one.
func parseRecordID(kind byte, s string) int64 {
	if len(s) != 13 || s[0] != kind {
		return 0
	}
	id, err := strconv.ParseInt(s[1:], 10, 64)
	if err != nil || id < 1 {
		return 0
	}
	return id
}

// entryName names entry id in the errors of a damaged snapshot.
func entryName(id int64) string { return fmt.Sprintf("merge queue entry %d", id) }

// endedIndex is what a snapshot's index says of the entries that had
// ended when it was saved: each one's ref and dedupe key, sorted (then by
// id) with its id.
type endedIndex struct {
	refs, keys     []string
	refIDs, keyIDs []int64
}

// endedIndex decodes the index's part about the ended entries the first
// time a lookup needs it: a command about the active entries never does.
func (s *State) endedIndex() *endedIndex {
	if s.endedRaw == "" {
		return &s.ended
	}
	d, x := table.NewDec(s.endedRaw), &s.ended
	s.endedRaw = ""
	for _, list := range []struct {
		strs *[]string
		ids  *[]int64
	}{{&x.refs, &x.refIDs}, {&x.keys, &x.keyIDs}} {
		m := d.Count()
		*list.strs, *list.ids = make([]string, m), make([]int64, m)
		seen := make([]bool, len(s.endedIDs)) // each list names each ended entry once
		for i := range m {
			(*list.strs)[i], (*list.ids)[i] = d.Str(), int64(d.Uint())
			if k, ok := slices.BinarySearch(s.endedIDs, (*list.ids)[i]); !ok || seen[k] {
				d.Fail()
			} else {
				seen[k] = true
			}
		}
		if m != len(s.endedIDs) || !slices.IsSorted(*list.strs) {
			d.Fail()
		}
	}
	if err := d.End(); err != nil {
		// The index passed its checksum: WriteState wrote this, a bug.
		panic(table.Corrupt("the merge queue's index", err))
	}
	return x
}

// coldRef is the id of the ended entry whose ref is ref, 0 if none.
func (s *State) coldRef(ref string) int64 {
	x := s.endedIndex()
	if i, ok := slices.BinarySearch(x.refs, ref); ok {
		return x.refIDs[i]
	}
	return 0
}

// coldKey is the id of the newest ended entry with dedupe key, 0 if none.
func (s *State) coldKey(key string) int64 {
	x := s.endedIndex()
	if i := sort.Search(len(x.keys), func(i int) bool { return x.keys[i] > key }); i > 0 && x.keys[i-1] == key {
		return x.keyIDs[i-1]
	}
	return 0
}

// withRefPrefix returns the ids, in order, and the refs of the entries
// whose ref begins with prefix, decoding none.
func (s *State) withRefPrefix(prefix string) ([]int64, []string) {
	type hit struct {
		id  int64
		ref string
	}
	var hits []hit
	for _, e := range s.entries {
		if e != nil && strings.HasPrefix(e.Ref, prefix) {
			hits = append(hits, hit{e.ID, e.Ref})
		}
	}
	x := s.endedIndex()
	for i := sort.SearchStrings(x.refs, prefix); i < len(x.refs) && strings.HasPrefix(x.refs[i], prefix); i++ {
		if id := x.refIDs[i]; s.entries[id-1] == nil {
			hits = append(hits, hit{id, x.refs[i]})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.id, b.id) })
	ids, refs := make([]int64, len(hits)), make([]string, len(hits))
	for i, h := range hits {
		ids[i], refs[i] = h.id, h.ref
	}
	return ids, refs
}

// line is the line of the undecoded entry id.
func (s *State) line(id int64) []byte {
	if s.cold != nil && s.cold[id-1] != nil {
		return s.cold[id-1]
	}
	k, ok := slices.BinarySearch(s.endedIDs, id)
	if !ok {
		panic(table.Corrupt(entryName(id), errors.New("the index lists no record of it")))
	}
	return s.tbl.Record(s.firstEnded() + k).RestBytes()
}

// firstEnded is where the ended entries' records begin in tbl.
func (s *State) firstEnded() int { return s.tbl.Len() - len(s.endedIDs) }

// loadCold reads the lines of every undecoded entry, with one read, for
// a command that needs them all (a save, merge list --all).
func (s *State) loadCold() {
	if s.undecoded == 0 || s.cold != nil {
		return
	}
	s.cold = make([][]byte, len(s.entries))
	for k, d := range s.tbl.Range(s.firstEnded(), s.tbl.Len()) {
		if id := s.endedIDs[k]; s.entries[id-1] == nil {
			s.cold[id-1] = d.RestBytes()
		}
	}
}

// lineOf is e's line of merge-queue.json, encoded again only when it changed.
func lineOf(e *Entry) []byte {
	if e.encoded == nil || e.encodedPos != e.Position {
		e.encoded, e.encodedPos = e.encode(nil), e.Position
	}
	return e.encoded
}

// WriteState writes the snapshot (projections.StateWriter).
func (s *State) WriteState(out io.Writer) error {
	s.loadCold()
	ix := s.index()
	tw := table.NewWriter(out, snapshotMagic, len(s.entries))
	for _, e := range ix.active {
		tw.Record(recordID(activeRecord, e.ID), func(w *table.Enc) { w.Buf = append(w.Buf, lineOf(e)...) })
	}
	type pair struct {
		s  string
		id int64
	}
	var refs, keys []pair
	x := s.endedIndex()
	for i, id := range x.refIDs {
		if s.entries[id-1] == nil {
			refs = append(refs, pair{x.refs[i], id})
		}
	}
	for i, id := range x.keyIDs {
		if s.entries[id-1] == nil {
			keys = append(keys, pair{x.keys[i], id})
		}
	}
	for i, e := range s.entries {
		var line []byte
		switch {
		case e == nil:
			line = s.cold[i]
		case e.Status.Active():
			continue
		default:
			refs, keys = append(refs, pair{e.Ref, e.ID}), append(keys, pair{e.DedupeKey, e.ID})
			line = lineOf(e)
		}
		tw.Record(recordID(endedRecord, int64(i)+1), func(w *table.Enc) { w.Buf = append(w.Buf, line...) })
	}
	byPair := func(a, b pair) int { return cmp.Or(strings.Compare(a.s, b.s), cmp.Compare(a.id, b.id)) }
	slices.SortFunc(refs, byPair)
	slices.SortFunc(keys, byPair)
	return tw.Finish(func(w *table.Enc) {
		w.Bool(s.Frozen)
		w.Str(s.FrozenReason)
		w.Str(s.FrozenBy)
		w.Bool(s.FrozenAt != nil)
		if s.FrozenAt != nil {
			w.Time(*s.FrozenAt)
		}
		w.Int(int64(s.PendingCount))
		w.Int(int64(s.Skipped))
		w.Int(int64(s.Applied))
		w.Str(string(s.appendIdentities(nil)))
		w.Uint(uint64(len(ix.active)))
		for _, list := range [][]pair{refs, keys} {
			w.Uint(uint64(len(list)))
			for _, p := range list {
				w.Str(p.s)
				w.Uint(uint64(p.id))
			}
		}
	})
}

// MarshalState is the snapshot WriteState writes.
func (s *State) MarshalState() ([]byte, error) {
	var b bytes.Buffer
	err := s.WriteState(&b)
	return b.Bytes(), err
}

// UnmarshalState opens the snapshot b.
func (s *State) UnmarshalState(b []byte) error {
	return table.OpenBytes(b, s.open)
}

// OpenState opens the snapshot file, reading its index and the active
// entries (projections.Opener).
func (s *State) OpenState(f projections.SnapshotFile, off, size int64) error {
	return table.OpenOn(f, off, size, s.open)
}

// open reads the index and decodes the active entries; it returns the
// table, nil when no entry is left to read from it. A snapshot that is not
// what WriteState writes is refused, and the engine rebuilds it.
func (s *State) open(r io.ReaderAt, size int64) (*table.Table, error) {
	*s = State{identities: map[string]string{}}
	var active int
	var identities, endedRaw string
	t, err := table.Open(r, size, snapshotMagic, func(d *table.Dec, n int) error {
		s.Frozen, s.FrozenReason, s.FrozenBy = d.Bool(), d.Str(), d.Str()
		if d.Bool() {
			at := d.Time()
			s.FrozenAt = &at
		}
		s.PendingCount, s.Skipped, s.Applied = int(d.Int()), int(d.Int()), int(d.Int())
		identities = d.Str()
		active = int(d.Uint())
		if active > n {
			return table.ErrDamaged
		}
		endedRaw = d.Rest() // read when a lookup needs it (ended)
		return d.Err()
	})
	if err != nil {
		return nil, err
	}
	n := t.Len()
	s.entries = make([]*Entry, n)
	s.identitiesRaw = []byte(identities)
	lines := make([][]byte, n)
	hot := make([]int, 0, active)
	recs, err := t.ReadRange(0, active)
	if err != nil {
		return nil, table.ErrDamaged // still refused, and rebuilt: nothing was read from it
	}
	for i, d := range recs {
		id := parseRecordID(activeRecord, t.IDs[i])
		if id < 1 || id > int64(n) || lines[id-1] != nil {
			return nil, table.ErrDamaged
		}
		lines[id-1] = d.RestBytes()
		hot = append(hot, int(id-1))
	}
	if !decodeLines(lines, hot, s.entries) {
		return nil, table.ErrDamaged
	}
	for _, k := range hot {
		if e := s.entries[k]; e.ID != int64(k)+1 || !e.Status.Active() {
			return nil, table.ErrDamaged
		}
	}
	// The ended records hold every other entry, each once: their ids
	// ascend (the table is sorted) and none is an active one.
	ended := make([]int64, 0, n-active)
	for _, rid := range t.IDs[active:] {
		id := parseRecordID(endedRecord, rid)
		if id < 1 || id > int64(n) || lines[id-1] != nil || len(ended) > 0 && id <= ended[len(ended)-1] {
			return nil, table.ErrDamaged
		}
		ended = append(ended, id)
	}
	s.undecoded = n - active
	s.reindex()
	if s.undecoded == 0 {
		return nil, nil
	}
	s.endedRaw, s.endedIDs = endedRaw, ended
	t.Name = func(rid string) string { // of the ended records, read from now on
		if id := parseRecordID(endedRecord, rid); id > 0 {
			return entryName(id)
		}
		return rid
	}
	s.tbl = t
	return t, nil
}

// Files renders merge-queue.json: the whole state, one entry per line.
func (s *State) Files() ([]projections.File, error) {
	return []projections.File{{Path: FilePath, Data: s.render()}}, nil
}
