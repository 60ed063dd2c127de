package mergequeue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/table"
)

// history is a queue with a history: entries merged, cancelled and failed
// for good, two ended entries of one dedupe key, and the active ones
// (pending, claimed). Every event id, so every entry_ref, begins with abcd.
type history struct {
	s    *State
	seq  int
	at   time.Time
	refs map[string]string // workspace → its entry's ref
}

func newHistory(t testing.TB) *history {
	h := &history{s: New(), at: t0, refs: map[string]string{}}
	submitted := func(ws string, r SubmitRequest) int64 {
		sub, err := DecideSubmit(h.s, r, pol, h.at)
		if err != nil {
			t.Fatalf("submit %s: %v", ws, err)
		}
		h.fold(t, "ada", sub.Drafts)
		e := h.s.Entry(sub.EntryID)
		h.refs[ws] = e.Ref
		return e.ID
	}
	for _, ws := range []string{"merged", "cancelled", "failed", "claimed", "pending", "again"} {
		submitted(ws, req(ws, len(h.refs)+1, "ada"))
	}
	drive(t, h.s, 1, []Status{Rebasing, Testing, ReadyToMerge, Merging, Merged}, h.at)
	h.cancel(t, 2)
	drive(t, h.s, 3, []Status{Rebasing, FailedTerminal}, h.at)
	claim, _ := DecideClaim(h.s, "r1", Target{Branch: "main"}, pol, h.at)
	h.fold(t, "train", claim) // entry 4
	h.cancel(t, 6)            // submitted again below: requeued, same entry
	for i, ws := range []string{"shared-1", "shared-2"} {
		r := req(ws, 20+i, "ada")
		r.DedupeKey = "shared:K1"
		h.cancel(t, submitted(ws, r))
	}
	return h
}

