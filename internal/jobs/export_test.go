package jobs

import "time"

// ExplainWhole is Explain with the whole simulation run, as it was before
// explain stopped at the job's start.
func ExplainWhole(s *State, p Policy, id string, now time.Time) (Explanation, error) {
	return s.explain(p, id, now, false)
}
