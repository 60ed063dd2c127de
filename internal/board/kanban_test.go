package board_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/board"
	"github.com/spoolhq/spool/internal/workqueue"
	wqservice "github.com/spoolhq/spool/internal/workqueue/service"
)

// kseed is a task in every column of the Tasks view, made through the
// services (the real fold decides where each stands).
type kseed struct {
	readyA, readyB, readyC, once string // ready; once failed one attempt (no backoff after the first)
	waiting, deferred            string // waiting: an open blocker, deferred
	working                      string // in progress: a live claim by w1
	backoff                      string // failed twice: in backoff
	blocked, abandoned           string // blocked by hand; abandoned after three attempts
	closed1, closed2             string // done, closed2 last

	workingAt, backoffFailedAt time.Time
}

func (f *fixture) kanbanSeed() kseed {
	f.t.Helper()
	var k kseed
	add := func(title string, prio int, labels ...string) string {
		return f.add(workqueue.NewTask{Title: title, Priority: prio, Labels: labels})
	}
	k.readyA = add("ready a", 1)
	// backoff.max_failures is 3: the third failed attempt abandons.
	k.abandoned = add("abandoned", 2, "ab")
	for i := range 3 {
		f.fail(f.claim("ab", "w-ab"), fmt.Sprintf("failure %d", i+1))
		f.advance(time.Hour) // past any backoff
	}
	k.readyB = add("ready b", 0)
	k.closed1 = add("closed 1", 2)
	f.closeTask(k.closed1)
	k.closed2 = add("closed 2", 2)
	f.closeTask(k.closed2)
	k.blocked = add("blocked", 3)
	f.block(k.blocked, "by hand")
	k.waiting = add("waiting", 0)
	f.dep(k.waiting, k.readyA)
	k.deferred = add("deferred", 1)
	deferred := workqueue.StatusDeferred
	if _, _, err := f.wq(alice).Update(context.Background(), k.deferred, workqueue.Update{Status: &deferred}); err != nil {
		f.t.Fatal(err)
	}
	k.once = add("failed once", 2, "once")
	f.fail(f.claim("once", "w-once"), "flake")
	k.readyC = add("ready c", 1)
	k.backoff = add("backoff", 1, "bo")
	f.fail(f.claim("bo", "w-bo"), "first")
	f.fail(f.claim("bo", "w-bo"), "second")
	k.backoffFailedAt = f.clock()
	k.working = add("working", 2, "w-k") // a hyphen no id holds there, for the text filter
	f.claim("w-k", "w1")
	k.workingAt = f.clock()
	return k
}

// state is the work queue as the board's Tasks view reads it.
func (f *fixture) state() (*workqueue.State, workqueue.Policy) {
	f.t.Helper()
	q := wqservice.Open(f.readEnv())
	st, err := q.Read(context.Background(), wqservice.Both)
	if err != nil {
		f.t.Fatal(err)
	}
	return st, q.Policy
}

func cardIDs(c board.Column) []string {
	var ids []string
	for _, card := range c.Cards {
		ids = append(ids, card.ID)
	}
	return ids
}

func columns(cols []board.Column) map[string]board.Column {
	m := map[string]board.Column{}
	for _, c := range cols {
		m[c.Key] = c
	}
	return m
}

func card(t *testing.T, c board.Column, id string) board.Card {
	t.Helper()
	for _, card := range c.Cards {
		if card.ID == id {
			return card
		}
	}
	t.Fatalf("%s is not in column %s (%v)", id, c.Key, cardIDs(c))
	return board.Card{}
}

