package jobs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// sortQueue's keyed sort puts jobs in jobLess's order, ties of tier and
// order included.
func TestSortQueueIsJobLess(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	tiers := []Tier{Urgent, Normal, Background, "odd"}
	for n := range 200 {
		jobs := make([]*Job, n)
		for i := range jobs {
			jobs[i] = &Job{ID: fmt.Sprintf("job-%d", r.IntN(1000)*1000+i), Tier: tiers[r.IntN(len(tiers))], Order: int64(r.IntN(5)) - 2}
		}
		want := slices.Clone(jobs)
		sort.SliceStable(want, func(a, b int) bool { return jobLess(want[a], want[b]) })
		sortQueue(jobs)
		if !slices.Equal(jobs, want) {
			t.Fatalf("n=%d: order differs", n)
		}
	}
}
