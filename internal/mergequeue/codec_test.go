package mergequeue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/table"
)

// randomState builds a queue with every field in use.
func randomState(t testing.TB, seed int64) *State {
	rng := rand.New(rand.NewSource(seed))
	s := New()
	now := t0
	for i := 0; i < 30; i++ {
		now = now.Add(time.Duration(rng.Intn(1e6)) * time.Microsecond)
		r := req([]string{"a", "b", "c", "d"}[rng.Intn(4)], rng.Intn(9)+1, "ada <a&b>")
		r.ChangeID = ""
		r.BeadID = "bd-\"quoted\"\n"
		r.Priority = P(rng.Intn(5))
		if sub, err := DecideSubmit(s, r, pol, now); err == nil {
			fold(t, s, now, r.Actor, sub.Drafts)
		}
		if e := s.Entry(int64(rng.Intn(s.Len()) + 1)); e != nil && e.Status == Pending && rng.Intn(2) == 0 {
			var holder *ProcRecord
			if rng.Intn(2) == 0 {
				holder = &ProcRecord{PID: rng.Intn(1 << 22), PGID: 3, Start: rng.Uint64() >> 2, Boot: "b\u00f6\"t", NS: "pid:[4026531836]"}
			}
			drafts, c := DecideClaimHeld(s, "r\u00e9", holder, Target{Branch: "main"}, pol, now)
			fold(t, s, now, "train", drafts)
			if c != nil {
				d, err := DecideStep(s, Step{EntryID: c.ID, Runner: "r\u00e9", From: Claimed, To: Rebasing, HeadSHA: c.HeadSHA, TestedAgainstSHA: sha(7), ScratchDir: "/tmp/x"}, pol, now)
				if err != nil {
					t.Fatal(err)
				}
				fold(t, s, now, "train", d)
				switch rng.Intn(5) {
				case 3: // merging from a local target behind the tested base
					for _, to := range []Status{Testing, ReadyToMerge, Merging} {
						d, _ = DecideStep(s, Step{EntryID: c.ID, Runner: "r\u00e9", From: s.Entry(c.ID).Status, To: to, HeadSHA: c.HeadSHA,
							TestedSHA: sha(8), TestedAgainstSHA: sha(7), TargetFromSHA: sha(6)}, pol, now)
						fold(t, s, now, "train", d)
					}
				case 0:
					d, _ = DecideStep(s, Step{EntryID: c.ID, Runner: "r\u00e9", From: Rebasing, To: FailedTerminal, HeadSHA: c.HeadSHA, Reason: "conflict", Paths: []string{"a", "b\tc"}}, pol, now)
					fold(t, s, now, "train", d)
				case 1: // tested, then given back: the target's checkout has edits
					for _, to := range []Status{Testing, ReadyToMerge, Pending} {
						d, _ = DecideStep(s, Step{EntryID: c.ID, Runner: "r\u00e9", From: s.Entry(c.ID).Status, To: to, HeadSHA: c.HeadSHA,
							Reason: WaitCheckoutDirty + ": /r\u00e9po has edits", Paths: []string{"README", "d/\"q\""}}, pol, now)
						fold(t, s, now, "train", d)
					}
				default: // testing, with the test command's process recorded
					d, _ = DecideStep(s, Step{EntryID: c.ID, Runner: "r\u00e9", From: Rebasing, To: Testing, HeadSHA: c.HeadSHA}, pol, now)
					fold(t, s, now, "train", d)
					d, _ = DecideProcStarted(s, c.ID, "r\u00e9", ProcRecord{PID: rng.Intn(1 << 22), PGID: 7, Start: rng.Uint64() >> 2, Boot: "b00t"}, pol, now)
					fold(t, s, now, "train", d)
					if rng.Intn(3) == 0 {
						continue // left in testing, proc and all
					}
					d, _ = DecideStep(s, Step{EntryID: c.ID, Runner: "r\u00e9", From: Testing, To: FailedTerminal, HeadSHA: c.HeadSHA, Reason: "test failed"}, pol, now)
					fold(t, s, now, "train", d)
				}
			}
		}
		if rng.Intn(10) == 0 {
			fold(t, s, now, "ada", DecideFreeze(s, "why \\ not"))
		}
		if e := s.Entry(int64(rng.Intn(s.Len()) + 1)); e != nil && rng.Intn(4) == 0 {
			// what clones appending concurrently leave: a stale claim by
			// another runner (skipped) and a second submission of an
			// active key (cancelled as a duplicate)
			s.Apply(&eventlog.Event{ID: fmt.Sprintf("stale-%d", i), Type: EvClaimed, At: now, Actor: "bé",
				Data: json.RawMessage(`{"entry_id":1,"entry_ref":"` + e.Ref + `","from":"pending","to":"claimed","runner":"r\"2"}`)})
			if e.Status.Active() {
				dup, _ := json.Marshal(EntryData{EntryID: 9, To: Pending, Workspace: e.Workspace, Branch: e.Branch, ChangeID: e.ChangeID,
					ChangeIDSource: e.ChangeIDSource, DedupeKey: e.DedupeKey, HeadSHA: e.HeadSHA, Priority: P(1)})
				// an older spool's submission (no workspace_id): the entry keeps its writer
				s.Apply(&eventlog.Event{ID: fmt.Sprintf("dup-%d", i), Writer: []string{"w1", "w\"é"}[rng.Intn(2)], Type: EvSubmitted, At: now, Actor: "bob", Data: dup})
			}
		}
	}
	return s
}

