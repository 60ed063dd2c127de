package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// world is a scheduler with a clock: commands decide against its state and
// their drafts are folded in, as the service does under the log's lock.
type world struct {
	t   testing.TB
	s   *State
	p   Policy
	now time.Time
	n   int
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) // a Monday

func newWorld(t testing.TB) *world {
	p := Policy{Admins: []string{"root"}, Fair: true, HalfLife: 24 * time.Hour, Zone: time.UTC,
		CancelGrace: time.Minute, Lease: 5 * time.Minute, DefaultSegment: 10 * time.Minute, Slots: 4}
	return &world{t: t, s: NewState(), p: p, now: t0}
}

func (w *world) apply(actor string, drafts []eventlog.Draft, err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, d := range drafts {
		data, err := json.Marshal(d.Data)
		if err != nil {
			w.t.Fatal(err)
		}
		w.n++
		w.s.Apply(&eventlog.Event{Type: d.Type, Subject: d.Subject, Actor: actor, At: w.now, Data: data, Seq: uint64(w.n)})
	}
}

func (w *world) submit(actor string, n Submit) string {
	w.t.Helper()
	if n.Argv == nil {
		n.Argv = []string{"train.sh"}
	}
	d, out, err := SubmitJob(w.s, w.p, n, actor, "w1", w.now)
	w.apply(actor, d, err)
	w.now = w.now.Add(time.Second)
	return out.ID
}

// claim dispatches for worker and returns the job id ("" when none).
func (w *world) claim(worker string, slots int) string {
	w.t.Helper()
	d, c, err := ClaimJob(w.s, w.p, worker, slots, w.now)
	w.apply(worker, d, err)
	if c == nil {
		return ""
	}
	return c.Job.ID
}

func (w *world) segmentDone(id string, code int) int {
	w.t.Helper()
	j := w.s.Jobs[id]
	seg := j.NextSegment()
	d, next, err := SegmentDone(w.s, id, j.Worker, SegmentEnd{Segment: seg, ExitCode: code, OutputDir: fmt.Sprintf("out/%s/%d", id, seg)})
	w.apply(j.Worker, d, err)
	return next
}

func (w *world) status(id string) Status { return w.s.Jobs[id].Status }

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var f *fault.Error
	if !errors.As(err, &f) || f.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func TestTransitionTable(t *testing.T) {
	t.Parallel()
	want := map[Status]string{
		Scheduled:  "queued cancelled",
		Queued:     "dispatched paused cancelled",
		Dispatched: "running queued paused cancelled failed",
		Running:    "complete failed cancelled paused queued",
		Paused:     "queued cancelled",
		Failed:     "queued", // job retry
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			allowed := strings.Contains(" "+want[from]+" ", " "+string(to)+" ")
			if got := CanTransition(from, to); got != allowed {
				t.Errorf("%s → %s: %v, want %v", from, to, got, allowed)
			}
		}
	}
}

// The fold enforces the table too: an event for a move it forbids changes nothing.
func TestFoldRefusesForbiddenMoves(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.submit("ada", Submit{})
	w.apply("ada", []eventlog.Draft{
		{Type: TypeFinished, Subject: id, Data: FinishedData{Status: Complete}},
		{Type: TypeSegmentStarted, Subject: id, Data: SegmentData{Segment: 0}},
		{Type: TypeResumed, Subject: id, Data: struct{}{}},
	}, nil)
	if j := w.s.Jobs[id]; j.Status != Queued || len(j.Trail) != 1 || len(j.Segs) != 0 {
		t.Fatalf("forbidden moves were folded: %+v", j)
	}
	w.apply("ada", []eventlog.Draft{{Type: TypeCancelled, Subject: id, Data: struct{}{}}}, nil)
	_, err := CancelJob(w.s, w.p, id, "ada", w.now)
	wantCode(t, err, "invalid_state_transition")
	if !strings.Contains(err.Error(), "cancelled; it cannot become cancelled") {
		t.Fatalf("the error names neither state: %v", err)
	}
}

func TestDispatchOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.Fair = false
	bg := w.submit("ada", Submit{Name: "bg", Tier: Background})
	n1 := w.submit("ada", Submit{Name: "n1"})
	n2 := w.submit("bob", Submit{Name: "n2"})
	u := w.submit("root", Submit{Name: "u", Tier: Urgent})
	var got []string
	for id := w.claim("w", 1); id != ""; id = w.claim("w", 1) {
		got = append(got, w.s.Jobs[id].Name)
		w.segmentDone(id, 0)
	}
	if want := "u n1 n2 bg"; strings.Join(got, " ") != want {
		t.Fatalf("dispatched %v, want %s", got, want)
	}
	_ = []string{bg, n1, n2, u}
}

func TestMove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		move func(ids map[string]string) Move
		job  string
		want string // queue order after
	}{
		{"before", func(ids map[string]string) Move { return Move{Before: ids["n1"]} }, "n3", "u n3 n1 n2 bg"},
		{"after", func(ids map[string]string) Move { return Move{After: ids["n2"]} }, "n1", "u n2 n1 n3 bg"},
		{"top takes urgent", func(ids map[string]string) Move { return Move{Top: true} }, "bg", "bg u n1 n2 n3"},
		{"bottom takes background", func(ids map[string]string) Move { return Move{Bottom: true} }, "u", "n1 n2 n3 bg u"},
		{"next to another tier takes it", func(ids map[string]string) Move { return Move{After: ids["u"]} }, "bg", "u bg n1 n2 n3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			ids := map[string]string{}
			for _, n := range []struct {
				name string
				tier Tier
			}{{"bg", Background}, {"n1", Normal}, {"n2", Normal}, {"u", Urgent}, {"n3", Normal}} {
				ids[n.name] = w.submit("root", Submit{Name: n.name, Tier: n.tier})
			}
			d, err := MoveJob(w.s, w.p, ids[tt.job], tt.move(ids), "root", w.now)
			w.apply("root", d, err)
			var got []string
			for _, j := range w.s.Queue() {
				got = append(got, j.Name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("queue %v, want %s", got, tt.want)
			}
			// The next decision honours it: the head of the queue dispatches.
			if id := w.claim("w", 4); w.s.Jobs[id].Name != strings.Fields(tt.want)[0] {
				t.Fatalf("dispatched %s first", w.s.Jobs[id].Name)
			}
		})
	}
}

func TestMoveRules(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.submit("ada", Submit{})
	b := w.submit("ada", Submit{})
	_, err := MoveJob(w.s, w.p, a, Move{Top: true}, "ada", w.now)
	wantCode(t, err, "unauthorized")
	_, err = MoveJob(w.s, w.p, a, Move{Top: true, Before: b}, "root", w.now)
	wantCode(t, err, "invalid_move")
	_, err = MoveJob(w.s, w.p, a, Move{Before: a}, "root", w.now)
	wantCode(t, err, "invalid_move")
	_, err = MoveJob(w.s, w.p, a, Move{Before: "job-nope"}, "root", w.now)
	wantCode(t, err, "not_found")
}

// Fair share: with one slot, ada's 20 jobs submitted first do not keep
// bob waiting; while both wait, bob gets at least half the slot time.
func TestFairShareTwoUsersOneSlot(t *testing.T) {
	t.Parallel()
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			w := newWorld(t)
			w.p.Fair = fair
			for i := 0; i < 20; i++ {
				w.submit("ada", Submit{Name: fmt.Sprint("a", i)})
			}
			for i := 0; i < 20; i++ {
				w.submit("bob", Submit{Name: fmt.Sprint("b", i)})
			}
			used := map[string]time.Duration{}
			for round := 0; round < 20; round++ { // both users still wait throughout
				id := w.claim("w", 1)
				w.now = w.now.Add(10 * time.Minute)
				w.segmentDone(id, 0)
				used[w.s.Jobs[id].Owner] += 10 * time.Minute
			}
			share := float64(used["bob"]) / float64(used["ada"]+used["bob"])
			if fair && share < 0.5 {
				t.Fatalf("bob got %.0f%% of the slot time", share*100)
			}
			if !fair && share != 0 {
				t.Fatalf("fifo: bob got %.0f%% before ada's jobs ran", share*100)
			}
		})
	}
}

