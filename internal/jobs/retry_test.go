package jobs

import (
	"testing"
	"time"
)

// A failed job retried keeps its completed segments and resumes at the
// first unfinished one: the one that failed. Only a failed job, by its
// owner or an admin; it enters the queue at its tier's end.
func TestRetryResumesAtFirstUnfinishedSegment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.submit("ada", Submit{Segments: 4})
	w.claim("w", 1)
	w.now = w.now.Add(time.Minute)
	w.segmentDone(id, 0)
	w.now = w.now.Add(time.Minute)
	w.segmentDone(id, 0)
	w.now = w.now.Add(time.Minute)
	w.segmentDone(id, 9) // segment 2 fails
	if w.status(id) != Failed {
		t.Fatalf("job is %s", w.status(id))
	}
	other := w.submit("ada", Submit{})

	_, err := RetryJob(w.s, w.p, id, "bob")
	wantCode(t, err, "unauthorized")
	_, err = RetryJob(w.s, w.p, other, "ada")
	wantCode(t, err, "invalid_state_transition")
	_, err = RetryJob(w.s, w.p, "job-nope", "ada")
	wantCode(t, err, "not_found")

	d, err := RetryJob(w.s, w.p, id, "ada")
	w.apply("ada", d, err)
	j := w.s.Jobs[id]
	if j.Status != Queued || j.DoneSegments() != 2 || j.NextSegment() != 2 || !j.Ended.IsZero() || j.Error != "" {
		t.Fatalf("retried job: %s, %d done, next %d, ended %v, error %q", j.Status, j.DoneSegments(), j.NextSegment(), j.Ended, j.Error)
	}
	if tr := j.Trail[len(j.Trail)-1]; tr.From != Failed || tr.To != Queued || tr.Reason != "retry" || tr.By != "ada" {
		t.Fatalf("trail %+v", tr)
	}
	// At its tier's end: the job submitted after its failure goes first.
	if got := w.claim("w", 1); got != other {
		t.Fatalf("dispatched %s, want %s first", got, other)
	}
	w.segmentDone(other, 0)
	if got := w.claim("w", 1); got != id {
		t.Fatalf("dispatched %q, want the retried %s", got, id)
	}
	if c := w.s.Jobs[id]; c.Segs[2].Started != w.now || c.NextSegment() != 2 || c.Attempts != 2 {
		t.Fatalf("resumed at %d (attempt %d), segments %+v", c.NextSegment(), c.Attempts, c.Segs)
	}
	w.segmentDone(id, 0)
	if next := w.segmentDone(id, 0); next != -1 || w.status(id) != Complete || w.s.Jobs[id].DoneSegments() != 4 {
		t.Fatalf("after the retry: %s, %d done", w.status(id), w.s.Jobs[id].DoneSegments())
	}
	_, err = RetryJob(w.s, w.p, id, "ada")
	wantCode(t, err, "invalid_state_transition")
}
