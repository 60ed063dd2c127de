package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// A job whose cancel was asked and whose worker then dies (or stops, or
// loses its lease) ends cancelled: it never goes back to the queue, however
// its worker's loss is found, on this clone or on one that had not yet seen
// the cancel when it found it.
func TestCancelledJobWhoseWorkerDiesEndsCancelled(t *testing.T) {
	proc := ProcRecord{PID: 10, PGID: 10, Start: 5, Boot: "b"}
	for _, c := range []struct {
		name string
		// lost is how the worker's loss is found, after the cancel was
		// asked (cancel) or not, at w.now (a minute after the claim).
		lost   func(w *world, cancel func()) []eventlog.Draft
		requeu string // the requeue's reason when no cancel was asked
	}{
		{"its process found dead", func(w *world, cancel func()) []eventlog.Draft {
			cancel()
			return Tick(w.s, w.p, w.now, Gone{proc: true})
		}, ReasonWorkerGone},
		{"its lease ran out", func(w *world, cancel func()) []eventlog.Draft {
			cancel()
			w.now = w.now.Add(w.p.Lease)
			return Tick(w.s, w.p, w.now, nil)
		}, ReasonLeaseExpired},
		{"its lease ran out, found by another worker's claim", func(w *world, cancel func()) []eventlog.Draft {
			cancel()
			w.now = w.now.Add(w.p.Lease)
			d, _, err := ClaimJob(w.s, w.p, "w2", 1, w.now)
			if err != nil {
				w.t.Fatal(err)
			}
			return d
		}, ReasonLeaseExpired},
		{"its worker restarted", func(w *world, cancel func()) []eventlog.Draft {
			cancel()
			return Release(w.s, "w1")
		}, ReasonWorkerGone},
		{"another clone, which had not seen the cancel, found its process dead", func(w *world, cancel func()) []eventlog.Draft {
			d := Tick(w.s, w.p, w.now, Gone{proc: true}) // decided before the cancel reached it
			cancel()                                     // the merged log has the cancel first
			return d
		}, ReasonWorkerGone},
		{"another clone, which had not seen the cancel, released it", func(w *world, cancel func()) []eventlog.Draft {
			d := Release(w.s, "w1")
			cancel()
			return d
		}, ReasonWorkerGone},
	} {
		for _, asked := range []bool{true, false} {
			name := c.name
			if !asked {
				name += ", no cancel asked"
			}
			t.Run(name, func(t *testing.T) {
				w := newWorld(t)
				id := w.submit("ada", Submit{Segments: 2})
				d, cl, err := ClaimJobHeld(w.s, w.p, "w1", &proc, nil, 1, w.now)
				w.apply("w1", d, err)
				if cl == nil || w.status(id) != Running {
					t.Fatalf("claim %v, %s", cl, w.status(id))
				}
				w.now = w.now.Add(time.Minute)
				cancel := func() {
					if asked {
						d, err := CancelJob(w.s, w.p, id, "ada", w.now)
						w.apply("ada", d, err)
						if !w.s.Jobs[id].CancelRequested {
							t.Fatal("no cancel requested")
						}
					}
				}
				drafts := c.lost(w, cancel)
				if merged := strings.HasPrefix(c.name, "another clone"); asked && !merged {
					// Decided knowing of the cancel: it says cancelled
					// itself (the fold would correct a requeue).
					var types []string
					for _, d := range drafts {
						if d.Subject == id {
							types = append(types, d.Type)
						}
					}
					if strings.Join(types, " ") != TypeCancelled {
						t.Fatalf("decided %v for the job, want %s", types, TypeCancelled)
					}
				}
				w.apply("watch", drafts, nil)
				j := w.s.Jobs[id]
				if !asked { // back to the queue (and, after a claim, out to its new worker)
					i := len(j.Trail) - 1
					for i > 0 && j.Trail[i].From != Running {
						i--
					}
					if tr := j.Trail[i]; tr.To != Queued || tr.Reason != c.requeu || j.Status == Cancelled {
						t.Fatalf("%s, trail %+v; want requeued for %s", j.Status, j.Trail, c.requeu)
					}
					return
				}
				if j.Status != Cancelled || j.Worker != "" || j.CancelRequested {
					t.Fatalf("%s, worker %q, cancel requested %v; want cancelled (trail %+v)", j.Status, j.Worker, j.CancelRequested, j.Trail)
				}
				// Nothing hands it out again.
				w.now = w.now.Add(time.Hour)
				if got := w.claim("w3", 4); got == id {
					t.Fatalf("the cancelled job %s was dispatched again", id)
				}
			})
		}
	}
}

// The other order of the same merge: a clone that had not seen the cancel
// requeued the job (its worker lost), and the merged log has that requeue
// before the cancel_requested decided on the held job. The cancel still
// wins: the job ends cancelled, and nothing hands it out again.
func TestCancelRequestedAfterAMergedRequeueCancels(t *testing.T) {
	proc := ProcRecord{PID: 10, PGID: 10, Start: 5, Boot: "b"}
	for _, lost := range []struct {
		name string
		by   func(w *world) []eventlog.Draft
	}{
		{"its process found dead", func(w *world) []eventlog.Draft { return Tick(w.s, w.p, w.now, Gone{proc: true}) }},
		{"its worker restarted", func(w *world) []eventlog.Draft { return Release(w.s, "w1") }},
	} {
		t.Run(lost.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.submit("ada", Submit{Segments: 2})
			d, cl, err := ClaimJobHeld(w.s, w.p, "w1", &proc, nil, 1, w.now)
			w.apply("w1", d, err)
			if cl == nil {
				t.Fatal("no claim")
			}
			w.now = w.now.Add(time.Minute)
			cancel, err := CancelJob(w.s, w.p, id, "ada", w.now) // decided on the held job
			if err != nil {
				t.Fatal(err)
			}
			w.apply("watch", lost.by(w), nil) // the requeue first
			if w.status(id) != Queued {
				t.Fatalf("after the requeue: %s", w.status(id))
			}
			w.apply("ada", cancel, nil)
			if j := w.s.Jobs[id]; j.Status != Cancelled || j.CancelRequested {
				t.Fatalf("%s, cancel requested %v; want cancelled (trail %+v)", j.Status, j.CancelRequested, j.Trail)
			}
			w.now = w.now.Add(time.Hour)
			if got := w.claim("w3", 4); got == id {
				t.Fatalf("the cancelled job %s was dispatched again", id)
			}
		})
	}
}
