package workqueue

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/spoolhq/spool/internal/table"
)

// The tasks' table keeps each open task's labels and type in a section
// of its own, so that a gate (workqueue.label, exclude_labels,
// exclude_types) or ready's label filters need not decode every open task
// to learn which they admit: with a gate, stats' ready count decoded the
// whole table (1 s and 400 MiB at 100,000 tasks).
//
//	gate  := labels (Strs) | types (Strs) | task*   (open's order)
//	task  := type (index) | count | label (index)*

// gateSpan is where one open task's part lies in gateWriter.buf.
type gateSpan struct{ from, to int }

// gateWriter gathers the open tasks' parts as the save streams the tasks;
// encode puts them in open's order.
type gateWriter struct {
	labels, types       map[string]uint64
	labelList, typeList []string
	buf                 table.Enc
}

func newGateWriter() *gateWriter {
	return &gateWriter{labels: map[string]uint64{}, types: map[string]uint64{}}
}

// add records t's labels and type, and returns where they lie.
func (w *gateWriter) add(t *Task) gateSpan {
	from := len(w.buf.Buf)
	w.buf.Uint(intern(w.types, &w.typeList, t.Type))
	w.buf.Uint(uint64(len(t.Labels)))
	for _, l := range t.Labels {
		w.buf.Uint(intern(w.labels, &w.labelList, l))
	}
	return gateSpan{from, len(w.buf.Buf)}
}

// intern is s's index in list, added if new (cloned: the save's tasks
// are decoded for the moment).
func intern(m map[string]uint64, list *[]string, s string) uint64 {
	if i, ok := m[s]; ok {
		return i
	}
	s = strings.Clone(s)
	i := uint64(len(*list))
	m[s] = i
	*list = append(*list, s)
	return i
}

// encode is the section: the n open tasks' parts, span(k) for open[k].
func (w *gateWriter) encode(n int, span func(k int) gateSpan) []byte {
	e := table.Enc{Buf: make([]byte, 0, len(w.buf.Buf)+64)}
	e.Strs(w.labelList)
	e.Strs(w.typeList)
	for k := range n {
		sp := span(k)
		e.Buf = append(e.Buf, w.buf.Buf[sp.from:sp.to]...)
	}
	return e.Buf
}

// admits is the set of the open tasks, by their place in open, whose
// labels and type (as saved) g and f admit. ok is false when the section
// does not read, or the gate asks for more than 64 labels: the caller
// reads the tasks instead.
func (t *taskTable) admits(g Gate, f ReadyFilter) (_ bitset, ok bool) {
	b, err := t.ReadSection(t.gate)
	if err != nil {
		return nil, false
	}
	return admitsIn(b, len(t.open), g, f)
}

// admitsIn is admits on a section of n open tasks.
func admitsIn(b []byte, n int, g Gate, f ReadyFilter) (_ bitset, ok bool) {
	rd := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b))) // b is ours
	labels, types := rd.Strs(), rd.Strs()
	req, all := distinct(g.Require), distinct(f.All)
	if len(req) > 64 || len(all) > 64 {
		return nil, false
	}
	// What each label of the section is to the gate and the filter.
	type role struct {
		req, all     uint64 // its bit among req and all
		exclude, any bool
	}
	roles := make([]role, len(labels))
	for i, l := range labels {
		if j := slices.Index(req, l); j >= 0 {
			roles[i].req = 1 << j
		}
		if j := slices.Index(all, l); j >= 0 {
			roles[i].all = 1 << j
		}
		roles[i].exclude = l == BlockedLabel || slices.Contains(g.Exclude, l) // as Gate.Admits
		roles[i].any = slices.Contains(f.Any, l)
	}
	typeOK := make([]bool, len(types))
	for i, ty := range types {
		typeOK[i] = g.AdmitsType(ty)
	}
	needReq, needAll := mask(len(req)), mask(len(all))
	out := newBitset(n)
	for k := range n {
		ty, nl := rd.Uint(), rd.Count()
		var hasReq, hasAll uint64
		excluded, anyOf := false, len(f.Any) == 0
		for range nl {
			l := rd.Uint()
			if l >= uint64(len(roles)) {
				return nil, false
			}
			r := roles[l]
			hasReq, hasAll = hasReq|r.req, hasAll|r.all
			excluded, anyOf = excluded || r.exclude, anyOf || r.any
		}
		if ty >= uint64(len(typeOK)) {
			return nil, false
		}
		if typeOK[ty] && !excluded && anyOf && hasReq == needReq && hasAll == needAll {
			out.set(k)
		}
	}
	if rd.End() != nil {
		return nil, false
	}
	return out, true
}

// distinct is ss without repeats, in order.
func distinct(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// mask has the low n bits set (n ≤ 64).
func mask(n int) uint64 {
	if n == 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// gated reports whether g or f looks at labels or types.
func gated(g Gate, f ReadyFilter) bool {
	return len(g.Require)+len(g.Exclude)+len(g.ExcludeTypes)+len(f.All)+len(f.Any) > 0
}
