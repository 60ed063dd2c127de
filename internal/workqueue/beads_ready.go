package workqueue

import (
	"io"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/table"
	"github.com/tidwall/gjson"
)

// WriteBeadsReadyJSON writes what bd ready --json --limit 0 writes with
// no filter (ReadyBeads with bd's default keep, then ViewsJSON for beads),
// from the snapshot's listings. A task that was ready by itself when saved
// (plainReady), is unchanged, and names no task closed or reopened since
// is ready now; its listing says its type, which bd ready leaves out when
// it is a workflow's (BeadsWorkflow), and is what it writes. The others
// are decoded, and the tasks changed since merged in by the policy's order.
// It reports false, having written nothing, without a snapshot.
func (s *State) WriteBeadsReadyJSON(w io.Writer, p Policy, now time.Time, policy string) (bool, error) {
	less, err := beadsLess(policy, now)
	if err != nil {
		return false, err
	}
	tt, x := s.listed()
	if tt == nil {
		return false, nil
	}
	memo := map[string]bool{}
	ready := func(t *Task) bool { // readyBy's, bd's claimed tasks included
		st := s.EffectiveStatus(t, now)
		return (st == StatusOpen || st == StatusInProgress) && !s.blockedBy(t, memo, 0) && !BeadsWorkflow(t)
	}
	held := maps.Clone(s.trk.m) // as WriteReadyJSON: ready may decode more, unchanged
	skip := placesIn(tt, held)
	var changed []*Task
	for _, t := range held {
		if t != nil && ready(t) {
			changed = append(changed, t)
		}
	}
	slices.SortFunc(changed, func(a, b *Task) int {
		if less(a, b) {
			return -1
		}
		return 1
	})
	named := placesIn(tt, s.namedByClosing(nil, true))
	item := func(t *Task) any {
		if v, ok := s.saved(t, now, true); ok {
			return v
		}
		return Beads(s.View(t, p, now))
	}
	// Where a changed task goes among the saved ones: by the keys the
	// index keeps (priority, creation time, id), as less orders tasks.
	keyLess := beadsKeyLess(policy, now)
	order := beadsOrder(policy, now)
	if order == nil {
		order = readyOrder
	}
	x.setStarts()
	return true, tt.withListings(func(m table.Mapping, listings []byte) error {
		var items iter.Seq[any] = func(yield func(any) bool) {
			var cur savedItem // WriteSeq writes each item before it asks for the next
			j := 0
			for k := range order(tt) {
				i := tt.open[k]
				if skip.has(int(i)) {
					continue
				}
				for ; j < len(changed) && keyLess(beadsKeyOf(changed[j]), tt.beadsKeyAt(x, k)); j++ {
					if !yield(item(changed[j])) {
						return
					}
				}
				switch {
				case named.has(int(i)): // a task it names was closed or reopened: read it whole
				case tt.waitsAt(k):
					continue // it still waits by itself
				case tt.plainAt(k):
					if core, _ := listingIn(listings, x, tt, i); core != "" {
						if beadsWorkflowListing(core, tt.IDs[i]) {
							continue
						}
						if !yield(cur.set(savedItem{core: core})) {
							return
						}
						continue
					}
				}
				if t := decodeOwned(m.Record(int(i))); ready(t) && !yield(item(t)) {
					return
				}
			}
			for ; j < len(changed); j++ {
				if !yield(item(changed[j])) {
					return
				}
			}
		}
		return jsonout.WriteSeq(w, items, false)
	})
}

// beadsWorkflowListing is BeadsWorkflow of the task with id whose saved
// listing is core (View's JSON: its issue_type is the task's type).
func beadsWorkflowListing(core, id string) bool {
	return slices.Contains(beadsWorkflowTypes, listingType(core)) ||
		strings.Contains(id, "-mol-") || strings.Contains(id, "-wisp-")
}

// listingType is the issue_type of a listing. Its key is found as it is
// written (a listing is indented: a space may follow the colon): a quote
// inside a string is escaped, and no object nested in a listing has the
// key, so the first is the task's. A value with an escape is read by a
// parser (a parse of every listing was a third of bd ready --limit 0:
// descriptions come before the type).
func listingType(core string) string {
	const key = `"issue_type":`
	i := strings.Index(core, key)
	if i < 0 {
		return "" // omitted: empty
	}
	v, ok := strings.CutPrefix(strings.TrimLeft(core[i+len(key):], " "), `"`)
	if j := strings.IndexAny(v, `"\`); ok && j >= 0 && v[j] == '"' {
		return v[:j]
	}
	return gjson.Get(core, "issue_type").Str
}
