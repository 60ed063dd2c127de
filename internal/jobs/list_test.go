package jobs_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/jobs"
)

// Rows come in dispatch order: running, then queued in the order the
// dispatcher takes them (positions), then paused in queue order, then
// scheduled by start_after, then with all the ended ones, latest first.
func TestListOrder(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	at := noon.Add(-3 * time.Hour)
	l.worker(at, "w", 4)
	l.submit(at, spec{id: "job-olddone"})
	l.done(at, "job-olddone", "w", time.Minute)
	l.submit(at.Add(time.Minute), spec{id: "job-newdone"})
	l.done(at.Add(time.Minute), "job-newdone", "w", time.Minute)
	l.submit(at.Add(2*time.Minute), spec{id: "job-gone"})
	l.apply(at.Add(3*time.Minute), "ada", jobs.TypeCancelled, "job-gone", nil)
	l.submit(at.Add(4*time.Minute), spec{id: "job-runb"})
	l.submit(at.Add(5*time.Minute), spec{id: "job-runa"})
	l.start(at.Add(6*time.Minute), "job-runb", "w")
	l.start(at.Add(7*time.Minute), "job-runa", "w")
	l.submit(at.Add(10*time.Minute), spec{id: "job-bg", tier: jobs.Background})
	l.submit(at.Add(11*time.Minute), spec{id: "job-n1"})
	l.submit(at.Add(12*time.Minute), spec{id: "job-n2"})
	l.submit(at.Add(13*time.Minute), spec{id: "job-n3"})
	l.submit(at.Add(14*time.Minute), spec{id: "job-urg", tier: jobs.Urgent, owner: "root"})
	l.apply(at.Add(15*time.Minute), "ada", jobs.TypePaused, "job-n2", nil)
	l.submit(at.Add(16*time.Minute), spec{id: "job-later", startAfter: noon.Add(2 * time.Hour)})
	l.submit(at.Add(17*time.Minute), spec{id: "job-sooner", startAfter: noon.Add(time.Hour)})

	type want struct {
		id     string
		pos    int
		reason string
	}
	for _, tc := range []struct {
		all  bool
		want []want
	}{
		{false, []want{{"job-runb", 0, ""}, {"job-runa", 0, ""}, {"job-urg", 1, ""}, {"job-n1", 2, ""}, {"job-n3", 3, ""},
			{"job-bg", 4, ""}, {"job-n2", 0, "paused"}, {"job-sooner", 0, "scheduled: enters the queue at 2026-03-10T13:00:00Z"},
			{"job-later", 0, "scheduled: enters the queue at 2026-03-10T14:00:00Z"}}},
		{true, []want{{"job-runb", 0, ""}, {"job-runa", 0, ""}, {"job-urg", 1, ""}, {"job-n1", 2, ""}, {"job-n3", 3, ""},
			{"job-bg", 4, ""}, {"job-n2", 0, "paused"}, {"job-sooner", 0, "scheduled: enters the queue at 2026-03-10T13:00:00Z"},
			{"job-later", 0, "scheduled: enters the queue at 2026-03-10T14:00:00Z"},
			{"job-gone", 0, ""}, {"job-newdone", 0, ""}, {"job-olddone", 0, ""}}},
	} {
		t.Run(fmt.Sprint("all=", tc.all), func(t *testing.T) {
			var got []want
			for _, r := range l.s.List(basePolicy(), noon, tc.all) {
				got = append(got, want{r.ID, r.Position, r.WaitReason})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("rows\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	rows := l.s.List(basePolicy(), noon, true)
	if r := rows[len(rows)-1]; r.SegmentsDone != 1 || r.Segments != 1 || r.Status != jobs.Complete || r.Slots != 1 || r.Owner != "ada" {
		t.Fatalf("old-done row %+v", r)
	}
	for _, r := range rows {
		waiting := r.Status == jobs.Queued || r.Status == jobs.Scheduled
		if waiting == r.LikelyStart.IsZero() || waiting == r.EarliestStart.IsZero() {
			t.Errorf("%s (%s): estimate %v..%v", r.ID, r.Status, r.EarliestStart, r.LikelyStart)
		}
	}
}

// The start range: a simulated dispatch over the slots, segments taking
// the median (likely) or the shortest (earliest) finished segment of the
// job's name, the default while there is none; earliest half the likely
// while fewer than three have finished. Jobs held by a quota or an
// off-peak window are estimated from when it opens.
func TestListEstimates(t *testing.T) {
	t.Parallel()
	min := func(n int) time.Duration { return time.Duration(n) * time.Minute }
	window, _ := jobs.ParseWindow("22:00-08:00")
	quota := func(l *ledger) {
		l.apply(noon.Add(-time.Hour), "root", jobs.TypeQuotaSet, "quota/user/bob", jobs.QuotaData{Scope: "user", Name: "bob", Daily: time.Minute})
		l.submit(noon.Add(-30*time.Minute), spec{id: "job-bobold", owner: "bob", name: "other"})
		l.done(noon.Add(-30*time.Minute), "job-bobold", "w", min(2))
	}
	type est struct {
		earliest, likely time.Duration // after now; -1: none
		reason           string
	}
	for _, tc := range []struct {
		name  string
		p     func(*jobs.Policy)
		now   time.Time
		setup func(l *ledger, now time.Time)
		want  map[string]est
	}{{
		name: "behind a 2-slot job on a 2-slot worker, the job waits for its expected end",
		setup: func(l *ledger, now time.Time) {
			l.worker(now.Add(-time.Hour), "w", 2)
			l.submit(now.Add(-time.Hour), spec{id: "job-big", slots: 2, segments: 3})
			l.start(now.Add(-5*time.Minute), "job-big", "w")
			l.submit(now.Add(-time.Minute), spec{id: "job-small"})
		},
		want: map[string]est{"job-small": {min(10), min(25), ""}}, // 3 segments × 10m default − 5m run; × 5m (half) for earliest
	}, {
		name: "median and shortest finished segment of the name; the default for other names",
		setup: func(l *ledger, now time.Time) {
			l.worker(now.Add(-3*time.Hour), "w", 1)
			for i, d := range []time.Duration{min(9), min(2), min(4)} {
				id := fmt.Sprint("job-past", i)
				l.submit(now.Add(-3*time.Hour), spec{id: id})
				l.done(now.Add(-3*time.Hour+time.Duration(i)*20*time.Minute), id, "w", d)
			}
			l.submit(now.Add(-time.Hour), spec{id: "job-cur", segments: 2})
			l.start(now.Add(-time.Minute), "job-cur", "w")
			l.submit(now, spec{id: "job-r1"})
			l.submit(now.Add(time.Second), spec{id: "job-x", name: "unknown"})
			l.submit(now.Add(2*time.Second), spec{id: "job-r2"})
		},
		want: map[string]est{
			"job-r1": {min(3), min(7), ""},   // 2×2m−1m, 2×4m−1m
			"job-x":  {min(5), min(11), ""},  // + a render segment
			"job-r2": {min(10), min(21), ""}, // + an unknown one at the default (half of it for earliest)
		},
	}, {
		name: "an even count's median is the middle two's mean",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-3*time.Hour), spec{id: "job-a"})
			l.done(now.Add(-3*time.Hour), "job-a", "w", min(2))
			l.submit(now.Add(-3*time.Hour), spec{id: "job-b"})
			l.done(now.Add(-2*time.Hour), "job-b", "w", min(4))
			l.submit(now.Add(-time.Hour), spec{id: "job-cur"})
			l.start(now, "job-cur", "w")
			l.submit(now, spec{id: "job-next"})
		},
		want: map[string]est{"job-next": {90 * time.Second, min(3), ""}}, // two finished: half the median for earliest
	}, {
		name: "nothing overtakes the first in line: a 1-slot job waits behind a 2-slot one",
		setup: func(l *ledger, now time.Time) {
			l.worker(now.Add(-time.Hour), "w", 2)
			l.submit(now.Add(-time.Hour), spec{id: "job-run"})
			l.start(now, "job-run", "w")
			l.submit(now, spec{id: "job-wide", slots: 2})
			l.submit(now.Add(time.Second), spec{id: "job-narrow"})
		},
		want: map[string]est{"job-wide": {min(5), min(10), ""}, "job-narrow": {min(10), min(20), ""}},
	}, {
		name: "free slots now: starts now; no worker: the policy's slots",
		p:    func(p *jobs.Policy) { p.Slots = 2 },
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-a"})
			l.submit(now.Add(time.Second), spec{id: "job-b"})
			l.submit(now.Add(2*time.Second), spec{id: "job-c"})
		},
		want: map[string]est{"job-a": {0, 0, ""}, "job-b": {0, 0, ""}, "job-c": {min(5), min(10), ""}},
	}, {
		name: "start_after moves the estimate; a released job goes to its tier's end",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Minute), spec{id: "job-later", startAfter: now.Add(time.Hour)})
			l.submit(now.Add(-10*time.Second), spec{id: "job-q1", segments: 9}) // 90m
			l.submit(now.Add(-5*time.Second), spec{id: "job-q2", tier: jobs.Background})
			l.submit(now.Add(-2*time.Minute), spec{id: "job-past", startAfter: now.Add(-time.Minute)}) // due: queued at the next tick
		},
		// q1 ends at 90m; at 60m "later" entered the normal tier, ahead of
		// the background q2, behind "past" (released at once). At the
		// earliest, q1 ends at 45m, past runs to 50m, q2 then, and later
		// enters at 60m.
		want: map[string]est{"job-q1": {0, 0, ""}, "job-past": {min(45), min(90), "scheduled: enters the queue at 2026-03-10T11:59:00Z"},
			"job-later": {min(60), min(100), "scheduled: enters the queue at 2026-03-10T13:00:00Z"}, "job-q2": {min(50), min(110), ""}},
	}, {
		name: "off-peak: a job inside the window that would start after it closes waits for the next opening",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		now:  time.Date(2026, 3, 10, 7, 30, 0, 0, time.UTC),
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Hour), spec{id: "job-run", segments: 4})
			l.start(now, "job-run", "w") // 40m: until 08:10
			l.submit(now, spec{id: "job-night", offPeak: true})
			l.submit(now.Add(time.Second), spec{id: "job-day"})
		},
		// At the earliest the running job ends at 07:50, inside the window:
		// the off-peak job, first in the queue, starts then.
		want: map[string]est{"job-day": {min(25), min(40), ""}, "job-night": {min(20), 14*time.Hour + min(30), ""}},
	}, {
		name: "an off-peak job of a lower tier yields at its segment's end to a job waiting for its slot",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		now:  time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC),
		setup: func(l *ledger, now time.Time) {
			l.worker(now.Add(-time.Hour), "w", 1)
			l.submit(now.Add(-time.Hour), spec{id: "job-night", tier: jobs.Background, offPeak: true, segments: 6})
			l.start(now.Add(-4*time.Minute), "job-night", "w")
			l.submit(now, spec{id: "job-day"})
			l.submit(now.Add(time.Second), spec{id: "job-bg", tier: jobs.Background})
		},
		// Not after its 56 minutes left: at the end of its segment (6m;
		// 1m at the earliest). The yielded job keeps its place, ahead of the
		// other background job: it runs its 5 segments left first.
		want: map[string]est{"job-day": {min(1), min(6), ""}, "job-bg": {min(31), min(66), ""}},
	}, {
		name: "off-peak: outside the window, from its opening",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-night", offPeak: true})
		},
		want: map[string]est{"job-night": {10 * time.Hour, 10 * time.Hour, "off-peak: outside the window"}},
	}, {
		name: "off-peak: urgent work queued",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		now:  time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC),
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-night", offPeak: true})
			l.submit(now, spec{id: "job-urg", tier: jobs.Urgent, owner: "root"})
		},
		// Once the urgent job has started, nothing urgent is queued.
		want: map[string]est{"job-urg": {0, 0, ""}, "job-night": {min(5), min(10), "off-peak: urgent work is queued"}},
	}, {
		name: "a job over quota is skipped, holding nothing back, until its window resets",
		setup: func(l *ledger, now time.Time) {
			quota(l)
			l.submit(now, spec{id: "job-bob", owner: "bob"})
			l.submit(now.Add(time.Second), spec{id: "job-ada"})
		},
		want: map[string]est{"job-ada": {0, 0, ""},
			"job-bob": {12 * time.Hour, 12 * time.Hour, "quota_exceeded: user bob used 120 slot-s of its daily 60 slot-s, until 2026-03-11T00:00:00Z"}},
	}, {
		name: "a job needing more slots than any worker has",
		setup: func(l *ledger, now time.Time) {
			l.worker(now, "w", 1)
			l.submit(now, spec{id: "job-huge", slots: 3})
			l.submit(now.Add(time.Second), spec{id: "job-a"})
		},
		want: map[string]est{"job-huge": {-1, -1, "needs more slots than the worker has"}, "job-a": {0, 0, ""}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := basePolicy()
			if tc.p != nil {
				tc.p(&p)
			}
			now := tc.now
			if now.IsZero() {
				now = noon
			}
			l := newLedger(t)
			tc.setup(l, now)
			got := map[string]est{}
			for _, r := range l.s.List(p, now, false) {
				if _, ok := tc.want[r.ID]; !ok {
					continue
				}
				e := est{-1, -1, r.WaitReason}
				if !r.LikelyStart.IsZero() {
					e.earliest, e.likely = r.EarliestStart.Sub(now), r.LikelyStart.Sub(now)
				}
				got[r.ID] = e
			}
			for id, w := range tc.want {
				if got[id] != w {
					t.Errorf("%s: got %+v, want %+v", id, got[id], w)
				}
			}
		})
	}
}

