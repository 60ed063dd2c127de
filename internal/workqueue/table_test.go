package workqueue_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// A state opened on its snapshot decodes tasks and entries as it is asked
// for them, and ready and next walk its open tasks in ready's order,
// stopping early. Every answer must be the one the whole state gives: on
// the snapshot as written, and after more events changed some tasks (the
// walk then merges what changed with what did not).
func TestTablesAnswerAsTheWholeState(t *testing.T) {
	t.Parallel()
	for seed := range 30 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 16))
			c := newTaskClone(fmt.Sprintf("w%d", seed)).(*taskClone)
			c.pol.Kind = []string{workqueue.Exponential, workqueue.Progressive}[seed%2]
			now := start
			seq := 0
			var snap [2][]byte
			var since []*eventlog.Event // applied after snap
			// fresh opens a state on snap with the events since applied: each
			// question gets one, so none is answered by what another decoded.
			fresh := func() *workqueue.State {
				s := open(t, snap)
				for _, e := range since {
					s.Apply(e)
				}
				return s
			}
			// onFile is fresh with the tasks' table opened on a file, as a
			// command opens it (task list --json maps it).
			dir := t.TempDir()
			onFile := func() *workqueue.State {
				s := openFile(t, dir, snap)
				for _, e := range since {
					s.Apply(e)
				}
				return s
			}
			step := func() {
				now = now.Add(time.Duration(r.IntN(900)) * time.Second)
				since = append(since, projectiontest.Step(t, c, r, now, &seq)...)
			}
			for range 120 + 10*seed {
				step()
			}
			snap, since = write(t, c.s), nil
			sameAnswers(t, c, fresh, now)
			if seed%3 == 0 { // every answer again, the index read only when needed: a third of the seeds
				sameAnswers(t, c, onFile, now)
			}
			sameLists(t, c, onFile, now)
			for range 40 {
				step()
			}
			sameAnswers(t, c, fresh, now)
			sameLists(t, c, onFile, now)
			if seed%3 == 1 { // the same events saved as overlays and opened over the snapshot, as the next command opens them
				over := func() *workqueue.State { return overlaid(t, dir, snap, since) }
				sameAnswers(t, c, over, now)
				sameLists(t, c, over, now)
			}
			snap, since = write(t, fresh()), nil
			for range 40 {
				step()
			}
			sameAnswers(t, c, fresh, now.Add(time.Hour))
			sameLists(t, c, onFile, now.Add(time.Hour))
			if got := write(t, fresh()); string(got[0]) != string(write(t, c.s)[0]) || string(got[1]) != string(write(t, c.s)[1]) {
				t.Fatal("the snapshots written from the opened state differ")
			}
		})
	}
}