// fold applies drafts with event ids as the log gives them (hex, here all
// beginning with abcd), failing when the fold skips one.
func (h *history) fold(t testing.TB, actor string, drafts []eventlog.Draft) {
	t.Helper()
	for _, d := range drafts {
		b, err := json.Marshal(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		h.seq++
		h.at = h.at.Add(time.Second)
		skipped := h.s.Skipped
		h.s.Apply(&eventlog.Event{V: 1, ID: fmt.Sprintf("abcd%08x%012x", uint32(h.seq)*2654435761, h.seq), Type: d.Type, Subject: d.Subject, At: h.at, Actor: actor, Data: b})
		if h.s.Skipped != skipped {
			t.Fatalf("fold skipped %s %s", d.Type, b)
		}
	}
}

func (h *history) cancel(t testing.TB, id int64) {
	t.Helper()
	drafts, err := DecideCancel(h.s, id, "ada", "no", pol)
	if err != nil {
		t.Fatal(err)
	}
	h.fold(t, "ada", drafts)
}

// restore reads s back from its snapshot, as the next command does.
func restore(t testing.TB, s *State) *State {
	t.Helper()
	b, err := s.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := back.UnmarshalState(b); err != nil {
		t.Fatal(err)
	}
	return &back
}

func ids(es []*Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// decided is a submission as its JSON, to compare (Data holds pointers).
func decided(sub Submission, err error) string {
	b, _ := json.Marshal(sub)
	return fmt.Sprint(string(b), err)
}

func idOf(e *Entry) int64 {
	if e == nil {
		return 0
	}
	return e.ID
}

// TestEndedEntriesStayUndecoded: read from a snapshot, the ended entries
// are decoded only by what asks for them, and every query answers as it
// does on the state that was never encoded.
func TestEndedEntriesStayUndecoded(t *testing.T) {
	h := newHistory(t)
	orig := h.s
	const ended = 6 // merged, cancelled, failed, again, shared-1, shared-2
	far := t0.Add(24 * time.Hour)
	newcomer := req("newcomer", 99, "bob")
	requeue := req("again", 98, "ada")
	for _, c := range []struct {
		name    string
		query   func(s *State) any
		decoded int // ended entries the query decodes
	}{
		{"the snapshot", func(s *State) any { b, _ := s.MarshalState(); return string(b) }, 0},
		{"active count", func(s *State) any { return s.ActiveCount() }, 0},
		{"active entries", func(s *State) any { return ids(s.Active()) }, 0},
		{"the queue", func(s *State) any { return ids(s.Queue()) }, 0},
		{"merge list", func(s *State) any { return string(s.ListJSON(s.Listed(false))) }, 0},
		{"merge list --all", func(s *State) any { return string(s.ListJSON(s.Listed(true))) }, ended},
		{"expired leases", func(s *State) any { return ids(s.Expired(far)) }, 0},
		{"next expiry", func(s *State) any { return s.NextExpiry(t0) }, 0},
		{"an active entry by number", func(s *State) any { return idOf(s.Entry(5)) }, 0},
		{"an ended entry by number", func(s *State) any { return s.Entry(2).Ref }, 1},
		{"no such number", func(s *State) any { return idOf(s.Entry(99)) }, 0},
		{"an active entry by ref", func(s *State) any { return idOf(s.EntryByRef(h.refs["pending"])) }, 0},
		{"an ended entry by ref", func(s *State) any { return idOf(s.EntryByRef(h.refs["merged"])) }, 1},
		{"no such ref", func(s *State) any { return idOf(s.EntryByRef("abcdef")) }, 0},
		{"the newest of two ended entries by key", func(s *State) any { return idOf(s.LatestByKey("shared:K1")) }, 1},
		{"no entry by key", func(s *State) any { return idOf(s.LatestByKey("nobody:K")) }, 0},
		{"lookup by number", func(s *State) any { e, err := s.Lookup("3"); return fmt.Sprint(idOf(e), err) }, 1},
		{"lookup by ref prefix", func(s *State) any { e, err := s.Lookup(h.refs["cancelled"][:14]); return fmt.Sprint(idOf(e), err) }, 1},
		{"lookup, ambiguous prefix", func(s *State) any { e, err := s.Lookup("abcd"); return fmt.Sprint(idOf(e), err) }, 0},
		{"lookup, unknown prefix", func(s *State) any { e, err := s.Lookup("abce"); return fmt.Sprint(idOf(e), err) }, 0},
		{"submit a new workspace", func(s *State) any { return decided(DecideSubmit(s, newcomer, pol, far)) }, 0},
		{"submit an active workspace again", func(s *State) any { return decided(DecideSubmit(s, req("pending", 97, "ada"), pol, far)) }, 0},
		{"requeue an ended entry", func(s *State) any { return decided(DecideSubmit(s, requeue, pol, far)) }, 1},
		{"cancel an ended entry", func(s *State) any { _, err := DecideCancel(s, 1, "ada", "", pol); return fmt.Sprint(err) }, 1},
		{"claim", func(s *State) any {
			d, e := DecideClaim(s, "r2", Target{Branch: "main"}, pol, far)
			return fmt.Sprint(len(d), idOf(e))
		}, 0},
		{"invariants", func(s *State) any { return CheckInvariants(s) }, ended},
	} {
		t.Run(c.name, func(t *testing.T) {
			lazy := restore(t, orig)
			if lazy.undecoded != ended {
				t.Fatalf("%d entries undecoded after reading the snapshot, want %d", lazy.undecoded, ended)
			}
			want, got := c.query(orig), c.query(lazy)
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
				t.Errorf("read from the snapshot: %#v\nnever encoded: %#v", got, want)
			}
			if n := ended - lazy.undecoded; n != c.decoded {
				t.Errorf("decoded %d ended entries, want %d", n, c.decoded)
			}
			checkIndex(t, lazy)
		})
	}
}

// TestEndedEntriesFoldAlike: events about entries still undecoded (a
// requeue, a claim another clone made of an entry that ended, a second
// submission of an ended entry's key) fold into a state read from a
// snapshot as into one never encoded.
func TestEndedEntriesFoldAlike(t *testing.T) {
	h := newHistory(t)
	at := h.at.Add(time.Minute)
	events := func(s *State) []*eventlog.Event {
		var out []*eventlog.Event
		add := func(typ string, d EntryData) {
			b, _ := json.Marshal(d)
			out = append(out, &eventlog.Event{V: 1, ID: fmt.Sprintf("ffff%020d", len(out)), Type: typ, At: at, Actor: "ada", Data: b})
		}
		sub, err := DecideSubmit(s, req("again", 50, "ada"), pol, at)
		if err != nil || sub.Type != SubmissionResubmitted {
			t.Fatalf("requeue: %v, %v", sub.Type, err)
		}
		add(sub.Drafts[0].Type, sub.Drafts[0].Data.(EntryData))
		add(EvClaimed, EntryData{EntryRef: h.refs["merged"], From: Pending, To: Claimed, Runner: "r9"}) // stale: the entry merged
		r := req("shared-3", 51, "bob")
		r.DedupeKey = "shared:K1"
		sub, err = DecideSubmit(s, r, pol, at)
		if err != nil || sub.Type != SubmissionNew {
			t.Fatalf("submit a key that ended: %v, %v", sub.Type, err)
		}
		add(sub.Drafts[0].Type, sub.Drafts[0].Data.(EntryData))
		add(EvCancelled, EntryData{EntryID: 2, From: Pending, To: Cancelled}) // by number, as older logs do: refused, it has ended
		return out
	}
	lazy := restore(t, h.s)
	for i, evs := range [][]*eventlog.Event{events(h.s), events(lazy)} {
		s := []*State{h.s, lazy}[i]
		for _, e := range evs {
			s.Apply(e)
		}
	}
	want, _ := h.s.MarshalState()
	got, _ := lazy.MarshalState()
	if !bytes.Equal(got, want) {
		t.Fatalf("folded into the state read from a snapshot:\n%s\nnever encoded:\n%s", got, want)
	}
	// decoded: the requeued entry, the newest of shared:K1 (deciding the
	// third submission of the key), the merged and the cancelled entries
	// (each with a conflict recorded)
	if lazy.undecoded != 2 {
		t.Errorf("%d entries still undecoded, want 2", lazy.undecoded)
	}
	checkIndex(t, lazy)
	checkInvariants(t, lazy)
	if e := lazy.LatestByKey("shared:K1"); e == nil || e.ID != int64(lazy.Len()) || e.Status != Pending {
		t.Errorf("newest entry of shared:K1: %+v", e)
	}
}

// TestSnapshotChecksums: a snapshot with a damaged index or active
// entry is refused (the engine rebuilds it from the log); one with a
// damaged ended entry opens, and reading that entry panics with
// corrupt_snapshot rather than lose it.
func TestSnapshotChecksums(t *testing.T) {
	h := newHistory(t)
	good, _ := h.s.MarshalState()
	files, _ := h.s.Files()
	flip := func(b []byte, at int) []byte { b = bytes.Clone(b); b[at] ^= 1; return b }
	claimed := bytes.Index(good, []byte(`"status":"claimed"`))
	merged := bytes.Index(good, []byte(`"status":"merged"`))
	if claimed < 0 || merged < 0 || claimed > merged {
		t.Fatalf("the active entries' records come first: claimed at %d, merged at %d", claimed, merged)
	}
	for _, c := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"as written", good, true},
		{"a byte of an active entry changed", flip(good, claimed+12), false},
		{"a byte of the index changed", flip(good, len(good)-20), false},
		{"the index offset changed", flip(good, len(good)-8), false},
		{"an ended entry changed", flip(good, merged+12), true},
		{"the older format: merge-queue.json", files[0].Data, false},
		{"empty", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s State
			err := s.UnmarshalState(c.b)
			if (err == nil) != c.ok {
				t.Fatalf("UnmarshalState: %v, want ok %v", err, c.ok)
			}
		})
	}
	var s State
	if err := s.UnmarshalState(flip(good, merged+12)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		var fe *fault.Error
		if err, _ := recover().(error); !errors.As(err, &fe) || fe.Code != table.CodeCorruptSnapshot.Name || fe.Fields["id"] != "merge queue entry 1" {
			t.Fatalf("reading the damaged entry: want a corrupt_snapshot panic, got %v", err)
		}
	}()
	s.Entry(1)
	t.Fatal("the damaged entry was read")
}

