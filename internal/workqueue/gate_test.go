package workqueue

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/table"
)

// The section of labels and types admits what the gate and the filter
// admit of each task itself, for random tasks, gates and filters.
func TestGateSectionAdmitsAsTheTasks(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "c", BlockedLabel, "é", ""}
	r := rand.New(rand.NewPCG(1, 2))
	some := func() []string {
		var out []string
		for range r.IntN(4) {
			out = append(out, names[r.IntN(len(names))]) // repeats too
		}
		return out
	}
	for round := range 300 {
		tasks := make([]*Task, r.IntN(40))
		w := newGateWriter()
		spans := make([]gateSpan, len(tasks))
		for i := range tasks {
			tasks[i] = &Task{Type: names[r.IntN(len(names))], Labels: some()}
			spans[i] = w.add(tasks[i])
		}
		perm := r.Perm(len(tasks)) // the section is in open's order, not the save's
		b := w.encode(len(tasks), func(k int) gateSpan { return spans[perm[k]] })
		g := Gate{Require: some(), Exclude: some(), ExcludeTypes: some()}
		f := ReadyFilter{All: some(), Any: some()}
		got, ok := newAdmitter(b, len(tasks), g, f)
		if !ok {
			t.Fatalf("round %d: the section does not read", round)
		}
		want := func(k int) bool {
			x := tasks[perm[k]]
			return g.Admits(x.Labels) && g.AdmitsType(x.Type) && f.Admits(x)
		}
		for _, k := range r.Perm(len(tasks)) { // asked in any order
			if got.has(k) != want(k) {
				t.Fatalf("round %d: task %+v under %+v and %+v: %v, want %v", round, tasks[perm[k]], g, f, got.has(k), want(k))
			}
		}
		if !got.whole() {
			t.Fatalf("round %d: not whole", round)
		}
		if _, ok := newAdmitter(b, len(tasks)+1, g, f); ok {
			t.Fatalf("round %d: a section of one task less reads", round)
		}
		// Cut short: every answer the section cannot give is "admitted"
		// (the caller reads the task), and it is not whole.
		m := r.IntN(len(b) + 1)
		if cut, ok := newAdmitter(b[:m], len(tasks), g, f); ok {
			for k := range len(tasks) {
				if want(k) && !cut.has(k) {
					t.Fatalf("round %d: a cut section passes over task %d, admitted", round, k)
				}
			}
			if m < len(b) && cut.whole() {
				t.Fatalf("round %d: a section cut to %d of %d bytes is whole", round, m, len(b))
			}
		}
	}
	// A gate of more labels than a mask holds: the tasks are read instead.
	var many []string
	for i := range 65 {
		many = append(many, fmt.Sprint(i))
	}
	if _, ok := newAdmitter(newGateWriter().encode(0, nil), 0, Gate{Require: many}, ReadyFilter{}); ok {
		t.Fatal("65 required labels answered from the section")
	}
}

// A section that passed its checksum but holds anything: newAdmitter
// refuses it or answers, and never panics; an answer asked again is the
// same.
func FuzzGateSection(f *testing.F) {
	w := newGateWriter()
	s1 := w.add(&Task{Type: "bug", Labels: []string{"a", "b"}})
	s2 := w.add(&Task{Labels: []string{"b"}})
	f.Add(w.encode(2, func(k int) gateSpan { return []gateSpan{s1, s2}[k] }), uint8(2))
	f.Add([]byte{0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		a, ok := newAdmitter(b, int(n), Gate{Require: []string{"a"}, Exclude: []string{"c"}, ExcludeTypes: []string{"bug"}}, ReadyFilter{All: []string{"b"}, Any: []string{"a", "d"}})
		if ok {
			first := make([]bool, n)
			for k := range int(n) {
				first[k] = a.has(k)
			}
			a.whole()
			for k := range int(n) {
				if a.has(k) != first[k] {
					t.Fatalf("task %d: %v, then %v", k, first[k], !first[k])
				}
			}
		}
	})
}