// Whatever the state, earliest ≤ likely, and neither before now.
func TestListRangeIsARange(t *testing.T) {
	t.Parallel()
	window, _ := jobs.ParseWindow("20:00-06:00")
	p := basePolicy()
	p.OffPeak = window
	l := bigLedger(t, 600)
	now := noon.Add(10 * time.Hour) // 22:00, inside the window
	rows := l.s.List(p, now, false)
	estimated := 0
	for _, r := range rows {
		if r.LikelyStart.IsZero() {
			continue
		}
		estimated++
		if r.EarliestStart.After(r.LikelyStart) || r.EarliestStart.Before(now) {
			t.Fatalf("%s: %v..%v", r.ID, r.EarliestStart, r.LikelyStart)
		}
	}
	if estimated < 500 {
		t.Fatalf("%d of %d rows estimated", estimated, len(rows))
	}
}

// bigLedger is n queued jobs across 5 owners and 3 tiers (some off-peak,
// some wide), a few finished with segments of varied lengths, two running.
func bigLedger(tb testing.TB, n int) *ledger {
	l := newLedger(tb)
	start := noon.Add(-6 * time.Hour)
	l.worker(start, "w1", 4)
	l.worker(start, "w2", 4)
	names := []string{"render", "train", "encode"}
	for i := range 12 {
		id := fmt.Sprint("job-done", i)
		l.submit(start, spec{id: id, name: names[i%3], segments: 3, owner: fmt.Sprint("user", i%5)})
		l.done(start.Add(time.Duration(i)*10*time.Minute), id, "w1", time.Duration(3+i)*time.Minute, time.Duration(5+i%4)*time.Minute)
	}
	for i := range 2 {
		id := fmt.Sprint("job-running", i)
		l.submit(start, spec{id: id, name: names[i], segments: 5, slots: 2})
		l.start(noon.Add(-time.Duration(i+1)*time.Minute), id, "w2")
	}
	tiers := []jobs.Tier{jobs.Urgent, jobs.Normal, jobs.Background}
	for i := range n {
		owner := fmt.Sprint("user", i%5)
		tier := tiers[i%3]
		if i%3 == 0 && i%2 == 0 {
			tier = jobs.Normal // fewer urgent ones
		}
		l.submit(start.Add(time.Duration(i)*time.Millisecond), spec{id: fmt.Sprintf("job-q%05d", i), name: names[i%3], owner: owner,
			project: fmt.Sprint("p", i%7), tier: tier, slots: 1 + i%4/3, segments: 1 + i%5, offPeak: i%11 == 0})
	}
	return l
}

func BenchmarkList10k(b *testing.B) {
	l := bigLedger(b, 10000)
	p := basePolicy()
	p.Fair = true
	p.OffPeak, _ = jobs.ParseWindow("22:00-08:00")
	b.ResetTimer()
	for b.Loop() {
		rows := l.s.List(p, noon, true)
		if len(rows) < 10000 {
			b.Fatal(len(rows))
		}
	}
}

// List is a pure function of the state: asking twice says the same, and
// leaves the state as it was.
func TestListLeavesTheState(t *testing.T) {
	t.Parallel()
	l := bigLedger(t, 50)
	before := fmt.Sprint(l.s.List(basePolicy(), noon, true))
	orders := map[string]int64{}
	for id, j := range l.s.Jobs {
		orders[id] = j.Order
	}
	if after := fmt.Sprint(l.s.List(basePolicy(), noon, true)); after != before {
		t.Fatal("two lists differ")
	}
	for id, j := range l.s.Jobs {
		if orders[id] != j.Order {
			t.Fatalf("%s's order changed", id)
		}
	}
}
