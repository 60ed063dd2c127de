package jobs_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has

	"github.com/spoolhq/spool/internal/jobs"
)

func zone(t testing.TB, name string) *time.Location {
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func utc(day, hour, minute int) time.Time {
	return time.Date(2026, 3, day, hour, minute, 0, 0, time.UTC)
}

// A wait (entering the queue → first dispatch) counts on the local day of
// its dispatch, in its tier: in New York (UTC−4 in March, after DST) an
// evening dispatch is the day before UTC's.
func TestStatsWaitByTierAndDay(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.submit(utc(10, 13, 30), spec{id: "job-n3"})
	l.start(utc(10, 14, 0), "job-n3", "w") // 10:00 EDT on the 10th, 30m
	l.submit(utc(11, 1, 0), spec{id: "job-u1", tier: jobs.Urgent, owner: "root"})
	l.start(utc(11, 2, 0), "job-u1", "w") // 22:00 EDT on the 10th, 1h
	l.submit(utc(11, 3, 0), spec{id: "job-n1"})
	l.start(utc(11, 5, 0), "job-n1", "w") // 01:00 EDT on the 11th, 2h
	l.apply(utc(11, 5, 30), "", jobs.TypeRequeued, "job-n1", jobs.RequeuedData{Reason: jobs.ReasonLeaseExpired})
	l.start(utc(11, 9, 0), "job-n1", "w") // a second dispatch: not a wait
	l.submit(utc(11, 2, 0), spec{id: "job-n2", startAfter: utc(11, 3, 30)})
	l.apply(utc(11, 3, 30), "", jobs.TypeReleased, "job-n2", nil) // enters the queue now
	l.start(utc(11, 7, 30), "job-n2", "w")                        // 03:30 EDT on the 11th, 4h
	l.submit(utc(9, 10, 0), spec{id: "job-early"})
	l.start(utc(9, 11, 0), "job-early", "w") // before the window
	l.submit(utc(11, 8, 0), spec{id: "job-still"})

	h := time.Hour
	w := func(day string, tier jobs.Tier, n int, avg, longest time.Duration) jobs.TierWait {
		return jobs.TierWait{Day: day, Tier: tier, Jobs: n, Average: jobs.Seconds(avg), Longest: jobs.Seconds(longest)}
	}
	for _, tc := range []struct {
		zone  string
		byDay []jobs.TierWait
	}{{
		zone: "America/New_York",
		byDay: []jobs.TierWait{w("2026-03-10", jobs.Urgent, 1, h, h), w("2026-03-10", jobs.Normal, 1, h/2, h/2),
			w("2026-03-11", jobs.Normal, 2, 3*h, 4*h)},
	}, {
		zone:  "UTC",
		byDay: []jobs.TierWait{w("2026-03-10", jobs.Normal, 1, h/2, h/2), w("2026-03-11", jobs.Urgent, 1, h, h), w("2026-03-11", jobs.Normal, 2, 3*h, 4*h)},
	}} {
		t.Run(tc.zone, func(t *testing.T) {
			p := basePolicy()
			p.Zone = zone(t, tc.zone)
			st := l.s.Stats(p, utc(10, 0, 0), utc(12, 0, 0))
			if !slices.Equal(st.Wait, tc.byDay) {
				t.Errorf("by day\n got %+v\nwant %+v", st.Wait, tc.byDay)
			}
			wantAll := []jobs.TierWait{w("", jobs.Urgent, 1, h, h), w("", jobs.Normal, 3, (h/2+2*h+4*h)/3, 4*h)}
			if !slices.Equal(st.WaitAll, wantAll) {
				t.Errorf("by tier\n got %+v\nwant %+v", st.WaitAll, wantAll)
			}
			if st.Totals.Dispatched != 4 || st.Totals.Submitted != 5 || st.Zone != tc.zone {
				t.Errorf("totals %+v, zone %s", st.Totals, st.Zone)
			}
		})
	}
}

// The depth series: the queued count at since and after each change; too
// many changes are bucketed, each bucket its most.
func TestStatsQueueDepth(t *testing.T) {
	t.Parallel()
	m := func(n int) time.Time { return noon.Add(time.Duration(n) * time.Minute) }
	for _, tc := range []struct {
		name   string
		setup  func(l *ledger)
		since  time.Time
		want   []jobs.DepthPoint
		bucket time.Duration
	}{{
		name: "each change",
		setup: func(l *ledger) {
			l.submit(m(0), spec{id: "job-a"})
			l.submit(m(2), spec{id: "job-b"})
			l.submit(m(3), spec{id: "job-c"})
			l.submit(m(3), spec{id: "job-d", startAfter: m(30)}) // scheduled: not queued
			l.start(m(4), "job-a", "w")
			l.apply(m(5), "ada", jobs.TypePaused, "job-b", nil)
			l.apply(m(6), "ada", jobs.TypeResumed, "job-b", nil)
			l.apply(m(7), "ada", jobs.TypeCancelled, "job-c", nil)
			l.apply(m(30), "", jobs.TypeReleased, "job-d", nil)
		},
		since: m(1),
		want: []jobs.DepthPoint{{At: m(1), Depth: 1}, {At: m(2), Depth: 2}, {At: m(3), Depth: 3}, {At: m(4), Depth: 2},
			{At: m(5), Depth: 1}, {At: m(6), Depth: 2}, {At: m(7), Depth: 1}, {At: m(30), Depth: 2}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(t)
			tc.setup(l)
			st := l.s.Stats(basePolicy(), tc.since, m(60))
			if !slices.EqualFunc(st.Depth, tc.want, func(a, b jobs.DepthPoint) bool { return a.At.Equal(b.At) && a.Depth == b.Depth }) {
				t.Fatalf("depth\n got %v\nwant %v", st.Depth, tc.want)
			}
			if st.Bucket.Duration() != tc.bucket {
				t.Fatalf("bucket %v", st.Bucket)
			}
		})
	}
	t.Run("bucketed", func(t *testing.T) {
		l := newLedger(t)
		for i := range 1200 { // 1200 jobs in 20h, each queued for 30s: peaks of 1
			id := "job-" + strconv.Itoa(i)
			l.submit(noon.Add(time.Duration(i)*time.Minute), spec{id: id})
			l.apply(noon.Add(time.Duration(i)*time.Minute+30*time.Second), "ada", jobs.TypeCancelled, id, nil)
		}
		l.submit(noon.Add(10*time.Hour+15*time.Second), spec{id: "job-peak"})
		st := l.s.Stats(basePolicy(), noon, noon.Add(20*time.Hour))
		if len(st.Depth) > jobs.MaxDepthPoints || st.Bucket.Duration() != 20*time.Hour/jobs.MaxDepthPoints {
			t.Fatalf("%d points, bucket %v", len(st.Depth), st.Bucket)
		}
		most := 0
		for i, p := range st.Depth {
			most = max(most, p.Depth)
			if !p.At.Equal(noon.Add(time.Duration(i) * st.Bucket.Duration())) {
				t.Fatalf("point %d at %v", i, p.At)
			}
		}
		if most != 2 || st.Depth[len(st.Depth)-1].Depth != 2 {
			t.Fatalf("peaks lost: most %d, last %v", most, st.Depth[len(st.Depth)-1])
		}
	})
}

// Peak hours count submissions and slot time by local hour of day; usage
// is slot time per user and project in the window.
func TestStatsHoursAndUsage(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.submit(utc(10, 14, 20), spec{id: "job-a", project: "film", slots: 2})
	l.done(utc(10, 14, 30), "job-a", "w", 105*time.Minute) // 14:30–16:15 UTC
	l.submit(utc(10, 16, 50), spec{id: "job-b", owner: "bob"})
	l.start(utc(10, 17, 0), "job-b", "w") // still running at 17:30
	l.submit(utc(10, 5, 0), spec{id: "job-old", owner: "bob", project: "film"})
	l.done(utc(10, 5, 30), "job-old", "w", time.Hour) // 05:30–06:30, half before since
	since, now := utc(10, 6, 0), utc(10, 17, 30)
	h := func(d float64) jobs.Seconds { return jobs.Seconds(d * float64(time.Hour)) }
	for _, tc := range []struct {
		zone      string
		submitted map[int]int
		slotTime  map[int]jobs.Seconds
	}{{
		zone:      "America/New_York", // UTC−4
		submitted: map[int]int{10: 1, 12: 1},
		slotTime:  map[int]jobs.Seconds{2: h(0.5), 10: h(1), 11: h(2), 12: h(0.5), 13: h(0.5)},
	}, {
		zone:      "Asia/Kolkata", // UTC+5:30: hours split at :30 UTC
		submitted: map[int]int{19: 1, 22: 1},
		slotTime:  map[int]jobs.Seconds{11: h(0.5), 20: h(2), 21: h(1.5), 22: h(0.5)},
	}} {
		t.Run(tc.zone, func(t *testing.T) {
			p := basePolicy()
			p.Zone = zone(t, tc.zone)
			st := l.s.Stats(p, since, now)
			for hr, u := range st.Hours {
				if u.Hour != hr || u.Submitted != tc.submitted[hr] || u.SlotTime != tc.slotTime[hr] {
					t.Errorf("hour %d: %+v, want %d submitted, %v", hr, u, tc.submitted[hr], tc.slotTime[hr].Duration())
				}
			}
			users := []jobs.SlotUse{{Name: "ada", SlotTime: h(3.5)}, {Name: "bob", SlotTime: h(1)}}
			projects := []jobs.SlotUse{{Name: "film", SlotTime: h(4)}}
			if !slices.Equal(st.Users, users) || !slices.Equal(st.Projects, projects) {
				t.Errorf("users %v, projects %v", st.Users, st.Projects)
			}
			want := jobs.Totals{Submitted: 2, Dispatched: 2, Completed: 2, SlotTime: h(4.5)}
			if st.Totals != want {
				t.Errorf("totals %+v, want %+v", st.Totals, want)
			}
		})
	}
}

// Durations are seconds in JSON, and read back.
func TestStatsJSON(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.submit(noon, spec{id: "job-a"})
	l.done(noon.Add(90*time.Second), "job-a", "w", time.Hour)
	st := l.s.Stats(basePolicy(), noon.Add(-time.Hour), noon.Add(2*time.Hour))
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"wait_by_tier":[{"priority":"normal","jobs":1,"average":90,"longest":90}]`,
		`"usage_by_user":[{"name":"ada","slot_time":3600}]`, `"queue_depth":[{"at":"2026-03-10T11:00:00Z","depth":0}`,
		`"totals":{"submitted":1,"dispatched":1,"completed":1,"failed":0,"cancelled":0,"slot_time":3600}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s\nhas no %s", b, want)
		}
	}
	var back jobs.Stats
	if err := json.Unmarshal(b, &back); err != nil || back.WaitAll[0].Average.Duration() != 90*time.Second {
		t.Fatalf("read back: %v %+v", err, back.WaitAll)
	}
}
