package workqueue

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table"
)

// Overlays (projections.Overlayer): the records of the tasks and entries
// events changed since the table was opened, encoded as the table encodes
// them, for the next command to put in place of the table's. A task's
// record keeps the ids that named it in that table (baseRefs), and its
// place there (at): an overlay only goes over the snapshot it was made
// from.

// overlayEvery is the Spec.Overlay of the three projections.
const overlayEvery = 64

// changes are what an overlay needs of a projection: whether its state
// was opened from a table, and the ids events changed since. Only a state
// opened from a table has an overlay to write.
type changes struct {
	opened bool
	ids    map[string]bool
}

// reset is a table just opened: nothing changed since.
func (c *changes) reset() { *c = changes{opened: true} }

// add records that an event folded into id's task or entry.
func (c *changes) add(id string) {
	if !c.opened {
		return
	}
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	c.ids[id] = true
}

// sorted is the ids changed that the state holds (held says), sorted.
func (c *changes) sorted(held func(id string) bool) []string {
	ids := slices.Sorted(maps.Keys(c.ids))
	return slices.DeleteFunc(ids, func(id string) bool { return !held(id) })
}

// WriteOverlay writes the comment counter and the records of the tasks
// changed since the table was opened, by id.
func (p *TasksProjection) WriteOverlay(w io.Writer) error {
	s := p.State()
	ids := p.changed.sorted(func(id string) bool { return s.trk.m[id] != nil })
	var head table.Enc
	head.Int(s.trk.commentSeq)
	return writeRecords(w, head, ids, func(w *table.Enc, id string) {
		t := s.trk.m[id]
		encodeTask(w, t, t.baseRefs)
	}, func(w *table.Enc, id string) { w.Int(int64(s.position(id))) })
}

// writeRecords writes head, the count of ids, then for each its record
// (enc) as a string, then what after encodes; one record at a time, so
// that an overlay is never whole in memory.
func writeRecords(out io.Writer, head table.Enc, ids []string, enc, after func(w *table.Enc, id string)) error {
	head.Uint(uint64(len(ids)))
	if _, err := out.Write(head.Buf); err != nil {
		return err
	}
	var rec, part table.Enc
	for _, id := range ids {
		rec.Buf = rec.Buf[:0]
		enc(&rec, id)
		part.Buf = part.Buf[:0]
		part.Uint(uint64(len(rec.Buf)))
		part.Buf = append(part.Buf, rec.Buf...)
		if after != nil {
			after(&part, id)
		}
		if _, err := out.Write(part.Buf); err != nil {
			return err
		}
	}
	return nil
}

// readRecords reads what writeRecords wrote after its head, each record by
// decode, which is given r to read what after wrote: ids valid and in
// order, or r fails.
func readRecords[T any](r *table.Dec, decode func(rec string, r *table.Dec) (T, string)) []T {
	out := make([]T, r.Count())
	prev := ""
	for i := range out {
		v, id := decode(r.Str(), r)
		if !ValidID(id) || i > 0 && id <= prev {
			r.Fail()
		}
		out[i], prev = v, id
	}
	return out
}

// UnmarshalOverlay puts the overlay's tasks in place of the table's. The
// tasks keep their strings in b, which the engine hands over.
func (p *TasksProjection) UnmarshalOverlay(b []byte) error {
	if p.s == nil || !p.changed.opened {
		return errNotOpened
	}
	var seq int64
	var tasks []*Task
	err := catchCorrupt(func() error {
		r := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b)))
		seq = r.Int()
		n := 0 // the table's tasks
		if p.s.trk.lazy != nil {
			n = p.s.trk.lazy.sum.n
		}
		tasks = readRecords(r, func(rec string, r *table.Dec) (*Task, string) {
			t := decodeTask(table.NewDec(rec))
			switch at := r.Int(); {
			case at < -1 || at >= int64(n):
				r.Fail()
			case at == -1:
				t.at = -1
			default:
				t.at = int32(at) + 1
			}
			return t, t.ID
		})
		return r.End()
	})
	if err != nil {
		return err
	}
	for _, t := range tasks {
		p.s.trk.m[t.ID] = t
		p.changed.add(t.ID)
	}
	p.s.trk.commentSeq = seq
	return nil
}

// WriteOverlay writes the entries changed since the table was opened.
func (p *QueueProjection) WriteOverlay(w io.Writer) error {
	s := p.State()
	ids := p.changed.sorted(func(id string) bool { return s.hst.m[id] != nil })
	return writeRecords(w, table.Enc{}, ids, func(w *table.Enc, id string) { encodeEntry(w, s.hst.m[id]) }, nil)
}

// UnmarshalOverlay puts the overlay's entries in place of the table's.
func (p *QueueProjection) UnmarshalOverlay(b []byte) error {
	if p.s == nil || !p.changed.opened {
		return errNotOpened
	}
	var entries []*Entry
	err := catchCorrupt(func() error {
		r := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b)))
		entries = readRecords(r, func(rec string, _ *table.Dec) (*Entry, string) {
			h := decodeEntry(table.NewDec(rec))
			return h, h.ID
		})
		return r.End()
	})
	if err != nil {
		return err
	}
	for _, h := range entries {
		p.s.hst.m[h.ID] = h
		p.changed.add(h.ID)
	}
	return nil
}

// WriteOverlay writes the ids created since the snapshot, sorted, one a
// line.
func (p *IDsProjection) WriteOverlay(w io.Writer) error {
	_, err := io.WriteString(w, strings.Join(slices.Sorted(maps.Keys(p.fresh)), "\n"))
	return err
}

// UnmarshalOverlay adds the overlay's ids, none of which the snapshot has.
func (p *IDsProjection) UnmarshalOverlay(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	ids := strings.Split(unsafe.String(unsafe.SliceData(b), len(b)), "\n")
	for i, id := range ids {
		if !ValidID(id) || i > 0 && id <= ids[i-1] || p.HasTask(id) {
			return fmt.Errorf("task-ids overlay: %q: %w", id, table.ErrDamaged)
		}
	}
	if p.fresh == nil {
		p.fresh = make(map[string]bool, len(ids))
	}
	for _, id := range ids {
		p.fresh[id] = true
	}
	return nil
}

var errNotOpened = errors.New("an overlay goes over a state opened from its snapshot")

// catchCorrupt runs fn, a damaged record's panic (table.Corrupt) as its error.
func catchCorrupt(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*fault.Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	return fn()
}