// A job an admin moved is dispatched in its place, fair share or not.
func TestFairShareHonoursMoves(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.submit("ada", Submit{})
	w.now = w.now.Add(time.Minute)
	w.segmentDone(w.claim("w", 1), 0) // ada has used the slot
	b := w.submit("bob", Submit{})
	a2 := w.submit("ada", Submit{})
	if id := w.claim("w", 1); id != b {
		t.Fatalf("fair share dispatched %s, want bob's %s", id, b)
	}
	w.segmentDone(b, 0)
	w.submit("bob", Submit{})
	d, err := MoveJob(w.s, w.p, a2, Move{Top: true}, "root", w.now)
	w.apply("root", d, err)
	if id := w.claim("w", 1); id != a2 {
		t.Fatalf("dispatched %s, want the moved %s", id, a2)
	}
	_ = a
}

// Strict: the head of the queue waits for slots; a smaller job behind it
// does not overtake it.
func TestNoOvertaking(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.Fair = false
	first := w.submit("ada", Submit{Slots: 1})
	w.claim("w", 2)
	big := w.submit("ada", Submit{Slots: 2})
	w.submit("ada", Submit{Slots: 1})
	if id := w.claim("w", 2); id != "" {
		t.Fatalf("dispatched %s while the 2-slot job waits", id)
	}
	w.segmentDone(first, 0)
	if id := w.claim("w", 2); id != big {
		t.Fatalf("dispatched %s, want the 2-slot job", id)
	}
}

func TestOffPeak(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.OffPeak, _ = ParseWindow("22:00-08:00")
	w.p.Zone, _ = time.LoadLocation("Europe/Paris")
	w.now = time.Date(2026, 3, 2, 12, 0, 0, 0, w.p.Zone) // noon: outside
	op := w.submit("ada", Submit{OffPeak: true})
	if id := w.claim("w", 1); id != "" {
		t.Fatalf("dispatched %s outside the window", id)
	}
	w.now = time.Date(2026, 3, 2, 23, 0, 0, 0, w.p.Zone)
	if id := w.claim("w", 1); id != op {
		t.Fatalf("dispatched %q inside the window, want %s", id, op)
	}
	// Urgent work arrives with no slot free: the off-peak job is asked to
	// yield, and does at its segment boundary, keeping its segment.
	u := w.submit("root", Submit{Tier: Urgent})
	w.claim("w", 1)
	if !w.s.Jobs[op].YieldRequested {
		t.Fatal("the off-peak job was not asked to yield")
	}
	d, _, err := ClaimJob(w.s, w.p, "w", 1, w.now)
	if err != nil || len(d) != 0 {
		t.Fatalf("a second claim asked again: %v %v", d, err)
	}
	w.s.Jobs[op].Segments = 2
	if next := w.segmentDone(op, 0); next != -1 || w.status(op) != Queued || w.s.Jobs[op].DoneSegments() != 1 {
		t.Fatalf("after yielding: next %d, %s, %d done", next, w.status(op), w.s.Jobs[op].DoneSegments())
	}
	if id := w.claim("w", 1); id != u {
		t.Fatalf("dispatched %s, want the urgent job", id)
	}
	// While urgent work is queued, off-peak jobs wait even inside the window.
	w.submit("root", Submit{Tier: Urgent})
	if id := w.claim("w2", 1); w.s.Jobs[id].OffPeak {
		t.Fatal("an off-peak job dispatched while urgent work was queued")
	}
}

func TestStartAfter(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	at := w.now.Add(time.Hour)
	id := w.submit("ada", Submit{StartAfter: at})
	if w.status(id) != Scheduled {
		t.Fatalf("submitted as %s", w.status(id))
	}
	if got := w.claim("w", 1); got != "" {
		t.Fatalf("dispatched %s before its time", got)
	}
	later := at.Add(-time.Second)
	d, err := EditJob(w.s, w.p, id, Edit{StartAfter: &later}, "ada", w.now)
	w.apply("ada", d, err)
	w.now = at
	if got := w.claim("w", 1); got != id {
		t.Fatalf("at its time dispatched %q", got)
	}
	tr := w.s.Jobs[id].Trail
	if tr[1].From != Scheduled || tr[1].To != Queued || tr[2].To != Dispatched {
		t.Fatalf("trail %+v", tr)
	}
	// Editing start_after later takes a queued job out of the queue again.
	q := w.submit("ada", Submit{})
	next := w.now.Add(time.Hour)
	d, err = EditJob(w.s, w.p, q, Edit{StartAfter: &next}, "ada", w.now)
	w.apply("ada", d, err)
	if w.status(q) != Scheduled {
		t.Fatalf("after edit: %s", w.status(q))
	}
}