func TestKanban(t *testing.T) {
	f := newFixture(t)
	k := f.kanbanSeed()
	st, p := f.state()
	now := f.clock()

	cols := board.Kanban(st, p, board.TaskFilter{}, now, 0)
	var keys []string
	for _, c := range cols {
		keys = append(keys, c.Key)
	}
	if !slices.Equal(keys, []string{board.ColWaiting, board.ColReady, board.ColInProgress, board.ColBackoff, board.ColBlocked, board.ColDone}) {
		t.Fatalf("columns %v", keys)
	}
	// Ready keeps next's order: st.Ready's (the tracker's: open, nothing
	// blocking), less what the queue's history puts elsewhere.
	var readyOrder []string
	for _, task := range st.Ready(p, workqueue.ReadyFilter{}, now, 0) {
		if task.ID != k.backoff && task.ID != k.abandoned {
			readyOrder = append(readyOrder, task.ID)
		}
	}
	if !slices.Equal(readyOrder, []string{k.readyB, k.readyA, k.readyC, k.once}) {
		t.Fatalf("st.Ready: %v (the fixture is not what the test thinks)", readyOrder)
	}
	m := columns(cols)
	for _, tc := range []struct {
		col  string
		want []string
	}{
		{board.ColWaiting, []string{k.waiting, k.deferred}}, // by priority
		{board.ColReady, readyOrder},
		{board.ColInProgress, []string{k.working}},
		{board.ColBackoff, []string{k.backoff}},
		{board.ColBlocked, []string{k.abandoned, k.blocked}}, // by priority
		{board.ColDone, []string{k.closed2, k.closed1}},      // the latest closed first
	} {
		if got := cardIDs(m[tc.col]); !slices.Equal(got, tc.want) {
			t.Errorf("column %s: %v, want %v", tc.col, got, tc.want)
		}
		if m[tc.col].More != 0 {
			t.Errorf("column %s: More %d without a limit", tc.col, m[tc.col].More)
		}
	}

	// What the cards say.
	if c := card(t, m[board.ColBlocked], k.abandoned); !c.Abandoned || c.Failures != 3 || c.LastError != "failure 3" {
		t.Errorf("abandoned card %+v", c)
	}
	if c := card(t, m[board.ColBlocked], k.blocked); c.Abandoned {
		t.Errorf("blocked card %+v", c)
	}
	if c := card(t, m[board.ColInProgress], k.working); c.Worker != "w1" || !c.LeaseUntil.Equal(k.workingAt.Add(p.Lease)) {
		t.Errorf("working card %+v, want w1 until %s", c, k.workingAt.Add(p.Lease))
	}
	if c := card(t, m[board.ColBackoff], k.backoff); !c.NextEligible.Equal(k.backoffFailedAt.Add(p.Backoff(2))) || c.Attempts != 2 || c.LastError != "second" {
		t.Errorf("backoff card %+v, want eligible at %s", c, k.backoffFailedAt.Add(p.Backoff(2)))
	}
	if c := card(t, m[board.ColReady], k.once); c.Attempts != 1 || c.Failures != 1 || c.LastError != "flake" || !c.NextEligible.IsZero() {
		t.Errorf("failed-once card %+v", c)
	}
	if c := card(t, m[board.ColDone], k.closed2); c.ClosedAt.IsZero() || !c.ClosedAt.After(card(t, m[board.ColDone], k.closed1).ClosedAt) {
		t.Errorf("done card %+v", c)
	}
	if c := card(t, m[board.ColReady], k.readyB); c.Title != "ready b" || c.Priority != 0 || c.Worker != "" || c.Failures != 0 {
		t.Errorf("ready card %+v", c)
	}
	// A waiting card names what it waits for; a deferred one waits for none.
	if c := card(t, m[board.ColWaiting], k.waiting); !slices.Equal(c.WaitsFor, []string{k.readyA}) || c.WaitsParent != "" {
		t.Errorf("waiting card %+v, want it to wait for %s", c, k.readyA)
	}
	if c := card(t, m[board.ColWaiting], k.deferred); len(c.WaitsFor) != 0 || c.WaitsParent != "" {
		t.Errorf("deferred card %+v waits for something", c)
	}

	// Two hours on: the claim's lease ran out and the backoff ended; both
	// are ready, in st.Ready's order at that time.
	later := now.Add(2 * time.Hour)
	m = columns(board.Kanban(st, p, board.TaskFilter{}, later, 0))
	var laterOrder []string
	for _, task := range st.Ready(p, workqueue.ReadyFilter{}, later, 0) {
		if task.ID != k.abandoned {
			laterOrder = append(laterOrder, task.ID)
		}
	}
	if got := cardIDs(m[board.ColReady]); !slices.Equal(got, laterOrder) || !slices.Contains(got, k.working) || !slices.Contains(got, k.backoff) {
		t.Errorf("ready two hours on: %v, want %v with %s and %s", got, laterOrder, k.working, k.backoff)
	}
	if len(m[board.ColInProgress].Cards)+len(m[board.ColBackoff].Cards) != 0 {
		t.Errorf("two hours on: in progress %v, backoff %v", cardIDs(m[board.ColInProgress]), cardIDs(m[board.ColBackoff]))
	}
	if c := card(t, m[board.ColReady], k.working); c.Worker != "" || c.LastError != workqueue.LeaseExpiredError {
		t.Errorf("expired claim's card %+v", c)
	}

	// The limit: each column shows at most limit cards, More counts the rest.
	for _, tc := range []struct {
		limit int
		col   string
		want  []string
		more  int
	}{
		{2, board.ColReady, readyOrder[:2], 2},
		{2, board.ColDone, []string{k.closed2, k.closed1}, 0},
		{1, board.ColDone, []string{k.closed2}, 1},
		{1, board.ColBlocked, []string{k.abandoned}, 1},
		{1, board.ColInProgress, []string{k.working}, 0},
		{4, board.ColReady, readyOrder, 0},
	} {
		c := columns(board.Kanban(st, p, board.TaskFilter{}, now, tc.limit))[tc.col]
		if got := cardIDs(c); !slices.Equal(got, tc.want) || c.More != tc.more {
			t.Errorf("limit %d, column %s: %v +%d, want %v +%d", tc.limit, tc.col, got, c.More, tc.want, tc.more)
		}
	}

	// Filters keep a task in its column and drop the others.
	zero, one := 0, 1
	for _, tc := range []struct {
		f    board.TaskFilter
		want map[string][]string
	}{
		{board.TaskFilter{Label: "ab"}, map[string][]string{board.ColBlocked: {k.abandoned}}},
		{board.TaskFilter{Label: "bo"}, map[string][]string{board.ColBackoff: {k.backoff}}},
		{board.TaskFilter{Priority: &zero}, map[string][]string{board.ColReady: {k.readyB}, board.ColWaiting: {k.waiting}}},
		{board.TaskFilter{Priority: &one}, map[string][]string{board.ColReady: {k.readyA, k.readyC}, board.ColWaiting: {k.deferred}, board.ColBackoff: {k.backoff}}},
		{board.TaskFilter{Label: "w-k", Priority: &one}, map[string][]string{}},
		{board.TaskFilter{Label: "none"}, map[string][]string{}},
		// Text: an id, a title or a label, ignoring case.
		{board.TaskFilter{Text: "Ready B"}, map[string][]string{board.ColReady: {k.readyB}}},
		{board.TaskFilter{Text: "W-K"}, map[string][]string{board.ColInProgress: {k.working}}},
		{board.TaskFilter{Text: k.backoff}, map[string][]string{board.ColBackoff: {k.backoff}}},
		{board.TaskFilter{Text: "ready", Priority: &zero}, map[string][]string{board.ColReady: {k.readyB}}},
	} {
		for _, c := range board.Kanban(st, p, tc.f, now, 0) {
			if got := cardIDs(c); !slices.Equal(got, tc.want[c.Key]) {
				t.Errorf("filter %+v, column %s: %v, want %v", tc.f, c.Key, got, tc.want[c.Key])
			}
		}
	}
}