// write returns s's snapshots, tasks and history.
func write(t *testing.T, s *workqueue.State) [2][]byte {
	t.Helper()
	var out [2][]byte
	for i, p := range []projections.Projection{workqueue.NewTasksProjection(s), workqueue.NewQueueProjection(s)} {
		b, err := p.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// open opens a state on snapshots write returned.
func open(t *testing.T, snap [2][]byte) *workqueue.State {
	t.Helper()
	s := workqueue.NewState()
	for i, p := range []projections.Projection{workqueue.NewTasksProjection(s), workqueue.NewQueueProjection(s)} {
		if err := p.UnmarshalState(snap[i]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// overlaid is open with the events since applied by the projections, as
// a command catches up, saved as overlays (projections.Overlayer), and
// opened again over the snapshots, as the next command opens them.
func overlaid(t *testing.T, dir string, snap [2][]byte, since []*eventlog.Event) *workqueue.State {
	t.Helper()
	_, ps := openedFile(t, dir, snap)
	for _, e := range since {
		for _, p := range ps {
			if err := p.Apply(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, next := openedFile(t, dir, snap)
	for i, p := range ps {
		var b bytes.Buffer
		if err := p.(projections.Overlayer).WriteOverlay(&b); err != nil {
			t.Fatal(err)
		}
		if err := next[i].(projections.Overlayer).UnmarshalOverlay(b.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// openFile is open with the tasks' table read from a file in dir.
func openFile(t *testing.T, dir string, snap [2][]byte) *workqueue.State {
	t.Helper()
	s, _ := openedFile(t, dir, snap)
	return s
}

// openedFile is openFile, with the projections that hold the state.
func openedFile(t *testing.T, dir string, snap [2][]byte) (*workqueue.State, []projections.Projection) {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("tasks-%x.snap", sha256.Sum256(snap[0])))
	if err := os.WriteFile(path, snap[0], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := workqueue.NewState()
	ps := []projections.Projection{workqueue.NewTasksProjection(s), workqueue.NewQueueProjection(s)}
	if err := ps[0].(projections.Opener).OpenState(f, 0, int64(len(snap[0]))); err != nil {
		t.Fatal(err)
	}
	if err := ps[1].UnmarshalState(snap[1]); err != nil {
		t.Fatal(err)
	}
	return s, ps
}

// sameLists checks task list --json and the views of ready --json, as a
// snapshot's saved listings write them, against the whole state's values
// written by jsonout: byte for byte, with every filter, now and later
// (leases run out).
func sameLists(t *testing.T, c *taskClone, fresh func() *workqueue.State, now time.Time) {
	t.Helper()
	whole := c.s
	list := func(items []any) string {
		var b strings.Builder
		if err := jsonout.WriteList(&b, len(items), func(i int) any { return items[i] }, false); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// One task, as show reads it: found by the summary's fences, the
	// index unread.
	all := whole.SortedIDs()
	if got := fresh().TaskIDs(); !slices.Equal(got, all) { // from the table's ids and the tasks since
		t.Fatalf("TaskIDs: %d ids, want %d", len(got), len(all))
	}
	some := []string{"sp-none", ""}
	for i := 0; i < len(all); i += 1 + len(all)/12 { // about 12 of them, the first and across
		some = append(some, all[i])
	}
	for _, id := range some {
		lazy := fresh()
		wt, lt := whole.Task(id), lazy.Task(id)
		if (wt == nil) != (lt == nil) || whole.HasTask(id) != fresh().HasTask(id) {
			t.Fatalf("Task(%s): %v, want %v", id, lt, wt)
		}
		if wt != nil {
			if want, got := jsonOf(t, whole.Show(wt, c.pol, now)), jsonOf(t, lazy.Show(lt, c.pol, now)); want != got {
				t.Fatalf("show %s:\n%s\nwant\n%s", id, got, want)
			}
			wb, wp := whole.Waits(wt)
			lb, lp := lazy.Waits(lt) // its blockers' statuses, from the summary's flags
			if !slices.Equal(wb, lb) || wp != lp {
				t.Fatalf("waits %s: %v %q, want %v %q", id, lb, lp, wb, wp)
			}
		}
		if workqueue.IndexRead(lazy) {
			t.Fatalf("show %s read the index", id)
		}
	}
	// The top of ready, as ready and next walk it: the open tasks' order
	// from its section, each by its position, the index unread.
	for _, limit := range []int{1, 5} {
		lazy := fresh()
		got := ids(lazy.Claimable(c.pol, workqueue.Gate{}, workqueue.ReadyFilter{}, now, limit))
		if want := ids(whole.Claimable(c.pol, workqueue.Gate{}, workqueue.ReadyFilter{}, now, limit)); !slices.Equal(got, want) {
			t.Fatalf("claimable, %d: %v, want %v", limit, got, want)
		}
		if workqueue.IndexRead(lazy) && c.pol.Kind != workqueue.Progressive { // its requeues reorder them all
			t.Fatalf("the top %d of ready read the index", limit)
		}
	}
	// Under a gate or a filter, the walk passes over the tasks the
	// table's section says they do not admit, unread.
	for _, g := range []workqueue.Gate{{Require: []string{"backend"}}, {Exclude: []string{"backend"}}, {Require: []string{"nothere"}}} {
		for _, f := range []workqueue.ReadyFilter{{}, {Any: []string{"ui", "backend"}}} {
			for _, limit := range []int{1, 5, 0} {
				got := ids(fresh().Claimable(c.pol, g, f, now, limit))
				if want := ids(whole.Claimable(c.pol, g, f, now, limit)); !slices.Equal(got, want) {
					t.Fatalf("claimable under %+v, %+v, %d: %v, want %v", g, f, limit, got, want)
				}
			}
		}
	}
	one := 1
	for _, at := range []time.Time{now, now.Add(30 * time.Hour)} {
		// Every ready task: the table preloaded from its file.
		for _, f := range []workqueue.ReadyFilter{{}, {Claimed: true}, {All: []string{"backend"}}} {
			if want, got := ids(whole.Ready(c.pol, f, at, 0)), ids(fresh().Ready(c.pol, f, at, 0)); !slices.Equal(want, got) {
				t.Fatalf("ready %+v, all: %v, want %v", f, got, want)
			}
		}
		var views []any
		for _, task := range whole.Claimable(c.pol, workqueue.Gate{}, workqueue.ReadyFilter{}, at, 0) {
			views = append(views, whole.View(task, c.pol, at))
		}
		var got strings.Builder
		ok, err := fresh().WriteReadyJSON(&got, c.pol, workqueue.Gate{}, workqueue.ReadyFilter{}, at)
		if err != nil || ok != (c.pol.Kind != workqueue.Progressive) {
			t.Fatalf("ready: written from the listings %v (%v)", ok, err)
		}
		if want := list(views); ok && got.String() != want {
			t.Fatalf("ready at %v:\n%s\nwant\n%s", at, got.String(), want)
		}
		// Under a gate: the tasks it admits, from the section of labels and types.
		gate := workqueue.Gate{Require: []string{"backend"}}
		views = views[:0]
		for _, task := range whole.Claimable(c.pol, gate, workqueue.ReadyFilter{}, at, 0) {
			views = append(views, whole.View(task, c.pol, at))
		}
		got.Reset()
		if ok, err := fresh().WriteReadyJSON(&got, c.pol, gate, workqueue.ReadyFilter{}, at); err != nil || ok && got.String() != list(views) {
			t.Fatalf("ready under a gate at %v (%v):\n%s\nwant\n%s", at, err, got.String(), list(views))
		}
		if want, got := whole.NativeStats(c.pol, gate, at), fresh().NativeStats(c.pol, gate, at); got != want {
			t.Fatalf("stats under a gate at %v: %+v, want %+v", at, got, want)
		}
		// bd stats, from its section: the counts, the lead time and the epics.
		if got, ok := workqueue.SummaryBeadsStats(fresh(), at); !ok {
			t.Fatal("bd stats: not from its section")
		} else if want := whole.BeadsStats(c.pol, at); got != want {
			t.Fatalf("bd stats at %v:\n%+v\nwant\n%+v", at, got, want)
		}
		// bd epic status and bd label list-all, from the same section.
		lazy := fresh()
		if got, want := jsonOf(t, lazy.Epics(c.pol, at)), jsonOf(t, whole.Epics(c.pol, at)); got != want {
			t.Fatalf("bd epic status at %v:\n%s\nwant\n%s", at, got, want)
		}
		if got, want := lazy.LabelCounts(), whole.LabelCounts(); !slices.Equal(got, want) {
			t.Fatalf("bd label list-all at %v:\n%v\nwant\n%v", at, got, want)
		}
		if workqueue.IndexRead(lazy) {
			t.Fatal("bd epic status or label list-all read the index")
		}
		// bd blocked, from the tasks the section names and those changed since.
		if !workqueue.BlockedFromSection(fresh()) {
			t.Fatal("bd blocked: not from its section")
		}
		if got, want := jsonOf(t, fresh().BeadsBlocked(c.pol, at, "")), jsonOf(t, whole.BeadsBlocked(c.pol, at, "")); got != want {
			t.Fatalf("bd blocked at %v:\n%s\nwant\n%s", at, got, want)
		}
		if got, want := fresh().Cycles(), whole.Cycles(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("bd dep cycles at %v:\n%v\nwant\n%v", at, got, want)
		}
		// bd's list and ready views: the blocked label is bd's status.
		for _, admit := range []func(*workqueue.Task, string) bool{
			func(*workqueue.Task, string) bool { return true },
			func(_ *workqueue.Task, status string) bool { return status != workqueue.StatusClosed },
			func(_ *workqueue.Task, status string) bool { return status == workqueue.StatusBlocked },
		} {
			for _, limit := range []int{0, 3} {
				var items []any
				for _, it := range whole.BeadsList(c.pol, at, admit, nil, limit) {
					items = append(items, it)
				}
				s := fresh()
				if got, want := list(s.BeadsListJSON(c.pol, at, admit, limit)), list(items); got != want {
					t.Fatalf("bd list (limit %d) at %v:\n%s\nwant\n%s", limit, at, got, want)
				}
			}
		}
		// bd children: the tasks that named the parent when saved, and those changed since.
		parents := []string{"sp-none", all[0]}
		for _, id := range all {
			if pt := whole.Task(id).Parent; pt != "" && !slices.Contains(parents, pt) && len(parents) < 6 {
				parents = append(parents, pt)
			}
		}
		for _, parent := range parents {
			for _, limit := range []int{0, 1} {
				notClosed := func(_ *workqueue.Task, status string) bool { return status != workqueue.StatusClosed }
				want := jsonOf(t, whole.BeadsList(c.pol, at, func(t *workqueue.Task, status string) bool { return t.Parent == parent && notClosed(t, status) }, nil, limit))
				if got := jsonOf(t, fresh().BeadsChildren(c.pol, at, parent, notClosed, nil, limit)); got != want {
					t.Fatalf("bd children %s (limit %d) at %v:\n%s\nwant\n%s", parent, limit, at, got, want)
				}
			}
		}
		// bd search: the records that cannot hold the text passed over.
		someID := strings.ToUpper(all[len(all)/2][:len(all[len(all)/2])-1])
		for _, query := range []string{"login", "fix THE login", "quote", "kelv", "istanbul", "\u00fcn\u00ef", "\U0001f680", `"this" and \`, "<B>", "edited", "two\nl", someID, "zzz"} {
			anyCase := func(s string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(query)) }
			matches := func(v workqueue.TaskJSON) bool { return anyCase(v.ID) || anyCase(v.Title) || anyCase(v.Description) }
			for _, admit := range []func(*workqueue.Task, string) bool{
				func(*workqueue.Task, string) bool { return true },
				func(_ *workqueue.Task, status string) bool { return status == workqueue.StatusOpen },
			} {
				for _, limit := range []int{0, 3} {
					want := jsonOf(t, whole.BeadsList(c.pol, at, admit, matches, limit))
					if got := jsonOf(t, fresh().BeadsSearch(c.pol, at, admit, query, limit)); got != want {
						t.Fatalf("bd search %q (limit %d) at %v:\n%s\nwant\n%s", query, limit, at, got, want)
					}
					if got := jsonOf(t, whole.BeadsSearch(c.pol, at, admit, query, limit)); got != want {
						t.Fatalf("bd search %q (limit %d) in memory at %v:\n%s\nwant\n%s", query, limit, at, got, want)
					}
				}
			}
		}
		// bd list's default, the first issues not closed, picked from the index.
		notClosed := func(_ *workqueue.Task, status string) bool { return status != workqueue.StatusClosed }
		for _, limit := range []int{1, 3, 50} {
			var items []any
			for _, it := range whole.BeadsList(c.pol, at, notClosed, nil, limit) {
				items = append(items, it)
			}
			if got, want := list(fresh().BeadsOpenListJSON(c.pol, at, limit)), list(items); got != want {
				t.Fatalf("bd list's default (limit %d) at %v:\n%s\nwant\n%s", limit, at, got, want)
			}
			if got, want := jsonOf(t, fresh().BeadsOpenList(c.pol, at, limit)), jsonOf(t, whole.BeadsList(c.pol, at, notClosed, nil, limit)); got != want {
				t.Fatalf("bd list's default lines (limit %d) at %v:\n%s\nwant\n%s", limit, at, got, want)
			}
		}
		// All of them (--limit 0), copied from the listings.
		var items []any
		for _, it := range whole.BeadsList(c.pol, at, notClosed, nil, 0) {
			items = append(items, it)
		}
		var open strings.Builder
		if ok, err := fresh().WriteBeadsOpenListJSON(&open, c.pol, at); !ok || err != nil {
			t.Fatalf("bd list --limit 0: written from the listings %v (%v)", ok, err)
		}
		if want := list(items); open.String() != want {
			t.Fatalf("bd list --limit 0 at %v:\n%s\nwant\n%s", at, open.String(), want)
		}
		// bd ready --limit 0 under each sort, from the listings.
		for _, policy := range []string{"hybrid", "priority", "oldest"} {
			tasks, err := whole.ReadyBeads(c.pol, workqueue.ReadyFilter{Claimed: true}, at, func(t *workqueue.Task) bool { return !workqueue.BeadsWorkflow(t) }, policy, 0)
			if err != nil {
				t.Fatal(err)
			}
			var ready strings.Builder
			if ok, err := fresh().WriteBeadsReadyJSON(&ready, c.pol, at, policy); !ok || err != nil {
				t.Fatalf("bd ready --limit 0: written from the listings %v (%v)", ok, err)
			}
			if want := list(whole.ViewsJSON(tasks, c.pol, at, true)); ready.String() != want {
				t.Fatalf("bd ready --sort %s --limit 0 at %v:\n%s\nwant\n%s", policy, at, ready.String(), want)
			}
		}
		all := whole.List(c.pol, workqueue.ListFilter{}, at)
		var beads []any
		for _, task := range all {
			beads = append(beads, workqueue.Beads(whole.View(task, c.pol, at)))
		}
		s := fresh()
		if got, want := list(s.ViewsJSON(s.List(c.pol, workqueue.ListFilter{}, at), c.pol, at, true)), list(beads); got != want {
			t.Fatalf("bd views at %v:\n%s\nwant\n%s", at, got, want)
		}
		for _, f := range []workqueue.ListFilter{{}, {Status: workqueue.StatusOpen}, {Status: workqueue.StatusInProgress}, {Status: workqueue.StatusClosed}, {Priority: &one}, {Label: "backend"}} {
			tasks := whole.List(c.pol, f, at)
			counts := whole.DependentCounts()
			var items []any
			for _, task := range tasks {
				items = append(items, whole.ListItem(task, c.pol, at, counts))
			}
			want := list(items)
			s := fresh()
			var got strings.Builder
			ok, err := s.WriteListJSON(&got, c.pol, f, at)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (f.Label == "") {
				t.Fatalf("list %+v: written from the listings %v", f, ok)
			}
			if !ok {
				got.WriteString(list(s.ListItemsJSON(s.List(c.pol, f, at), c.pol, at)))
			}
			if got.String() != want {
				t.Fatalf("task list %+v at %v:\n%s\nwant\n%s", f, at, got.String(), want)
			}
			views := []any{}
			for _, task := range tasks {
				views = append(views, whole.View(task, c.pol, at))
			}
			s = fresh()
			saved := s.ViewsJSON(s.List(c.pol, f, at), c.pol, at, false)
			if got := list(saved); got != list(views) {
				t.Fatalf("views %+v at %v:\n%s\nwant\n%s", f, at, got, list(views))
			}
			// Elsewhere than a CLI list (compact, HTML escaped), encoding/json writes them.
			if got, want := jsonOf(t, saved), jsonOf(t, views); got != want {
				t.Fatalf("views %+v as encoding/json writes them:\n%s\nwant\n%s", f, got, want)
			}
		}
	}
}

func ids(ts []*workqueue.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameAnswers(t *testing.T, c *taskClone, fresh func() *workqueue.State, now time.Time) {
	t.Helper()
	whole := c.s
	for _, f := range []workqueue.ReadyFilter{{}, {All: []string{"backend"}}, {Any: []string{"ui", "urgent"}}, {Claimed: true}, {Unassigned: true}} {
		for _, limit := range []int{1, 2, 5, 1000, 0} {
			want, got := ids(whole.Ready(c.pol, f, now, limit)), ids(fresh().Ready(c.pol, f, now, limit))
			if !slices.Equal(want, got) {
				t.Fatalf("ready %+v limit %d: %v, want %v", f, limit, got, want)
			}
		}
	}
	// bd ready's orders walk the snapshot by creation time (its index) and
	// stop early: the same as ready's every task put in order.
	for _, at := range []time.Time{now, now.Add(30 * time.Hour), now.Add(60 * time.Hour)} {
		for _, sort := range []string{"hybrid", "priority", "oldest"} {
			for _, f := range []workqueue.ReadyFilter{{}, {Claimed: true}, {Any: []string{"ui", "urgent"}, Claimed: true}} {
				for _, keep := range []func(*workqueue.Task) bool{nil, func(t *workqueue.Task) bool { return t.Priority != 2 }} {
					for _, limit := range []int{1, 3, 10, 0} {
						all := whole.Ready(c.pol, f, at, workqueue.Unsorted)
						if keep != nil {
							all = slices.DeleteFunc(all, func(t *workqueue.Task) bool { return !keep(t) })
						}
						w, err := workqueue.BeadsOrder(all, sort, at, limit)
						if err != nil {
							t.Fatal(err)
						}
						g, err := fresh().ReadyBeads(c.pol, f, at, keep, sort, limit)
						if err != nil {
							t.Fatal(err)
						}
						if want, got := ids(w), ids(g); !slices.Equal(want, got) {
							t.Fatalf("bd ready %s %+v limit %d at %v: %v, want %v", sort, f, limit, at, got, want)
						}
					}
				}
			}
		}
	}
	for _, g := range []workqueue.Gate{{}, {Require: []string{"backend"}}, {Exclude: []string{"ui"}}} {
		wd, wc, werr := workqueue.Next(whole, nil, true, c.pol, g, "agent-9", "ada@example.com", now)
		gd, gc, gerr := workqueue.Next(fresh(), nil, true, c.pol, g, "agent-9", "ada@example.com", now)
		if want, got := jsonOf(t, []any{wd, wc, fmt.Sprint(werr)}), jsonOf(t, []any{gd, gc, fmt.Sprint(gerr)}); want != got {
			t.Fatalf("next %+v:\n%s\nwant\n%s", g, got, want)
		}
	}
	if want, got := jsonOf(t, workqueue.Expire(whole, c.pol, now)), jsonOf(t, workqueue.Expire(fresh(), c.pol, now)); want != got {
		t.Fatalf("expire: %s, want %s", got, want)
	}
	if want, got := workqueue.NextExpiry(whole, now), workqueue.NextExpiry(fresh(), now); !want.Equal(got) {
		t.Fatalf("next expiry %v, want %v", got, want)
	}
	for _, p := range []workqueue.Policy{c.pol, workqueue.DefaultPolicy()} {
		for _, back := range []time.Duration{0, 5 * time.Minute, time.Hour, 6 * time.Hour} { // earlier: more backoffs still running
			wa, wid := p.Wakeup(whole.Entries(), now.Add(-back))
			ga, gid := p.Wakeup(fresh().Waiting(), now.Add(-back))
			if !wa.Equal(ga) || wid != gid {
				t.Fatalf("wakeup %v %s, want %v %s", ga, gid, wa, wid)
			}
		}
	}
	if want, got := whole.TaskCount(), fresh().TaskCount(); want != got {
		t.Fatalf("%d tasks, want %d", got, want)
	}
	for _, id := range append(whole.SortedIDs(), "sp-none") {
		if whole.HasTask(id) != fresh().HasTask(id) {
			t.Fatalf("HasTask(%s) differs", id)
		}
		if want, got := jsonOf(t, whole.Entry(id)), jsonOf(t, fresh().Entry(id)); want != got {
			t.Fatalf("Entry(%s): %s, want %s", id, got, want)
		}
		lazy := fresh()
		wt, lt := whole.Task(id), lazy.Task(id)
		if (wt == nil) != (lt == nil) {
			t.Fatalf("Task(%s): %v, want %v", id, lt, wt)
		}
		if wt == nil {
			continue
		}
		if want, got := jsonOf(t, whole.Show(wt, c.pol, now)), jsonOf(t, lazy.Show(lt, c.pol, now)); want != got {
			t.Fatalf("show %s:\n%s\nwant\n%s", id, got, want)
		}
	}
	if want, got := jsonOf(t, whole.Export()), jsonOf(t, fresh().Export()); want != got {
		t.Fatal("export differs")
	}
}