func TestSegmentsAndCancel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.submit("ada", Submit{Segments: 3})
	w.claim("w", 1)
	if w.status(id) != Running {
		t.Fatalf("claimed job is %s", w.status(id))
	}
	w.now = w.now.Add(time.Minute)
	if next := w.segmentDone(id, 0); next != 1 {
		t.Fatalf("next segment %d", next)
	}
	_, err := CancelJob(w.s, w.p, id, "bob", w.now)
	wantCode(t, err, "unauthorized")
	d, err := CancelJob(w.s, w.p, id, "ada", w.now)
	w.apply("ada", d, err)
	if j := w.s.Jobs[id]; j.Status != Running || !j.CancelRequested || !j.GraceUntil.Equal(w.now.Add(time.Minute)) {
		t.Fatalf("cancel of a running job: %+v", j)
	}
	// The worker stops the segment after the grace.
	d2, err := StoppedForCancel(w.s, id, "w")
	w.apply("w", []eventlog.Draft{d2}, err)
	j := w.s.Jobs[id]
	if j.Status != Cancelled || j.DoneSegments() != 1 || j.Segs[0].OutputDir == "" || j.Segs[1].Done {
		t.Fatalf("cancelled job: %+v", j)
	}
}

func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.submit("ada", Submit{Segments: 2})
	w.claim("w1", 1)
	w.segmentDone(id, 0)
	w.now = w.now.Add(w.p.Lease + time.Second)
	if got := w.claim("w2", 1); got != id {
		t.Fatalf("after the lease ran out w2 got %q", got)
	}
	j := w.s.Jobs[id]
	if j.Worker != "w2" || j.NextSegment() != 1 || !j.Segs[1].Started.Equal(w.now) || j.Attempts != 2 {
		t.Fatalf("resumed job: %+v", j)
	}
	if tr := j.Trail[len(j.Trail)-3]; tr.To != Queued || tr.Reason != ReasonLeaseExpired {
		t.Fatalf("trail %+v", j.Trail)
	}
	// A worker that lost its lease cannot report for the job.
	_, _, err := SegmentDone(w.s, id, "w1", SegmentEnd{Segment: 1})
	wantCode(t, err, "unauthorized")
}

// A worker process the service found dead (gone) loses its job at the next
// tick, lease or not; a live one, an unrecorded one (spool job claim) and
// one merely of the same name keep it until the lease runs out.
func TestDeadWorkerRequeuedAtOnce(t *testing.T) {
	t.Parallel()
	a := ProcRecord{PID: 10, PGID: 10, Start: 5, Boot: "b"}
	aAgain := a
	aAgain.Start = 6 // another process with a's pid
	for _, c := range []struct {
		name   string
		holder *ProcRecord
		gone   Gone
		later  time.Duration
		cancel bool
		want   Status
		reason string
	}{
		{name: "live worker", holder: &a, gone: nil, want: Running},
		{name: "another process dead", holder: &a, gone: Gone{aAgain: true}, want: Running},
		{name: "no record", holder: nil, gone: Gone{a: true}, want: Running},
		{name: "its process dead", holder: &a, gone: Gone{a: true}, want: Queued, reason: ReasonWorkerGone},
		{name: "its process dead, cancel asked", holder: &a, gone: Gone{a: true}, cancel: true, want: Cancelled},
		{name: "lease ran out", holder: &a, later: time.Hour, want: Queued, reason: ReasonLeaseExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.submit("ada", Submit{Segments: 2})
			d, cl, err := ClaimJobHeld(w.s, w.p, "w1", c.holder, nil, 1, w.now)
			w.apply("w1", d, err)
			if cl == nil || (w.s.Jobs[id].Holder == nil) != (c.holder == nil) {
				t.Fatalf("claim %v, holder %v", cl, w.s.Jobs[id].Holder)
			}
			if c.cancel {
				d, err := CancelJob(w.s, w.p, id, "ada", w.now)
				w.apply("ada", d, err)
			}
			w.now = w.now.Add(time.Minute + c.later)
			w.apply("w2", Tick(w.s, w.p, w.now, c.gone), nil)
			j := w.s.Jobs[id]
			if j.Status != c.want {
				t.Fatalf("job %s, want %s", j.Status, c.want)
			}
			if c.want == Running {
				return
			}
			if j.Holder != nil || j.Worker != "" {
				t.Fatalf("worker %q, holder %v kept", j.Worker, j.Holder)
			}
			if tr := j.Trail[len(j.Trail)-1]; c.reason != "" && tr.Reason != c.reason {
				t.Fatalf("trail %+v, want reason %s", j.Trail, c.reason)
			}
		})
	}
}

