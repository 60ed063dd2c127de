package jobs

import "time"

// ExplainWhole is Explain with the whole simulation run, as it was before
// explain stopped at the job's start.
func ExplainWhole(s *State, p Policy, id string, now time.Time) (Explanation, error) {
	return s.explain(p, id, now, false)
}

// queuePool is queueHeads with every lane whole, from the sorted queue
// (what Decide read before): the queued jobs in lanes, those needing more than most
// slots left out (rule 3: they are skipped; an urgent one still counts as
// urgent work queued).
func (s *State) queuePool(p Policy, now time.Time, most int) *pool {
	pl := s.newPool(p, now)
	for _, j := range s.Queue() {
		if j.Tier == Urgent {
			pl.urgent++
		}
		if j.Slots <= most {
			pl.add(place{j: j, rank: j.Tier.Rank(), order: j.Order}, true)
		}
	}
	return pl
}

// DecideWhole is Decide from queuePool.
func DecideWhole(s *State, p Policy, o Offer, now time.Time) Decision {
	return s.decideFrom(s.queuePool(p, now, o.Total), o, now)
}

// JobCount and Exists are what SubmitJob reads of a state's jobs.
func JobCount(s *State) int           { return s.jobCount() }
func Exists(s *State, id string) bool { return s.exists(id) }

// Encoded is how many jobs of a state read lazily are not decoded yet.
func Encoded(s *State) int {
	if s.lazy == nil {
		return 0
	}
	n := 0
	for i := range s.lazy.n {
		if !s.isTaken(i) {
			n++
		}
	}
	return n
}