// TestFilesAreJSON: merge-queue.json is JSON, and the same whether its
// ended entries' lines were decoded or copied from the snapshot.
func TestFilesAreJSON(t *testing.T) {
	s := newHistory(t).s
	files, _ := s.Files()
	lazy, _ := restore(t, s).Files()
	if len(files) != 1 || !json.Valid(files[0].Data) || !bytes.Equal(files[0].Data, lazy[0].Data) {
		t.Fatalf("files %q\nread back %q", files[0].Data, lazy[0].Data)
	}
}

// TestIdentitiesStayUndecoded: read from a snapshot, the generated change
// ids are looked up in the snapshot's bytes, escapes and all, and decoded
// only to be rendered together with ids folded since.
func TestIdentitiesStayUndecoded(t *testing.T) {
	orig := New()
	at := t0
	generated := func(s *State, ws, branch string) {
		r := req(ws, 1, "ada")
		r.Branch, r.ChangeID, r.ChangeIDSource = branch, "", ""
		at = at.Add(time.Second)
		sub, err := DecideSubmit(s, r, pol, at)
		if err != nil {
			t.Fatalf("submit %s %s: %v", ws, branch, err)
		}
		fold(t, s, at, "ada", sub.Drafts)
		drafts, err := DecideCancel(s, sub.EntryID, "ada", "", pol) // ended: the workspace is free again
		if err != nil {
			t.Fatal(err)
		}
		fold(t, s, at, "ada", drafts)
	}
	for _, k := range [][2]string{{"ws", "b"}, {"ws2", "b"}, {"aws", "b"}, {"ws", "b2"}, {`quote"ws`, "b"}, {`back\slash`, `b"q`}, {"wörk", "bränch"}} {
		generated(orig, k[0], k[1])
	}
	lazy := restore(t, orig)
	for _, k := range [][2]string{{"ws", "b"}, {"ws2", "b"}, {"aws", "b"}, {"ws", "b2"}, {`quote"ws`, "b"}, {`back\slash`, `b"q`}, {"wörk", "bränch"},
		{"w", "b"}, {"s", "b"}, {"ws", ""}, {"", "b"}, {"", ""}, {"ws", `b","x`}, {"b", `":"x`}, {"nobody", "b"}} {
		key := IdentityKey(k[0], k[1])
		want, wantOK := orig.identity(key)
		got, ok := lazy.identity(key)
		if got != want || ok != wantOK {
			t.Errorf("identity %q: read from the snapshot %q %v, never encoded %q %v", key, got, ok, want, wantOK)
		}
	}
	if lazy.identitiesRaw == nil {
		t.Fatal("lookups decoded the identities")
	}
	// a submission folded since: found, and rendered with the others
	then := at
	for _, s := range []*State{orig, lazy} {
		at = then
		generated(s, "new", "b")
	}
	if a, b := orig.identities[IdentityKey("new", "b")], lazy.identities[IdentityKey("new", "b")]; a == "" || a != b {
		t.Fatalf("the new identity: %q, never encoded %q", b, a)
	}
	identities := func(s *State) string { // as rendered (entry refs differ: fold numbers events)
		_, after, _ := bytes.Cut(s.render(), []byte(`,"identities":`))
		obj, _, _ := bytes.Cut(after, []byte(`,"entries":[`))
		return string(obj)
	}
	want := identities(orig)
	if got := identities(lazy); got != want || lazy.identitiesRaw != nil {
		t.Fatalf("rendered:\n%s\nnever encoded:\n%s", got, want)
	}
	// as read from a snapshot without anything new, they are copied
	again := restore(t, lazy)
	if got := identities(again); got != want || again.identitiesRaw == nil {
		t.Fatalf("re-rendered:\n%s\nwant:\n%s", got, want)
	}
}