func TestPauseResumeKeepsPlace(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.Fair = false
	a := w.submit("ada", Submit{})
	b := w.submit("ada", Submit{})
	d, err := PauseJob(w.s, w.p, a, "ada")
	w.apply("ada", d, err)
	if got := w.claim("w", 1); got != b {
		t.Fatalf("dispatched %s while %s is paused", got, a)
	}
	c := w.submit("ada", Submit{})
	d, err = ResumeJob(w.s, w.p, a, "ada")
	w.apply("ada", d, err)
	if q := w.s.Queue(); q[0].ID != a || q[1].ID != c {
		t.Fatalf("resumed job lost its place: %s %s", q[0].ID, q[1].ID)
	}
	// A running job pauses at its segment boundary.
	w.segmentDone(b, 0)
	id := w.claim("w", 1)
	w.s.Jobs[id].Segments = 2
	d, err = PauseJob(w.s, w.p, id, "ada")
	w.apply("ada", d, err)
	if w.segmentDone(id, 0) != -1 || w.status(id) != Paused {
		t.Fatalf("after its segment: %s", w.status(id))
	}
	_, err = PauseJob(w.s, w.p, id, "ada")
	wantCode(t, err, "invalid_state_transition")
}

func TestFailedSegmentFailsJob(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.submit("ada", Submit{Segments: 2})
	w.claim("w", 1)
	w.segmentDone(id, 3)
	if j := w.s.Jobs[id]; j.Status != Failed || !strings.Contains(j.Error, "code 3") {
		t.Fatalf("%s %q", j.Status, j.Error)
	}
}

func TestSubmitRefusesBadInput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tests := []struct {
		actor string
		n     Submit
		code  string
	}{
		{"ada", Submit{Tier: "high", Argv: []string{"x"}}, "invalid_tier"},
		{"ada", Submit{Slots: -1, Argv: []string{"x"}}, "invalid_gpus"},
		{"ada", Submit{Slots: 5, Argv: []string{"x"}}, "invalid_gpus"},
		{"ada", Submit{Segments: -2, Argv: []string{"x"}}, "invalid_segments"},
		{"ada", Submit{Argv: []string{}}, "empty_argv"},
		{"ada", Submit{Every: "every tuesday", Argv: []string{"x"}}, "invalid_schedule"},
		{"ada", Submit{Every: "61 * * * *", Argv: []string{"x"}}, "invalid_schedule"},
		{"ada", Submit{Tier: Urgent, Argv: []string{"x"}}, "unauthorized"},
	}
	for _, tt := range tests {
		d, _, err := SubmitJob(w.s, w.p, tt.n, tt.actor, "w1", w.now)
		if d != nil {
			t.Errorf("%+v: drafts %v", tt.n, d)
		}
		wantCode(t, err, tt.code)
	}
}

