package workqueue

import (
	"encoding/binary"
	"iter"
	"unsafe"

	"github.com/spoolhq/spool/internal/table"
)

// ready and next walk the open tasks from the top of ready's order and
// stop after a few. They read the whole task index for it (100,000 ids
// and offsets at 100k tasks, about 4 ms); the order and the bits they
// need are now a section of their own, and the walk finds each task's id
// and record by its position through the summary's groups
// (table.Summary.At).

// openOrder is the open tasks' section: their positions in ready's order,
// 4 bytes each so that a walk reads only the ones it reaches, and a bit
// each: waitsItself when saved.
type openOrder struct {
	pos   string // little-endian uint32s
	waits string
	n     int // the table's records: every position is below
}

func (o *openOrder) len() int           { return len(o.pos) / 4 }
func (o *openOrder) waitsAt(k int) bool { return o.waits[k/8]&(1<<(k%8)) != 0 }

// at is the k-th open task's position; ErrDamaged for one past the table.
func (o *openOrder) at(k int) (int, error) {
	b := o.pos[4*k : 4*k+4]
	v := int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24
	if v >= o.n {
		return 0, table.ErrDamaged
	}
	return v, nil
}

// encodeOpenOrder is the section of n open tasks, in ready's order: the
// position and the waits bit of the k-th.
func encodeOpenOrder(n int, pos func(k int) uint32, waits func(k int) bool) []byte {
	var w table.Enc
	w.Uint(uint64(n))
	bits := make([]byte, (n+7)/8)
	for k := range n {
		w.Buf = binary.LittleEndian.AppendUint32(w.Buf, pos(k))
		if waits(k) {
			bits[k/8] |= 1 << (k % 8)
		}
	}
	return append(w.Buf, bits...)
}

// openOrder reads the section once; an error for one that does not read.
func (l *lazyTasks) openOrder() (*openOrder, error) {
	l.orderOnce.Do(func() {
		b, err := l.sum.ReadSection(l.sum.openOrder)
		if err != nil {
			l.orderErr = err
			return
		}
		rd := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b))) // b is ours, and kept
		k := rd.Count()
		o := &openOrder{n: l.sum.n}
		o.pos = rd.Raw(4 * k)
		o.waits = rd.Raw((k + 7) / 8)
		err = rd.End()
		if err == nil && k != l.sum.nOpen {
			err = table.ErrDamaged
		}
		l.order, l.orderErr = o, err
	})
	return l.order, l.orderErr
}

// openSlot is one of the snapshot's open tasks: its position in the
// table, its place k in ready's order (the sections' index), and whether
// it waited by itself when saved.
type openSlot struct {
	pos, k int
	waits  bool
}

// openTasks yields the snapshot's open tasks in order (nil: ready's own):
// from the index once it is read, or for another order; else from the
// section.
func (k *trackerSide) openTasks(order func(*taskTable) iter.Seq[int]) iter.Seq[openSlot] {
	if k.lazy.loaded.Load() == nil && order == nil {
		if o, err := k.lazy.openOrder(); err == nil {
			return func(yield func(openSlot) bool) {
				for j := range o.len() {
					i, err := o.at(j)
					if err != nil {
						panic(table.CorruptIndex("the tasks", err))
					}
					if !yield(openSlot{i, j, o.waitsAt(j)}) {
						return
					}
				}
			}
		}
	}
	tt := k.table()
	if order == nil {
		order = readyOrder
	}
	return func(yield func(openSlot) bool) {
		for j := range order(tt) {
			if !yield(openSlot{int(tt.open[j]), j, tt.waitsAt(j)}) {
				return
			}
		}
	}
}

// readyOrder yields the places in t.open as they are: ready's order.
func readyOrder(t *taskTable) iter.Seq[int] {
	return func(yield func(int) bool) {
		for k := range t.open {
			if !yield(k) {
				return
			}
		}
	}
}

// taskAt is the task at position i of the snapshot: as Task, found by
// its position (the summary's group, or the index).
func (s *State) taskAt(i int) *Task {
	var id string
	var rec func() *table.Dec
	if t := s.trk.lazy.loaded.Load(); t != nil {
		id, rec = t.IDs[i], func() *table.Dec { return t.Record(i) }
	} else {
		var from, to int64
		var err error
		if id, from, to, err = s.trk.lazy.sum.At(i); err != nil {
			panic(table.CorruptIndex("the tasks", err))
		}
		rec = s.trk.lazy.record(id, from, to)
	}
	if t, ok := s.trk.m[id]; ok {
		return t
	}
	t := decodeTask(rec())
	t.at = int32(i) + 1
	s.trk.m[id] = t
	return t
}
