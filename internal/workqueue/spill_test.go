package workqueue_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/workqueue"
	"github.com/spoolhq/spool/projections/projectiontest"
)

// A spilled fold must write what the fold in memory writes, byte for byte:
// the table and tasks.json, with windows of every size down to one record.
// Two kinds of history: the conformance clone's commands (claims, leases,
// failures, dependencies, syncs), and events that set fields to "" and back,
// comment, and import over tasks that have comments (a new ordinal: the
// old records must not come back).
func TestSpilledFoldWritesTheSame(t *testing.T) {
	for seed := range 16 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		var events []*eventlog.Event
		if seed%2 == 0 {
			events = spillHistory(t, r, 40+20*seed)
		} else {
			events = cloneHistory(t, r, 60+30*seed)
		}
		want := foldAndWrite(t, events, "")
		for _, w := range []int64{1, 200, 5000, 4 << 20} {
			restore := workqueue.SetSpillWindow(w)
			dir := t.TempDir()
			got := foldAndWrite(t, events, dir)
			restore()
			for i, name := range []string{"table", "tasks.json"} {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("seed %d, window %d: the spilled fold's %s differs at byte %d", seed, w, name, firstDiff(got[i], want[i]))
				}
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Fatalf("spill files left in %s: %v", dir, left)
			}
		}
	}
}

// Spill is for a fold from nothing: a state with tasks already has their
// fields in memory, not in the file.
func TestSpillNeedsAnEmptyState(t *testing.T) {
	t.Parallel()
	p := workqueue.NewTasksProjection(workqueue.NewState())
	p.Apply(cloneHistory(t, rand.New(rand.NewPCG(1, 2)), 5)[0])
	if err := p.Spill(t.TempDir()); err == nil {
		t.Fatal("a state with a task spilled")
	}
}

// cloneHistory is n of the conformance clone's commands' events.
func cloneHistory(t *testing.T, r *rand.Rand, n int) []*eventlog.Event {
	t.Helper()
	c := newTaskClone("w1").(*taskClone)
	now := start
	var events []*eventlog.Event
	seq := 0
	for len(events) < n {
		now = now.Add(time.Duration(r.IntN(900)) * time.Second)
		events = append(events, projectiontest.Step(t, c, r, now, &seq)...)
	}
	return events
}

