package mergequeue

import (
	"testing"
	"time"
)

func TestEffectivePriority(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		name        string
		base        int
		waited      time.Duration
		step        time.Duration
		want        int
		wantAgingOf string
	}{
		{"fresh", 4, 0, day, 4, ""},
		{"just under a step", 4, day - time.Second, day, 4, ""},
		{"one step", 4, day, day, 3, "P4→P3 aged 1d"},
		{"a week at a week's step", 4, 7 * day, 7 * day, 3, "P4→P3 aged 7d"},
		{"a week at a day's step: down to 0, no further", 4, 7 * day, day, 0, "P4→P0 aged 7d"},
		{"two and a half steps", 3, 60 * time.Hour, day, 1, "P3→P1 aged 2d"},
		{"already 0", 0, 30 * day, day, 0, ""},
		{"aging off", 4, 30 * day, 0, 4, ""},
		{"clock behind the queue time", 4, -day, day, 4, ""},
		{"hours", 2, 5 * time.Hour, 2 * time.Hour, 0, "P2→P0 aged 5h"},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := t0.Add(c.waited)
			got := EffectivePriority(c.base, t0, now, c.step)
			if got != c.want {
				t.Fatalf("EffectivePriority(%d, waited %s, step %s) = %d, want %d", c.base, c.waited, c.step, got, c.want)
			}
			st := Standing{Effective: got, Waited: max(c.waited, 0)}
			if why := st.Aging(c.base); why != c.wantAgingOf {
				t.Fatalf("Aging = %q, want %q", why, c.wantAgingOf)
			}
		})
	}
}

// Issue 28's case: a P4 entry queued 7 days before a P3 goes first once
// aging counts, in the order shown and in the order the train claims;
// without aging (or before it has waited long enough) the P3 does.
func TestAgingOrdersAndClaims(t *testing.T) {
	week := 7 * 24 * time.Hour
	for _, c := range []struct {
		name  string
		step  time.Duration
		later time.Duration // when the P3 is queued, after the P4
		first string
		aging string // the P4's
	}{
		{"a week's step, queued a week apart", week, week, "low", "P4→P3 aged 7d"},
		{"a day's step", 24 * time.Hour, week, "low", "P4→P0 aged 7d"},
		{"aging off", 0, week, "high", ""},
		{"not waited a step yet", week, 6 * 24 * time.Hour, "high", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			low := req("low", 1, "ada")
			low.Priority = P(4)
			submit(t, s, low, t0)
			high := req("high", 2, "ada")
			high.Priority = P(3)
			now := t0.Add(c.later)
			submit(t, s, high, now)
			checkInvariants(t, s) // the stored positions: no aging, the log alone decides
			if s.Queue()[0].Workspace != "high" {
				t.Fatal("the projection's order is not by priority")
			}
			o := s.OrderAt(now, c.step)
			if got := o.Queue[0].Workspace; got != c.first {
				t.Fatalf("first %s, want %s", got, c.first)
			}
			lowEntry := s.ActiveByWorkspace("low")
			st, _ := o.Of(lowEntry)
			if why := st.Aging(4); why != c.aging {
				t.Fatalf("aging %q, want %q", why, c.aging)
			}
			p := pol
			p.Aging = c.step
			_, claimed := DecideClaim(s, "r1", Target{Branch: "main"}, p, now)
			if claimed == nil || claimed.Workspace != c.first {
				t.Fatalf("claimed %v, want %s", claimed, c.first)
			}
			placed := s.PlacedIn(lowEntry, o)
			if c.first == "low" && (*placed.Position != 1 || placed.Aging != c.aging || *placed.EffectivePriority >= 4) {
				t.Fatalf("placed %+v", placed)
			}
		})
	}
}
