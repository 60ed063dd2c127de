package jobs

import "fmt"

// Invariants are the rules the scheduler's state keeps: spool verify
// reports what a fresh replay breaks. Two clones may each dispatch a job
// before they meet (a claim is exclusive within a clone); the fold keeps
// the first, so even then one job has one worker.
func (p *Projection) Invariants() []string {
	var out []string
	for _, j := range p.full().Sorted() {
		held := j.Status.Held()
		switch {
		case !validStatus(j.Status):
			out = append(out, fmt.Sprintf("job %s is in no state (%q)", j.ID, j.Status))
		case held && (j.Worker == "" || j.LeaseUntil.IsZero()):
			out = append(out, fmt.Sprintf("job %s is %s with no worker or lease", j.ID, j.Status))
		case !held && j.Worker != "":
			out = append(out, fmt.Sprintf("job %s is %s but held by %s", j.ID, j.Status, j.Worker))
		case len(j.Trail) == 0 || j.Trail[len(j.Trail)-1].To != j.Status:
			out = append(out, fmt.Sprintf("job %s is %s but its trail does not end there", j.ID, j.Status))
		case j.Status.Terminal() != !j.Ended.IsZero():
			out = append(out, fmt.Sprintf("job %s is %s with end time %v", j.ID, j.Status, j.Ended))
		case len(j.Segs) > j.Segments:
			out = append(out, fmt.Sprintf("job %s has %d segments and %d records", j.ID, j.Segments, len(j.Segs)))
		case !ValidJobID(j.ID) || j.Segments < 1 || j.Segments > SegmentLimit || j.Slots < 1 || j.Slots > SlotLimit:
			out = append(out, fmt.Sprintf("job %q asks for what no command takes: %d segments, %d slots", j.ID, j.Segments, j.Slots))
		}
	}
	return out
}

func validStatus(s Status) bool {
	for _, x := range Statuses {
		if s == x {
			return true
		}
	}
	return false
}
