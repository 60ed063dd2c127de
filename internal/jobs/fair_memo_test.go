package jobs

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// all keeps the decayed usage while no run ends: what it returns is, bit
// for bit, what computing it afresh gives, through any runs and ends.
func TestFairTrackAllMemoIsExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	fresh := func(f *fairTrack, at time.Time) []float64 {
		var out []float64
		ts := at.Sub(f.base).Seconds()
		for i, v := range f.val {
			if v != 0 {
				v *= math.Exp2(-at.Sub(f.asOf[i]).Seconds() / f.hl)
			}
			out = append(out, v+f.slots[i]*ts-f.start[i])
		}
		return out
	}
	for range 50 {
		f := &fairTrack{hl: 3600, base: base, ix: map[string]int{}}
		now := base
		type running struct {
			i, slots int
			start    time.Time
		}
		var runs []running
		for range 300 {
			switch r.IntN(4) {
			case 0:
				now = now.Add(time.Duration(r.IntN(3600)) * time.Second)
			case 1:
				i := f.index(string(rune('a' + r.IntN(6))))
				s := 1 + r.IntN(3)
				f.run(i, s, now)
				runs = append(runs, running{i, s, now})
			case 2:
				if len(runs) > 0 {
					k := r.IntN(len(runs))
					f.end(runs[k].i, runs[k].slots, runs[k].start, now)
					runs = append(runs[:k], runs[k+1:]...)
				}
			}
			got, want := f.all(now, nil), fresh(f, now)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("owner %d at %s: %v, afresh %v", i, now, got[i], want[i])
				}
			}
		}
	}
}