// An empty queue still has every column, each empty.
func TestKanbanEmpty(t *testing.T) {
	f := newFixture(t)
	st, p := f.state()
	cols := board.Kanban(st, p, board.TaskFilter{}, f.clock(), 10)
	if len(cols) != 6 {
		t.Fatalf("columns %+v", cols)
	}
	for _, c := range cols {
		if len(c.Cards) != 0 || c.More != 0 || c.Name == "" {
			t.Fatalf("column %+v", c)
		}
	}
}

// A task imported from bd as blocked has the blocked label but no queue
// history: it is in the Blocked column, where spool unblock takes it.
func TestKanbanImportedBlocked(t *testing.T) {
	f := newFixture(t)
	now := f.clock()
	if _, err := f.wq(alice).Import(context.Background(), []workqueue.TaskJSON{
		{ID: "sp-imp1", Title: "imported blocked", Status: workqueue.StatusBlocked, Priority: 2, IssueType: "task", CreatedAt: now, UpdatedAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	st, p := f.state()
	cols := columns(board.Kanban(st, p, board.TaskFilter{}, f.clock(), 0))
	card(t, cols[board.ColBlocked], "sp-imp1")
	if ids := cardIDs(cols[board.ColWaiting]); len(ids) != 0 {
		t.Errorf("waiting: %v", ids)
	}
}

// Ready means one thing on every page and answer: what next could claim
// now. The orchestrator's queue depth, stats' currently_ready and the
// Tasks view's Ready column agree, with tasks in backoff, Blocked and
// abandoned in the queue.
func TestOneReady(t *testing.T) {
	f := newFixture(t)
	f.kanbanSeed()
	st, p := f.state()
	cols := columns(board.Kanban(st, p, board.TaskFilter{}, f.clock(), 0))
	var status struct {
		QueueDepth int `json:"queueDepth"`
	}
	var stats struct {
		CurrentlyReady int `json:"currently_ready"`
	}
	decode(t, f.get("/api/orchestrator/status"), &status)
	decode(t, f.get("/api/stats"), &stats)
	var list []struct {
		ID string `json:"id"`
	}
	decode(t, f.get("/api/ready?n=0"), &list) // spool ready -n 0 --json
	ready := len(cols[board.ColReady].Cards)
	for i, c := range cols[board.ColReady].Cards {
		if i >= len(list) || list[i].ID != c.ID {
			t.Fatalf("ready lists %v, the Ready column %v: the same tasks in next's order, please", list, cols[board.ColReady].Cards)
		}
	}
	if len(cols[board.ColBackoff].Cards) == 0 || len(cols[board.ColBlocked].Cards) == 0 {
		t.Fatal("set-up: no task in backoff or Blocked")
	}
	if status.QueueDepth != ready || stats.CurrentlyReady != ready || len(list) != ready {
		t.Errorf("queue depth %d, currently_ready %d, ready %d, Ready column %d: one definition, please", status.QueueDepth, stats.CurrentlyReady, len(list), ready)
	}
}
