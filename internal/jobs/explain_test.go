package jobs_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/jobs"
)

func TestExplainNotFound(t *testing.T) {
	t.Parallel()
	_, err := newLedger(t).s.Explain(basePolicy(), "job-nope", noon)
	if f, ok := fault.As(err); !ok || !f.Has(fault.CodeNotFound) {
		t.Fatalf("err %v", err)
	}
}

// Explain says why a job waits, the weightiest reason first.
func TestExplain(t *testing.T) {
	t.Parallel()
	window, _ := jobs.ParseWindow("22:00-08:00")
	night := time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		p       func(*jobs.Policy)
		now     time.Time
		setup   func(l *ledger, now time.Time)
		id      string
		reasons []string // in order; each a prefix of a reason
		check   func(t *testing.T, e jobs.Explanation, now time.Time)
	}{{
		name: "quota hold",
		setup: func(l *ledger, now time.Time) {
			l.apply(now.Add(-time.Hour), "root", jobs.TypeQuotaSet, "quota/user/bob", jobs.QuotaData{Scope: "user", Name: "bob", Daily: time.Minute})
			l.submit(now.Add(-30*time.Minute), spec{id: "job-bobold", owner: "bob"})
			l.done(now.Add(-30*time.Minute), "job-bobold", "w", 2*time.Minute)
			l.submit(now, spec{id: "job-bob", owner: "bob"})
		},
		id:      "job-bob",
		reasons: []string{"held by quota: user bob used 120 slot-s of its daily 60 slot-s; it resets at 2026-03-11T00:00:00Z"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			q := e.Quota
			if q == nil || q.Window != "daily" || q.Used.Duration() != 2*time.Minute || q.Limit.Duration() != time.Minute ||
				!q.ResetAt.Equal(time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)) || !strings.HasPrefix(q.Hold, "quota_exceeded: user bob") {
				t.Fatalf("quota %+v", q)
			}
			if e.Next || !e.LikelyStart.Equal(q.ResetAt) || e.Position != 1 || e.Queued != 1 {
				t.Fatalf("%+v", e)
			}
		},
	}, {
		name: "off-peak, outside the window",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-night", offPeak: true})
		},
		id:      "job-night",
		reasons: []string{"off-peak only: outside the window 22:00-08:00, which opens at 2026-03-10T22:00:00Z"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if o := e.OffPeak; o == nil || o.State != jobs.OffPeakOutside || !o.Opens.Equal(now.Add(10*time.Hour)) || e.Next {
				t.Fatalf("off-peak %+v, next %v", o, e.Next)
			}
		},
	}, {
		name: "off-peak, urgent work queued",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		now:  night,
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-night", offPeak: true})
			l.submit(now.Add(time.Second), spec{id: "job-urg", tier: jobs.Urgent, owner: "root"})
		},
		id: "job-night",
		reasons: []string{"off-peak only: it waits while urgent work is queued (1 urgent job)",
			"1 job of higher tiers is ahead (1 urgent)"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if o := e.OffPeak; o == nil || o.State != jobs.OffPeakUrgent || o.Urgent != 1 || e.Position != 2 || e.AheadHigherTiers != 1 {
				t.Fatalf("%+v %+v", e, o)
			}
		},
	}, {
		name: "off-peak, inside the window: no reason",
		p:    func(p *jobs.Policy) { p.OffPeak = window },
		now:  night,
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-night", offPeak: true})
		},
		id:      "job-night",
		reasons: []string{"it is next: the next worker to ask for work dispatches it", "expected to start at 2026-03-10T23:00:00Z"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if o := e.OffPeak; o == nil || o.State != jobs.OffPeakInside || !e.Next || !e.LikelyStart.Equal(now) {
				t.Fatalf("%+v %+v", e, o)
			}
		},
	}, {
		name: "off-peak, no window set",
		setup: func(l *ledger, now time.Time) {
			l.submit(now, spec{id: "job-night", offPeak: true})
		},
		id:      "job-night",
		reasons: []string{"off-peak only, and no off-peak window is set (scheduler.off_peak): it never dispatches"},
	}, {
		name: "fair share: another owner has less recent slot time",
		p:    func(p *jobs.Policy) { p.Fair = true },
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-2*time.Hour), spec{id: "job-adaold"})
			l.done(now.Add(-time.Hour), "job-adaold", "w", time.Hour)
			l.submit(now.Add(-time.Minute), spec{id: "job-ada"})
			l.submit(now, spec{id: "job-bob", owner: "bob"})
		},
		id: "job-ada",
		reasons: []string{"1 normal job is ahead of it: 1 of bob's",
			"fair share: ada has used 1.0 slot-h of recent slot time, bob the least (0.0 slot-h); bob's jobs go first in the normal tier",
			"expected to start"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			f := e.Fair
			if f == nil || f.Next || f.LeastOwner != "bob" || f.Least != 0 || f.Usage != 3600 || f.Owners != 2 || e.Next || e.Position != 2 || e.AheadSameTier != 1 {
				t.Fatalf("%+v %+v", e, f)
			}
		},
	}, {
		name: "fair share: the owner with the least goes first, past the queue's order",
		p:    func(p *jobs.Policy) { p.Fair = true },
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-2*time.Hour), spec{id: "job-adaold"})
			l.done(now.Add(-time.Hour), "job-adaold", "w", time.Hour)
			l.submit(now.Add(-time.Minute), spec{id: "job-ada"})
			l.submit(now, spec{id: "job-bob", owner: "bob"})
		},
		id: "job-bob",
		// Its position is the dispatcher's: first, whatever the queue's order.
		reasons: []string{"it is next: the next worker to ask for work dispatches it",
			"fair share: bob has the least recent slot time (0.0 slot-h) of the owners waiting in the normal tier, so their jobs go first",
			"expected to start at 2026-03-10T12:00:00Z"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if f := e.Fair; f == nil || !f.Next || f.Owners != 2 || !e.Next || e.Position != 1 || e.AheadSameTier != 0 {
				t.Fatalf("%+v %+v", e, f)
			}
		},
	}, {
		name: "urgent work ahead",
		setup: func(l *ledger, now time.Time) {
			l.worker(now, "w", 1)
			l.submit(now.Add(-time.Minute), spec{id: "job-n1"})
			l.submit(now, spec{id: "job-urg", tier: jobs.Urgent, owner: "root"})
			l.submit(now, spec{id: "job-urg2", tier: jobs.Urgent, owner: "root"})
			l.submit(now.Add(time.Second), spec{id: "job-n2"})
		},
		id:      "job-n2",
		reasons: []string{"2 jobs of higher tiers are ahead (2 urgent)", "1 normal job is ahead of it", "expected to start between"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if e.AheadHigherTiers != 2 || e.AheadSameTier != 1 || e.AheadByTier[jobs.Urgent] != 2 || e.Position != 4 || e.Queued != 4 || e.Next ||
				!e.LikelyStart.Equal(now.Add(30*time.Minute)) {
				t.Fatalf("%+v", e)
			}
		},
	}, {
		name: "next, waiting for slots",
		setup: func(l *ledger, now time.Time) {
			l.worker(now.Add(-time.Hour), "w", 2)
			l.submit(now.Add(-time.Hour), spec{id: "job-run"})
			l.start(now.Add(-4*time.Minute), "job-run", "w")
			l.submit(now, spec{id: "job-wide", slots: 2})
		},
		id: "job-wide",
		reasons: []string{"it is next in line and waits for 2 free slots", "it needs 2 slots and at most 1 is free on a worker now",
			"expected to start between 2026-03-10T12:01:00Z and 2026-03-10T12:06:00Z"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if e.Slots != (jobs.SlotsStanding{Needed: 2, MostOnWorker: 2, FreeNow: 1, MostFreeNow: 1}) || !e.Next {
				t.Fatalf("%+v", e)
			}
		},
	}, {
		name: "wider than any worker",
		setup: func(l *ledger, now time.Time) {
			l.worker(now, "w", 2)
			l.submit(now, spec{id: "job-wide", slots: 3})
		},
		id:      "job-wide",
		reasons: []string{"it needs 3 slots and the largest worker has 2: it cannot run until a larger worker starts"},
	}, {
		name: "scheduled",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Hour), spec{id: "job-later", startAfter: now.Add(time.Hour)})
			l.submit(now, spec{id: "job-bg", tier: jobs.Background})
			l.submit(now, spec{id: "job-n", segments: 12})
		},
		id: "job-later",
		reasons: []string{"scheduled: it enters the queue at 2026-03-10T13:00:00Z (start_after), at the end of the normal tier",
			"1 normal job is ahead of it", "expected to start between 2026-03-10T13:00:00Z and 2026-03-10T14:00:00Z"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if e.Position != 0 || e.AheadSameTier != 1 || e.AheadHigherTiers != 0 || !e.StartAfter.Equal(now.Add(time.Hour)) {
				t.Fatalf("%+v", e)
			}
		},
	}, {
		name: "paused",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Minute), spec{id: "job-a"})
			l.submit(now, spec{id: "job-p"})
			l.apply(now, "ada", jobs.TypePaused, "job-p", nil)
		},
		id:      "job-p",
		reasons: []string{"paused: it keeps its place in the queue; spool job resume job-p puts it back", "1 normal job is ahead of it"},
		check: func(t *testing.T, e jobs.Explanation, now time.Time) {
			if e.Position != 0 || e.Queued != 1 || e.Next || !e.LikelyStart.IsZero() {
				t.Fatalf("%+v", e)
			}
		},
	}, {
		name: "running",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Hour), spec{id: "job-r", segments: 2})
			l.start(now.Add(-5*time.Minute), "job-r", "w")
			l.apply(now, "ada", jobs.TypePauseRequested, "job-r", nil)
		},
		id:      "job-r",
		reasons: []string{"running on worker w since 2026-03-10T11:55:00Z (segment 1 of 2); pausing after this segment"},
	}, {
		name: "complete",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Hour), spec{id: "job-c"})
			l.done(now.Add(-time.Hour), "job-c", "w", time.Minute)
		},
		id:      "job-c",
		reasons: []string{"complete at 2026-03-10T11:01:00Z"},
	}, {
		name: "failed",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Hour), spec{id: "job-f"})
			l.start(now.Add(-time.Hour), "job-f", "w")
			code := 3
			l.apply(now, "", jobs.TypeSegmentDone, "job-f", jobs.SegmentData{Segment: 0, ExitCode: &code})
			l.apply(now, "", jobs.TypeFinished, "job-f", jobs.FinishedData{Status: jobs.Failed, Error: "segment 0 exited with code 3"})
		},
		id:      "job-f",
		reasons: []string{"failed at 2026-03-10T12:00:00Z: segment 0 exited with code 3"},
	}, {
		name: "cancelled",
		setup: func(l *ledger, now time.Time) {
			l.submit(now.Add(-time.Hour), spec{id: "job-x", segments: 3})
			l.apply(now, "ada", jobs.TypeCancelled, "job-x", nil)
		},
		id:      "job-x",
		reasons: []string{"cancelled at 2026-03-10T12:00:00Z (0 of 3 segments done)"},
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
			e, err := l.s.Explain(p, tc.id, now)
			if err != nil {
				t.Fatal(err)
			}
			if e.ID != tc.id || e.Status != l.s.Jobs[tc.id].Status {
				t.Fatalf("explained %s (%s)", e.ID, e.Status)
			}
			if len(e.Reasons) < len(tc.reasons) || !slices.EqualFunc(e.Reasons[:len(tc.reasons)], tc.reasons, strings.HasPrefix) {
				t.Fatalf("reasons\n got %q\nwant %q", e.Reasons, tc.reasons)
			}
			if tc.check != nil {
				tc.check(t, e, now)
			}
		})
	}
}