// stats and ready --json count or copy a plain task on the section's word
// alone: a section that decodes only partway (a crafted file: it passed
// its checksum) sends them to the tasks themselves, as the state held whole
// answers.
func TestAPartSectionCountsNothingUnread(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pol := DefaultPolicy()
	c := &churn{w: w, r: rand.New(rand.NewPCG(7, 34)), pol: pol, at: t0, step: 1800}
	c.change(300)
	fresh := w.reopener(t)
	g, now := Gate{Require: []string{"backend"}}, c.at
	whole := fresh()
	whole.allTasks()
	want := whole.NativeStats(pol, g, now)
	var views []any
	for _, task := range whole.Claimable(pol, g, ReadyFilter{}, now, 0) {
		views = append(views, whole.View(task, pol, now))
	}
	var wantJSON strings.Builder
	if err := jsonout.WriteList(&wantJSON, len(views), func(i int) any { return views[i] }, false); err != nil {
		t.Fatal(err)
	}
	cut := func() *State {
		s := fresh()
		sum := s.trk.lazy.sum
		b, err := sum.ReadSection(sum.gate)
		if err != nil {
			t.Fatal(err)
		}
		part := b[:len(b)/2] // its own checksum: the section reads, and stops decoding halfway
		sum.gate = table.Section{Off: sum.gate.Off, Len: int64(len(part)), Sum: crc32.ChecksumIEEE(part)}
		return s
	}
	if a, ok := cut().trk.lazy.admits(g, ReadyFilter{}); !ok || a.whole() {
		t.Fatalf("the cut section: read %v, whole", ok)
	}
	if got := cut().NativeStats(pol, g, now); got != want {
		t.Fatalf("stats on a part section: %+v, want %+v", got, want)
	}
	var gotJSON strings.Builder
	if ok, err := cut().WriteReadyJSON(&gotJSON, pol, g, ReadyFilter{}, now); err != nil || ok && gotJSON.String() != wantJSON.String() {
		t.Fatalf("ready --json on a part section (%v):\n%s\nwant\n%s", err, gotJSON.String(), wantJSON.String())
	}
	if got := taskIDs(cut().Claimable(pol, g, ReadyFilter{}, now, 0)); !slices.Equal(got, taskIDs(whole.Claimable(pol, g, ReadyFilter{}, now, 0))) {
		t.Fatalf("ready on a part section: %v", got)
	}
}

// verify's check of the records says so when the section of labels and
// types is damaged, or ends before its last task.
func TestCheckRecordsChecksTheGateSection(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add("a", 1, t0, "x")
	w.add("b", 2, t0, "y", "z")
	fresh := w.reopener(t)
	check := func(damage func(sum *taskSummary, b []byte)) (r any) {
		defer func() { r = recover() }()
		p := NewTasksProjection(fresh())
		sum := p.s.trk.lazy.sum
		b, err := sum.ReadSection(sum.gate)
		if err != nil {
			t.Fatal(err)
		}
		damage(sum, b)
		p.CheckRecords()
		return nil
	}
	if r := check(func(*taskSummary, []byte) {}); r != nil {
		t.Fatalf("a whole section: %v", r)
	}
	for name, damage := range map[string]func(*taskSummary, []byte){
		"checksum": func(sum *taskSummary, _ []byte) { sum.gate.Sum++ },
		"cut": func(sum *taskSummary, b []byte) {
			part := b[:len(b)-1]
			sum.gate = table.Section{Off: sum.gate.Off, Len: int64(len(part)), Sum: crc32.ChecksumIEEE(part)}
		},
	} {
		r := check(damage)
		if e, ok := r.(*fault.Error); !ok || !e.Has(CodeCorruptSnapshot) {
			t.Errorf("%s: %v, want corrupt_snapshot", name, r)
		}
	}
}