// foldAndWrite folds events, spilling to dir unless it is "", and returns
// the table and tasks.json, written side by side as a save writes them.
func foldAndWrite(t *testing.T, events []*eventlog.Event, dir string) [2][]byte {
	t.Helper()
	p := workqueue.NewTasksProjection(workqueue.NewState())
	if dir != "" {
		if err := p.Spill(dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range events {
		if err := p.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	p.Freeze()
	var out [2]bytes.Buffer
	var wg sync.WaitGroup
	var filesErr error
	wg.Go(func() {
		filesErr = p.WriteFiles(func(_ string, _ bool, write func(io.Writer) error) error { return write(&out[1]) })
	})
	if err := p.WriteState(&out[0]); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if filesErr != nil {
		t.Fatal(filesErr)
	}
	return [2][]byte{out[0].Bytes(), out[1].Bytes()}
}

func spillHistory(t *testing.T, r *rand.Rand, n int) []*eventlog.Event {
	t.Helper()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	text := func() string {
		switch r.IntN(4) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("long text ", 50+r.IntN(200)) // longer than small windows
		}
		return fmt.Sprintf("text %d", r.IntN(1000))
	}
	maybe := func() *string {
		if r.IntN(2) == 0 {
			return nil
		}
		s := text()
		return &s
	}
	var ids []string
	var events []*eventlog.Event
	add := func(typ, id string, data any) {
		at = at.Add(time.Minute)
		e, err := eventlog.Draft{Type: typ, Subject: id, Data: data}.Event(fmt.Sprintf("actor%d@example.com", r.IntN(3)), at)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	// Most events go to the last few tasks, so that each is changed,
	// cleared and changed again.
	some := func() string {
		if r.IntN(3) > 0 {
			return ids[len(ids)-1-r.IntN(min(3, len(ids)))]
		}
		return ids[r.IntN(len(ids))]
	}
	for range n {
		switch op := r.IntN(12); {
		case op < 2 || len(ids) == 0:
			id := fmt.Sprintf("sp-%x", r.Uint32())
			ids = append(ids, id)
			title := text()
			if title == "" {
				title = "untitled"
			}
			add(workqueue.TypeCreated, id, workqueue.CreatedData{Title: title, Description: text(), Design: text(), Acceptance: text(), Notes: text(),
				ExternalRef: text(), Priority: r.IntN(5), IssueType: "task", Labels: []string{"a", "b"}[:r.IntN(3)%2]})
		case op < 5:
			add(workqueue.TypeUpdated, some(), workqueue.UpdatedData{Title: maybe(), Description: maybe(), Design: maybe(), Acceptance: maybe(), Notes: maybe(), ExternalRef: maybe()})
		case op < 8:
			add(workqueue.TypeCommented, some(), workqueue.CommentData{Text: text() + "!"})
		case op < 11:
			id := some()
			switch r.IntN(4) {
			case 0:
				add(workqueue.TypeClosed, id, map[string]string{"reason": text()})
			case 1:
				add(workqueue.TypeReopened, id, struct{}{})
			case 2: // an assignee set, then cleared
				add(workqueue.TypeClaimed, id, workqueue.ClaimedData{Attempt: 1, Worker: fmt.Sprintf("agent-%d", r.IntN(3)), LeaseUntil: at.Add(time.Hour)})
			default:
				add(workqueue.TypeReleased, id, struct{}{})
			}
		default: // an import: a task anew, or over one that exists
			id := some()
			if r.IntN(3) == 0 {
				id = fmt.Sprintf("sp-%x", r.Uint32())
				ids = append(ids, id)
			}
			owner := text()
			d := workqueue.ImportedData{Title: "imported " + text(), Description: text(), Notes: text(), ExternalRef: text(), Status: workqueue.StatusOpen, IssueType: "bug",
				Assignee: text(), Owner: &owner, CreatedBy: text(), CreatedAt: at, UpdatedAt: at, CloseReason: text()}
			if r.IntN(2) == 0 {
				d.Parent = &workqueue.ImportedDep{ID: ids[0], At: at.Add(-time.Hour), By: text()}
			}
			for k := range r.IntN(3) {
				d.Comments = append(d.Comments, workqueue.ImportedNote{ID: int64(1000 + k), Author: "bd", Text: text(), At: at})
			}
			add(workqueue.TypeImported, id, d)
		}
	}
	return events
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A spilled time comes back as the event had it: a log line may carry an
// offset, or a year past what a nanosecond count holds, and the fold in
// memory writes tasks.json from the time itself.
func TestSpilledTimesAsTheEventsHadThem(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.Date(2026, 3, 1, 11, 0, 0, 0, time.FixedZone("", 2*3600)),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		var events []*eventlog.Event
		for _, d := range []eventlog.Draft{
			{Type: workqueue.TypeCreated, Subject: "sp-1", Data: workqueue.CreatedData{Title: "one", IssueType: "task"}},
			{Type: workqueue.TypeClosed, Subject: "sp-1", Data: map[string]string{"reason": "done"}},
		} {
			e, err := d.Event("ada@example.com", at)
			if err != nil {
				t.Fatal(err)
			}
			e.At = at // as a line with this "at" decodes
			events = append(events, e)
		}
		want := foldAndWrite(t, events, "")
		got := foldAndWrite(t, events, t.TempDir())
		if !bytes.Equal(got[1], want[1]) || !bytes.Equal(got[0], want[0]) {
			t.Errorf("%v: the spilled fold writes\n%s\nwant\n%s", at, got[1], want[1])
		}
	}
}

// A task id created twice (a forged event, or two writers' hashes
// colliding): the first creation stands, in a fold that spills and one
// that does not, and verify hears of the second.
func TestDuplicateCreateIsReported(t *testing.T) {
	t.Parallel()
	first := &eventlog.Event{ID: "e1", Writer: "w1", Seq: 1, At: start, Type: workqueue.TypeCreated, Subject: "sp-dup",
		Data: []byte(`{"title":"the first"}`)}
	second := &eventlog.Event{ID: "e2", Writer: "w2", Seq: 1, At: start, Type: workqueue.TypeCreated, Subject: "sp-dup",
		Data: []byte(`{"title":"the second"}`)}
	for _, spill := range []bool{false, true} {
		p := workqueue.NewTasksProjection(workqueue.NewState())
		if spill {
			if err := p.Spill(t.TempDir()); err != nil {
				t.Fatal(err)
			}
		}
		p.Apply(first)
		p.Apply(second)
		inv := p.Invariants()
		if len(inv) != 1 || !strings.Contains(inv[0], "task sp-dup created again by event e2 (writer w2, seq 1)") {
			t.Fatalf("spill %v: invariants %q", spill, inv)
		}
		if !spill {
			if got := p.State().Task("sp-dup").Title; got != "the first" {
				t.Fatalf("title %q, want the first's", got)
			}
		}
	}
}