// Quota windows are local: a day from midnight and a week from Monday
// 00:00 in the scheduler's zone, not UTC's.
func TestQuotaWindows(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	w := newWorld(t)
	w.p.Zone = ny
	d, err := SetQuota(w.s, w.p, Quota{Scope: "user", Name: "ada", Daily: 90 * time.Minute, Weekly: 3 * time.Hour}, "root")
	w.apply("root", []eventlog.Draft{d}, err)
	run := func(start time.Time, length time.Duration) {
		w.now = start
		id := w.submit("ada", Submit{})
		if got := w.claim("w", 4); got != id {
			t.Fatalf("at %s: dispatched %q, want %s (%s)", start, got, id, w.s.Jobs[id].Status)
		}
		w.now = w.now.Add(length)
		w.segmentDone(id, 0)
	}
	// Sunday 22:00 to 23:40 New York time (Monday 02:00–03:40 UTC).
	run(time.Date(2026, 3, 8, 22, 0, 0, 0, ny), 100*time.Minute)
	w.now = time.Date(2026, 3, 8, 23, 59, 30, 0, ny)
	held := w.submit("ada", Submit{})
	if got := w.claim("w", 4); got != "" {
		t.Fatalf("over the daily quota, %s dispatched", got)
	}
	// Past local midnight (a new day and a new week in New York) it runs,
	// though in UTC the day began hours earlier.
	w.now = time.Date(2026, 3, 9, 0, 0, 1, 0, ny)
	if got := w.claim("w", 4); got != held {
		t.Fatalf("after midnight dispatched %q", got)
	}
	w.now = w.now.Add(time.Hour)
	w.segmentDone(held, 0)
	// Monday 01:00: 1 h used today and this week; two more hours go over both.
	run(w.now, 2*time.Hour)
	w.now = w.now.Add(time.Minute)
	q := w.s.quotas(w.p, w.now)
	h, ok := q.hold("ada", "")
	if !ok || h.Window != "daily" && h.Window != "weekly" {
		t.Fatalf("no hold after 3 h: %+v", h)
	}
	if want := time.Date(2026, 3, 10, 0, 0, 0, 0, ny); h.Window == "daily" && !h.ResetAt.Equal(want) {
		t.Fatalf("daily reset at %s, want %s", h.ResetAt, want)
	}
	if WeekStart(w.now, ny) != time.Date(2026, 3, 9, 0, 0, 0, 0, ny) {
		t.Fatalf("week starts %s", WeekStart(w.now, ny))
	}
	// A warning at submit once 80% is used.
	_, out, err := SubmitJob(w.s, w.p, Submit{Argv: []string{"x"}}, "ada", "w1", w.now)
	if err != nil || len(out.Warnings) == 0 {
		t.Fatalf("no warning: %v %v", out.Warnings, err)
	}
}

// A user quota and a project quota that both apply must both have room.
func TestQuotaUserAndProject(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	d, err := SetQuota(w.s, w.p, Quota{Scope: "project", Name: "render", Daily: time.Hour}, "root")
	w.apply("root", []eventlog.Draft{d}, err)
	id := w.submit("ada", Submit{Project: "render"})
	w.claim("w", 1)
	w.now = w.now.Add(time.Hour)
	w.segmentDone(id, 0)
	other := w.submit("bob", Submit{Project: "render"})
	free := w.submit("bob", Submit{})
	if got := w.claim("w", 1); got != free {
		t.Fatalf("dispatched %q, want %s (the project is over its quota, %s waits)", got, free, other)
	}
	_, err = SetQuota(w.s, w.p, Quota{Scope: "user", Name: "ada", Daily: time.Hour}, "ada")
	wantCode(t, err, "unauthorized")
	_, err = SetQuota(w.s, w.p, Quota{Scope: "user", Name: "ada"}, "root")
	wantCode(t, err, "invalid_quota")
}

func TestRecurringOneSubmissionPerOccurrence(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.p.Zone, _ = time.LoadLocation("Asia/Tokyo")
	_, out, err := SubmitJob(w.s, w.p, Submit{Every: "daily", Argv: []string{"nightly.sh"}}, "ada", "w1", w.now)
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := SubmitJob(w.s, w.p, Submit{Every: "daily", Argv: []string{"nightly.sh"}}, "ada", "w1", w.now)
	w.apply("ada", d, nil)
	sc := w.s.Schedules[out.Schedule]
	if want := time.Date(2026, 3, 3, 0, 0, 0, 0, w.p.Zone); !out.NextAt.Equal(want) {
		t.Fatalf("next at %s, want %s", out.NextAt, want)
	}
	if drafts := Tick(w.s, w.p, w.now, nil); len(drafts) != 0 {
		t.Fatalf("ticked before the first occurrence: %v", drafts)
	}
	w.now = out.NextAt.Add(time.Minute)
	first := Tick(w.s, w.p, w.now, nil)
	again := Tick(w.s, w.p, w.now, nil) // another worker, same state
	if len(first) != 1 || first[0].Idem != again[0].Idem || first[0].Subject != again[0].Subject {
		t.Fatalf("ticks %v / %v", first, again)
	}
	w.apply("ada", first, nil)
	w.apply("ada", again, nil) // folded twice: one job
	if len(w.s.Jobs) != 1 || Tick(w.s, w.p, w.now, nil) != nil {
		t.Fatalf("%d jobs; then %v", len(w.s.Jobs), Tick(w.s, w.p, w.now, nil))
	}
	// Its failure is flagged and does not stop the next occurrence.
	id := w.claim("w", 1)
	w.segmentDone(id, 1)
	if !sc.LastFailed {
		t.Fatal("the failed occurrence is not flagged")
	}
	w.now = w.now.Add(24 * time.Hour)
	if d := Tick(w.s, w.p, w.now, nil); len(d) != 1 || d[0].Type != TypeSubmitted {
		t.Fatalf("next day: %v", d)
	}
}

