package mergequeue

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// queueOf1000 is a queue with n pending entries of mixed priority.
func queueOf(b testing.TB, n int) *State {
	s := New()
	for i := 0; i < n; i++ {
		r := req(fmt.Sprintf("ws-%04d", i), i+1, "ada")
		r.Priority = P(i % 5)
		submit(b, s, r, t0.Add(time.Duration(i)*time.Second))
	}
	return s
}

func BenchmarkDecideSubmit1000(b *testing.B) {
	s := queueOf(b, 1000)
	r := req("ws-new", 5000, "ada")
	for b.Loop() {
		if _, err := DecideSubmit(s, r, pol, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplySubmit1000 folds a submission into a queue of 1,000, and
// its cancel, which puts the queue back as it was for the next round.
func BenchmarkApplySubmit1000(b *testing.B) {
	s := queueOf(b, 1000)
	sub, _ := DecideSubmit(s, req("ws-new", 5000, "ada"), pol, t0)
	cancel := []eventlog.Draft{{Type: EvCancelled, Subject: Subject(1001), Data: EntryData{EntryID: 1001, From: Pending, To: Cancelled}}}
	for b.Loop() {
		c := *s
		c.entries = s.entries[:s.Len():s.Len()]
		fold(b, &c, t0, "ada", sub.Drafts)
		fold(b, &c, t0, "ada", cancel)
	}
	if s.PendingCount != 1000 || s.ActiveByKey(sub.DedupeKey) != nil {
		b.Fatal("the queue was not put back")
	}
}

func BenchmarkMarshalState1000(b *testing.B) {
	s := queueOf(b, 1000)
	for b.Loop() {
		s.render()
	}
}

func BenchmarkUnmarshalState1000(b *testing.B) {
	data, _ := queueOf(b, 1000).MarshalState()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var s State
		if err := s.UnmarshalState(data); err != nil {
			b.Fatal(err)
		}
	}
}

// history10000 is queueOf(10000) with all but the last 1,000 entries
// cancelled: a queue of 1,000 with a history of 9,000.
func history10000(b testing.TB) *State {
	s := queueOf(b, 10000)
	for id := int64(1); id <= 9000; id++ {
		drafts, err := DecideCancel(s, id, "ada", "", pol)
		if err != nil {
			b.Fatal(err)
		}
		fold(b, s, t0, "ada", drafts)
	}
	return s
}

// BenchmarkUnmarshalState10000 reads the snapshot of history10000: with
// BenchmarkUnmarshalState1000 it shows what the 9,000 ended entries cost
// a command that does not ask for them.
func BenchmarkUnmarshalState10000(b *testing.B) {
	data, _ := history10000(b).MarshalState()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var s State
		if err := s.UnmarshalState(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideSubmit10000 decides a new entry's submission on the state
// read from history10000's snapshot: its dedupe key is looked for among
// the ended entries too, read from their lines (the first time).
func BenchmarkDecideSubmit10000(b *testing.B) {
	data, _ := history10000(b).MarshalState()
	r := req("ws-new", 50000, "ada")
	for b.Loop() {
		var s State
		if err := s.UnmarshalState(data); err != nil {
			b.Fatal(err)
		}
		if _, err := DecideSubmit(&s, r, pol, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFiles1000(b *testing.B) {
	s := queueOf(b, 1000)
	for b.Loop() {
		s.Files()
	}
}

func BenchmarkCheckInvariants1000(b *testing.B) {
	s := queueOf(b, 1000)
	for b.Loop() {
		CheckInvariants(s)
	}
}

// BenchmarkReplay1000 folds 1,000 submissions and 1,000 claims from scratch,
// as a rebuild does.
func BenchmarkReplay1000(b *testing.B) {
	for b.Loop() {
		s := queueOf(b, 1000)
		for range 1000 {
			drafts, _ := DecideClaim(s, "r1", Target{Branch: "main"}, pol, t0)
			fold(b, s, t0, "train", drafts)
		}
	}
}

// foldLog is a merge queue's log over a long life: n entries submitted one
// after another, the train merging each some 50 submissions later (so the
// queue stays about 50 long), and every 100th merged entry resubmitted and
// merged again. Events as the log has them: submissions name their entry by
// number, everything after by entry_ref.
func foldLog(n int) []eventlog.Event {
	const behind = 50
	var evs []eventlog.Event
	at := t0
	add := func(typ string, data string) string {
		at = at.Add(time.Second)
		id := fmt.Sprintf("%024x", len(evs)+1)
		evs = append(evs, eventlog.Event{V: 1, ID: id, Writer: "w1", Seq: uint64(len(evs) + 1), LC: uint64(len(evs) + 1), At: at,
			Actor: "ada", Type: typ, Data: json.RawMessage(data)})
		return id
	}
	refs := make([]string, n)
	ws := func(i int) string { return fmt.Sprintf("w1/ws-%d", i) }
	train := func(i int, from Status) {
		steps := []Status{from, Claimed, Rebasing, Testing, ReadyToMerge, Merging, Merged}
		for k := 1; k < len(steps); k++ {
			typ := EvTransitioned
			if steps[k] == Claimed {
				typ = EvClaimed
			}
			add(typ, fmt.Sprintf(`{"entry_id":%d,"entry_ref":%q,"from":%q,"to":%q,"head_sha":%q,"tested_sha":%q,"runner":"r1","lease_until":"2030-01-01T00:00:00Z"}`,
				i+1, refs[i], steps[k-1], steps[k], sha(i+1), sha(i+1)))
		}
	}
	for i := 0; i < n; i++ {
		refs[i] = add(EvSubmitted, fmt.Sprintf(`{"entry_id":%d,"to":"pending","workspace":"ws-%d","workspace_id":%q,"branch":"b-%d","change_id":"C%d","change_id_source":"trailer","dedupe_key":"%s:C%d","head_sha":%q,"priority":%d}`,
			i+1, i, ws(i), i, i, ws(i), i, sha(i+1), i%5))
		if j := i - behind; j >= 0 {
			train(j, Pending)
			if j%100 == 0 && j >= behind {
				old := j - behind // merged a while ago: back in the queue, and through the train again
				add(EvResubmitted, fmt.Sprintf(`{"entry_id":%d,"entry_ref":%q,"from":"merged","to":"pending","head_sha":%q,"priority":2}`, old+1, refs[old], sha(old+1)))
				train(old, Pending)
			}
		}
	}
	return evs
}

// BenchmarkFold20000 replays foldLog(20000) (about 145,000 events) from
// scratch, as a rebuild does: linear in the log, not in entries squared.
func BenchmarkFold20000(b *testing.B) {
	evs := foldLog(20000)
	for b.Loop() {
		s := New()
		for i := range evs {
			s.Apply(&evs[i])
		}
		if s.Skipped != 0 || s.Len() != 20000 || s.PendingCount != 50 {
			b.Fatalf("skipped %d of %d events; %d entries, %d pending", s.Skipped, len(evs), s.Len(), s.PendingCount)
		}
	}
	b.ReportMetric(float64(len(evs)), "events")
}

// BenchmarkFold2000 is the same log a tenth as long: with BenchmarkFold20000
// it shows how the fold grows (10× the log should cost about 10× the time).
func BenchmarkFold2000(b *testing.B) {
	evs := foldLog(2000)
	for b.Loop() {
		s := New()
		for i := range evs {
			s.Apply(&evs[i])
		}
	}
}
