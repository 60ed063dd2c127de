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
// whole table (0.8 s and 400 MiB at 100,000 tasks).
//
//	gate  := labels (Strs) | types (Strs) | count | task*   (open's order)
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
	e.Uint(uint64(n))
	for k := range n {
		sp := span(k)
		e.Buf = append(e.Buf, w.buf.Buf[sp.from:sp.to]...)
	}
	return e.Buf
}

// admits answers which open tasks, by their place in open, the gate and
// the filter admit (as saved). ok is false when the section does not
// read, or the gate asks for more than 64 labels: the caller reads the
// tasks instead.
func (l *lazyTasks) admits(g Gate, f ReadyFilter) (_ *admitter, ok bool) {
	b, err := l.sum.ReadSection(l.sum.gate)
	if err != nil {
		return nil, false
	}
	return newAdmitter(b, l.sum.nOpen, g, f)
}

// admitted is lazyTasks.admits for a state read from its snapshot, under
// a gate or filter; nil (every task) otherwise, or when it cannot answer.
// Gate{} admits no task with the blocked label, which ready's walks
// (blockedBy) pass over whatever the gate.
func (s *State) admitted(g Gate, f ReadyFilter) *admitter {
	if s.trk.lazy == nil || !gated(g, f) {
		return nil
	}
	a, _ := s.trk.lazy.admits(g, f)
	return a
}

// admittedAt is what a whole admitter holds, by the tasks' positions in the
// table rather than their places in open (the open tasks' order section
// maps one to the other, without the index); nil for a nil admitter. ok
// is false when the section of the order does not read.
func (s *State) admittedAt(a *admitter) (_ bitset, ok bool) {
	if a == nil {
		return nil, true
	}
	o, err := s.trk.lazy.openOrder()
	if err != nil || o.len() != a.n {
		return nil, false
	}
	at := newBitset(s.trk.lazy.sum.n)
	for k := range o.len() {
		if a.has(k) {
			i, err := o.at(k)
			if err != nil {
				return nil, false
			}
			at.set(i)
		}
	}
	return at, true
}

// admitter decodes the section's tasks only as far as it is asked: ready
// and next stop after a few.
type admitter struct {
	rd               *table.Dec
	roles            []role // each label of the section's, to the gate and the filter
	typeOK           []bool // each type of the section's
	needReq, needAll uint64
	anyOf            bool // the filter names labels of which one is needed
	n, next          int  // the tasks; those decoded so far
	bad              int  // the first task that did not decode; -1 none
	bits             bitset
}

// role is what a label is to a gate and a filter: its bit among the
// labels each requires, and whether it is excluded or one of Any.
type role struct {
	req, all     uint64
	exclude, any bool
}

// newAdmitter reads a section of n open tasks' labels and types (b, ours)
// for g and f.
func newAdmitter(b []byte, n int, g Gate, f ReadyFilter) (_ *admitter, ok bool) {
	rd := table.NewDec(unsafe.String(unsafe.SliceData(b), len(b)))
	labels, types := rd.Strs(), rd.Strs()
	req, all := distinct(g.Require), distinct(f.All)
	if rd.Uint() != uint64(n) || rd.Err() != nil || len(req) > 64 || len(all) > 64 {
		return nil, false
	}
	a := &admitter{rd: rd, roles: make([]role, len(labels)), typeOK: make([]bool, len(types)),
		needReq: mask(len(req)), needAll: mask(len(all)), anyOf: len(f.Any) > 0, n: n, bad: -1, bits: newBitset(n)}
	for i, l := range labels {
		if j := slices.Index(req, l); j >= 0 {
			a.roles[i].req = 1 << j
		}
		if j := slices.Index(all, l); j >= 0 {
			a.roles[i].all = 1 << j
		}
		a.roles[i].exclude = l == BlockedLabel || slices.Contains(g.Exclude, l) // as Gate.Admits
		a.roles[i].any = slices.Contains(f.Any, l)
	}
	for i, ty := range types {
		a.typeOK[i] = g.AdmitsType(ty)
	}
	return a, true
}

// has reports whether the gate and the filter admit open[k] as saved
// (k < n). From a task that does not decode on, every task is admitted:
// the caller reads it, and the gate itself judges.
func (a *admitter) has(k int) bool {
	for a.next <= k && a.bad < 0 {
		if !a.decode() {
			a.bad = a.next
			break
		}
		a.next++
	}
	return a.bad >= 0 && k >= a.bad || a.bits.has(k)
}

// whole decodes every task's part, and reports whether all decoded: what
// counts or copies a task has admitted without reading it needs every
// answer to be the section's.
func (a *admitter) whole() bool {
	if a.n > 0 {
		a.has(a.n - 1)
	}
	return a.bad < 0
}

// decode reads the next task's part, and sets its bit if admitted.
func (a *admitter) decode() bool {
	rd := a.rd
	ty, nl := rd.Uint(), rd.Count()
	var hasReq, hasAll uint64
	excluded, anyOf := false, !a.anyOf
	for range nl {
		l := rd.Uint()
		if l >= uint64(len(a.roles)) {
			return false
		}
		r := a.roles[l]
		hasReq, hasAll = hasReq|r.req, hasAll|r.all
		excluded, anyOf = excluded || r.exclude, anyOf || r.any
	}
	if rd.Err() != nil || ty >= uint64(len(a.typeOK)) {
		return false
	}
	if a.typeOK[ty] && !excluded && anyOf && hasReq == a.needReq && hasAll == a.needAll {
		a.bits.set(a.next)
	}
	return true
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
