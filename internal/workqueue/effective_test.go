package workqueue

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// TestEffectiveIsFoldOfExpire is the property Effective is defined by:
// over random histories and times (among them every lease's end exactly,
// and a nanosecond either side), each entry's Effective is the entry after
// the fold of Expire's drafts for the whole state (on a Fork), and the same
// as effectiveFold, the fold on a state of the entry alone that Effective's
// own path (foldDecided) stands for. Seeded and bounded: it runs the same
// histories every time.
func TestEffectiveIsFoldOfExpire(t *testing.T) {
	policies := []Policy{
		DefaultPolicy(), // exponential, max_failures 5
		{Kind: Exponential, Initial: time.Minute, Max: time.Hour, Multiplier: 2, Lease: time.Hour}, // unlimited
		{Kind: Progressive, Lease: time.Hour},
	}
	ids := []string{"sp-a", "sp-b", "sp-c"}
	rng := rand.New(rand.NewPCG(32, 2))
	checked, expired := 0, 0
	outcomes := map[string]int{} // what expiries led to: failed, abandoned, blocked, demoted
	for round := range 400 {
		s := &State{History: map[string]*Entry{}} // the queue's side: what Effective is shown
		at := t0
		var log []string
		for range rng.IntN(40) {
			id := ids[rng.IntN(len(ids))]
			at = at.Add(time.Duration(rng.IntN(120)) * time.Minute)
			d := randomQueueDraft(rng, s.Entry(id), id, at)
			e, err := d.Event("alice", at)
			if err != nil {
				t.Fatal(err)
			}
			s.applyEntry(e)
			log = append(log, d.Type)
		}
		times := []time.Time{at, at.Add(time.Duration(rng.IntN(300)) * time.Minute)}
		for _, h := range s.History {
			if !h.LeaseUntil.IsZero() {
				times = append(times, h.LeaseUntil, h.LeaseUntil.Add(-time.Nanosecond), h.LeaseUntil.Add(time.Nanosecond))
			}
		}
		for _, p := range policies {
			for _, now := range times {
				f := NewFork(s, "alice", now)
				f.Add(Expire(s, p, now)...)
				o, err := f.State()
				if err != nil {
					t.Fatal(err)
				}
				for id, h := range s.History {
					before := *h
					got, want := p.Effective(*h, now), *o.Entry(id)
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("round %d, %s policy, at %s, %s after %v:\nEffective          %+v\nfold of Expire's   %+v",
							round, p.Kind, now.Format(time.RFC3339Nano), id, log, got, want)
					}
					if def := p.effectiveFold(*h, now); !reflect.DeepEqual(got, def) {
						t.Fatalf("round %d: Effective %+v, effectiveFold %+v", round, got, def)
					}
					if !reflect.DeepEqual(*h, before) {
						t.Fatalf("round %d: Effective changed the entry it was given", round)
					}
					checked++
					if h.leaseExpired(now) {
						expired++
						outcome := string(got.Status)
						if got.Priority != h.Priority {
							outcome = "demoted"
						}
						outcomes[outcome]++
					}
				}
			}
		}
	}
	if expired < 500 || checked-expired < 500 || len(outcomes) < 4 {
		t.Fatalf("the histories do not exercise expiry: %d of %d entries checked had an expired lease, with outcomes %v", expired, checked, outcomes)
	}
	t.Logf("%d entries checked, %d with an expired lease: %v", checked, expired, outcomes)
}

// randomQueueDraft is one of the queue's events for id, mostly claims, so
// that leases run out after any number of failures (abandon, demote and
// block thresholds), at any priority.
func randomQueueDraft(rng *rand.Rand, h *Entry, id string, at time.Time) eventlog.Draft {
	attempt := 1
	if h != nil {
		attempt = h.Attempts + 1
	}
	lease := at.Add(time.Duration(rng.IntN(180)) * time.Minute)
	switch rng.IntN(12) {
	case 0, 1, 2, 3, 4:
		return eventlog.Draft{Type: TypeClaimed, Subject: id,
			Data: ClaimedData{Attempt: attempt, Worker: "w", LeaseUntil: lease, Priority: rng.IntN(MaxPriority + 1)}}
	case 5:
		return eventlog.Draft{Type: TypeHeartbeat, Subject: id, Data: HeartbeatData{LeaseUntil: lease}}
	case 6:
		return eventlog.Draft{Type: TypeFailed, Subject: id, Data: FailedData{Attempt: attempt - 1, Error: "boom"}}
	case 7:
		return eventlog.Draft{Type: TypeDemoted, Subject: id, Data: DemotedData{From: 2, To: 3, Failures: 3}}
	case 8:
		return eventlog.Draft{Type: TypeBlocked, Subject: id, Data: BlockedData{TaskID: id, Reason: "by hand"}}
	case 9:
		return eventlog.Draft{Type: TypeUnblocked, Subject: id, Data: UnblockedData{ResetAttempts: rng.IntN(2) == 0}}
	case 10:
		return eventlog.Draft{Type: TypeReleased, Subject: id, Data: AttemptData{Attempt: attempt - 1}}
	}
	return eventlog.Draft{Type: TypeSucceeded, Subject: id, Data: AttemptData{Attempt: attempt - 1}}
}