// Occurrences of a schedule finer than a minute are jobs of their own:
// each its own id, none dropped when folded.
func TestRecurringEverySecondsDistinctJobs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	d, out, err := SubmitJob(w.s, w.p, Submit{Every: "@every 20s", Argv: []string{"poll.sh"}}, "ada", "w1", w.now)
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", d, nil)
	ids := map[string]bool{}
	for i := range 6 { // two minutes: three occurrences in each
		w.now = out.NextAt.Add(time.Duration(i) * 20 * time.Second)
		ticked := Tick(w.s, w.p, w.now, nil)
		if len(ticked) != 1 || ids[ticked[0].Subject] {
			t.Fatalf("tick %d at %s: %v (ids so far %v)", i, w.now, ticked, ids)
		}
		ids[ticked[0].Subject] = true
		w.apply("ada", ticked, nil)
	}
	if len(w.s.Jobs) != 6 {
		t.Fatalf("%d jobs from 6 occurrences", len(w.s.Jobs))
	}
}

func TestDueSkipsMissedOccurrences(t *testing.T) {
	t.Parallel()
	sc := &Schedule{ID: "sched-x", Every: "* * * * *", Created: t0}
	now := t0.Add(40*24*time.Hour + 30*time.Second)
	at, ok := sc.Due(time.UTC, now)
	if !ok || !at.Equal(now.Truncate(time.Minute)) {
		t.Fatalf("due %s %v, want the latest minute", at, ok)
	}
}

func TestWindow(t *testing.T) {
	t.Parallel()
	paris, _ := time.LoadLocation("Europe/Paris")
	w, err := ParseWindow("22:00-08:00")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		h, m int
		in   bool
	}{{21, 59, false}, {22, 0, true}, {3, 0, true}, {7, 59, true}, {8, 0, false}, {12, 0, false}} {
		at := time.Date(2026, 7, 1, tt.h, tt.m, 0, 0, paris)
		if got := w.Contains(at, paris); got != tt.in {
			t.Errorf("%02d:%02d: %v", tt.h, tt.m, got)
		}
	}
	if next := w.Next(time.Date(2026, 7, 1, 12, 0, 0, 0, paris), paris); !next.Equal(time.Date(2026, 7, 1, 22, 0, 0, 0, paris)) {
		t.Errorf("next %s", next)
	}
	for _, bad := range []string{"22-08", "25:00-01:00", "10:00-10:00", "10:0-11:00", "x"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// BenchmarkClaim10k is a worker's dispatch decision with 10,000 queued
// jobs of 5 users in 3 tiers, after 300 finished ones (fair share reads
// their runs).
func BenchmarkClaim10k(b *testing.B) {
	w := newWorld(b)
	for i := range 300 {
		id := w.submit(fmt.Sprintf("user%d", i%5), Submit{})
		w.claim("w", 4)
		w.now = w.now.Add(time.Minute)
		w.segmentDone(id, 0)
	}
	tiers := []Tier{Normal, Normal, Background, Urgent}
	for i := range 10000 {
		user := fmt.Sprintf("user%d", i%5)
		if tiers[i%4] == Urgent {
			user = "root"
		}
		w.submit(user, Submit{Tier: tiers[i%4], Slots: 1 + i%2})
	}
	b.ResetTimer()
	for range b.N {
		if _, c, err := ClaimJob(w.s, w.p, "w2", 4, w.now); err != nil || c == nil {
			b.Fatal(err)
		}
	}
}