func TestCodecRoundTrip(t *testing.T) {
	procs, holders, froms := 0, 0, 0
	defer func() {
		if procs == 0 || holders == 0 || froms == 0 {
			t.Errorf("%d entries with a recorded process, %d with a recorded holder, %d with target_from_sha: want some of each", procs, holders, froms)
		}
	}()
	for seed := int64(1); seed <= 20; seed++ {
		s := randomState(t, seed)
		for _, e := range s.All() {
			if e.Proc != nil {
				procs++
			}
			if e.Holder != nil {
				holders++
			}
			if e.TargetFromSHA != "" {
				froms++
			}
		}
		b, _ := s.MarshalState()
		files, _ := s.Files()
		public := files[0].Data
		if !json.Valid(public) {
			t.Fatalf("not JSON:\n%s", public)
		}
		var back State
		if err := back.UnmarshalState(b); err != nil {
			t.Fatal(err)
		}
		ended := 0
		for _, e := range s.All() {
			if e.Status.Terminal() {
				ended++
			}
		}
		if back.undecoded != ended {
			t.Fatalf("seed %d: %d entries left undecoded, %d have ended", seed, back.undecoded, ended)
		}
		if again, _ := back.MarshalState(); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%s\n%s", b, again)
		}
		checkIndex(t, s)
		checkIndex(t, &back)
		back.All()
		back.allIdentities()
		if back.cold != nil || back.undecoded != 0 || back.identitiesRaw != nil {
			t.Fatalf("seed %d: All left %d entries undecoded", seed, back.undecoded)
		}
		if again, _ := back.MarshalState(); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding the decoded entries differs:\n%s\n%s", b, again)
		}
		checkIndex(t, &back)
		s.ix, back.ix = nil, nil // compared with the entries by checkIndex
		if !reflect.DeepEqual(s, &back) {
			t.Fatalf("seed %d: decoded state differs", seed)
		}
		// encoding/json reads the same file into the same entries
		var viaStd struct {
			Entries []*Entry `json:"entries"`
		}
		if err := json.Unmarshal(public, &viaStd); err != nil {
			t.Fatal(err)
		}
		for _, e := range viaStd.Entries {
			e.LastStep.At = e.UpdatedAt // not repeated in the file
		}
		for _, e := range s.All() {
			e.encoded, e.encodedPos = nil, 0 // a cache
		}
		if !reflect.DeepEqual(viaStd.Entries, s.All()) {
			t.Fatalf("seed %d: encoding/json disagrees", seed)
		}
	}
}