// parts are a snapshot taken apart: its records and its index's own fields.
type parts struct {
	ids    []string
	bodies []string
	extra  []byte
}

func split(t *testing.T, b []byte) parts {
	t.Helper()
	var p parts
	tb, err := table.Open(bytes.NewReader(b), int64(len(b)), snapshotMagic, func(d *table.Dec, n int) error {
		p.extra = []byte(d.Rest())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range tb.All() {
		p.ids = append(p.ids, tb.IDs[i])
		p.bodies = append(p.bodies, d.Rest())
	}
	return p
}

func join(p parts) []byte {
	var buf bytes.Buffer
	tw := table.NewWriter(&buf, snapshotMagic, len(p.ids))
	for i := range p.ids {
		body := p.bodies[i]
		tw.Record(p.ids[i], func(w *table.Enc) { w.Buf = append(w.Buf, body...) })
	}
	tw.Finish(func(w *table.Enc) { w.Buf = append(w.Buf, p.extra...) })
	return buf.Bytes()
}

// TestCraftedSnapshots: a snapshot whose checksums all hold but whose
// records were renamed, swapped, dropped or changed, or whose index was, is
// refused as it is opened, or a read of what does not fit panics with
// corrupt_snapshot; what opens and reads answers as the original does.
// Never an index out of range, a merge-queue.json that is not JSON, or an
// entry found under another's ref or key.
func TestCraftedSnapshots(t *testing.T) {
	h := newHistory(t)
	good, _ := h.s.MarshalState()
	base := split(t, good)
	kinds := map[string]int{}
	for seed := range 1000 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		p := parts{append([]string(nil), base.ids...), append([]string(nil), base.bodies...), bytes.Clone(base.extra)}
		switch r.IntN(5) {
		case 0: // rename an id
			i := r.IntN(len(p.ids))
			p.ids[i] = fmt.Sprintf("%c%012d", "ade"[r.IntN(3)], r.IntN(12))
		case 1: // swap two bodies
			i, j := r.IntN(len(p.ids)), r.IntN(len(p.ids))
			p.bodies[i], p.bodies[j] = p.bodies[j], p.bodies[i]
		case 2: // flip a byte of extra near the end (ended lists)
			i := len(p.extra) - 1 - r.IntN(min(len(p.extra), 60))
			p.extra[i] ^= byte(1 << r.IntN(8))
		case 3: // drop a record
			i := r.IntN(len(p.ids))
			p.ids = append(p.ids[:i:i], p.ids[i+1:]...)
			p.bodies = append(p.bodies[:i:i], p.bodies[i+1:]...)
		case 4: // change a body's status
			i := r.IntN(len(p.ids))
			p.bodies[i] = string(bytes.Replace([]byte(p.bodies[i]), []byte(`"status":"merged"`), []byte(`"status":"pending"`), 1))
			p.bodies[i] = string(bytes.Replace([]byte(p.bodies[i]), []byte(`"entry_id":1,`), []byte(`"entry_id":2,`), 1))
		}
		b := join(p) // ids out of order: the table refuses it
		var s State
		if s.UnmarshalState(b) != nil {
			kinds["refused"]++
			continue
		}
		func() {
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				var fe *fault.Error
				if err, ok := p.(error); ok && errors.As(err, &fe) && fe.Code == table.CodeCorruptSnapshot.Name {
					kinds["corrupt panic"]++
					return
				}
				t.Errorf("seed %d: a panic other than corrupt_snapshot: %v", seed, p)
			}()
			f, _ := s.Files()
			m, _ := s.MarshalState()
			var back State
			if !json.Valid(f[0].Data) || back.UnmarshalState(m) != nil {
				t.Errorf("seed %d: what opened writes an unreadable state", seed)
				return
			}
			for w, ref := range h.refs {
				if idOf(s.EntryByRef(ref)) != idOf(h.s.EntryByRef(ref)) {
					t.Errorf("seed %d: EntryByRef of %s's ref finds entry %d, the original %d", seed, w, idOf(s.EntryByRef(ref)), idOf(h.s.EntryByRef(ref)))
				}
			}
			if idOf(s.LatestByKey("shared:K1")) != idOf(h.s.LatestByKey("shared:K1")) {
				t.Errorf("seed %d: LatestByKey finds entry %d, the original %d", seed, idOf(s.LatestByKey("shared:K1")), idOf(h.s.LatestByKey("shared:K1")))
			}
			s.All()
			kinds["ok"]++
		}()
	}
	if kinds["ok"] == 0 || kinds["refused"] == 0 || kinds["corrupt panic"] == 0 {
		t.Errorf("every outcome should occur: %v", kinds)
	}
}