// snapshotOf is a snapshot of one entry whose line is line: active or
// ended, as the index says, whatever the line holds.
func snapshotOf(line []byte, active bool) []byte {
	var b bytes.Buffer
	kind, n := byte(endedRecord), 0
	if active {
		kind, n = activeRecord, 1
	}
	tw := table.NewWriter(&b, snapshotMagic, 1)
	tw.Record(recordID(kind, 1), func(w *table.Enc) { w.Buf = append(w.Buf, line...) })
	tw.Finish(func(w *table.Enc) {
		w.Bool(false)
		w.Str("")
		w.Str("")
		w.Bool(false)
		w.Int(0)
		w.Int(0)
		w.Int(0)
		w.Str("{}")
		w.Uint(uint64(n))
		for range 2 {
			w.Uint(uint64(1 - n))
			if n == 0 {
				w.Str("k")
				w.Uint(1)
			}
		}
	})
	return b.Bytes()
}

// FuzzOpenState opens snapshots whose records pass their checksums but
// hold any line: whatever it accepts encodes again stably, the lines of
// ended entries included (copied, not decoded).
func FuzzOpenState(f *testing.F) {
	for _, e := range randomState(f, 1).All() {
		f.Add(lineOf(e), e.Status.Active())
	}
	f.Add([]byte(`{"entry_id":1,"added_at":"bad"}`), true)
	f.Add([]byte(`{"entry_id":1,"status":"merged","x":1}`), false)
	f.Add([]byte(`[]`), true)
	f.Fuzz(func(t *testing.T, line []byte, active bool) {
		var s State
		if s.UnmarshalState(snapshotOf(line, active)) != nil {
			return
		}
		once, _ := s.MarshalState()
		var again State
		if err := again.UnmarshalState(once); err != nil {
			t.Fatalf("cannot read what it wrote: %v\n%q", err, once)
		}
		if twice, _ := again.MarshalState(); !bytes.Equal(twice, once) {
			t.Fatalf("unstable:\n%q\n%q", once, twice)
		}
	})
}

// FuzzEntryLine: whatever the fast line reader accepts, encoding/json (the
// general path, through the struct tags) accepts too and reads the same entry.
func FuzzEntryLine(f *testing.F) {
	s := randomState(f, 3)
	for _, e := range s.All() {
		f.Add(e.encode(nil))
	}
	f.Add([]byte(`{"entry_id":01}`))
	f.Add([]byte(`{"entry_id":1,"conflict_paths":["a","b"],"last_step":{"n":2,"to":"merged"}}`))
	f.Add([]byte(`{"entry_id":1,"conflicts":[{"event":"e1","to":"cancelled","reason":"dup"},{"event":"e2","reason":"x"}],"workspace_id":"w/x"}`))
	f.Add([]byte(`{"conflicts":[{"event":"a","event":"b"}],"conflicts":[{"reason":"r"}],"conflict_paths":["a"],"conflict_paths":["b"]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast Entry
		if !fastEntry(line, &fast) {
			return
		}
		var slow Entry
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted %q, general path: %v", line, err)
		}
		if duplicateKeys(line) {
			return // encoding/json merges a repeated key's objects; encode never repeats one
		}
		fast.LastStep.At, slow.LastStep.At = fast.UpdatedAt, slow.UpdatedAt
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", line, fast, slow)
		}
	})
}

// Every line encode writes takes the fast path.
func TestEncodedLinesAreFast(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		for _, e := range randomState(t, seed).All() {
			line := e.encode(nil)
			var got Entry
			if bytes.ContainsAny(line, "\\\u00e9") {
				continue // escapes and non-ASCII go the general way
			}
			if !fastEntry(line, &got) {
				t.Fatalf("slow path for %s", line)
			}
		}
	}
}

// duplicateKeys reports whether an object in the JSON text repeats a key.
func duplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // a value ended: a key follows
		}
	}
}
