package mergequeue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// simClone is one clone of the repository: its own writer file, what it
// has pulled of the others' files (always a prefix of each: a writer's file
// only grows), and its fold of everything it has, in replay order.
type simClone struct {
	writer string
	files  map[string][]eventlog.Event // by writer
	state  *State
}

func newSimClone(writer string) *simClone {
	return &simClone{writer: writer, files: map[string][]eventlog.Event{}, state: New()}
}

// append writes drafts to the clone's own file as the log does: the next
// seq, a Lamport clock past everything the clone has, a unique id.
func (c *simClone) append(t *testing.T, now time.Time, actor string, drafts []eventlog.Draft) {
	t.Helper()
	for _, d := range drafts {
		var lc uint64
		for _, evs := range c.files {
			if n := len(evs); n > 0 && evs[n-1].LC > lc {
				lc = evs[n-1].LC
			}
		}
		b, err := json.Marshal(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		seq := uint64(len(c.files[c.writer]) + 1)
		ev := eventlog.Event{V: 1, ID: fmt.Sprintf("%s-%d", c.writer, seq), Writer: c.writer, Seq: seq, LC: lc + 1,
			At: now, Actor: actor, Type: d.Type, Subject: d.Subject, Data: b}
		c.files[c.writer] = append(c.files[c.writer], ev)
		c.state.Apply(&ev) // it sorts after everything the clone has
	}
}

// pull takes some of what other has: per writer, a prefix at least as
// long as what c has (other may have committed only part of its file).
func (c *simClone) pull(rng *rand.Rand, other *simClone, all bool) {
	changed := false
	for w, evs := range other.files {
		have := len(c.files[w])
		if len(evs) <= have {
			continue
		}
		n := len(evs)
		if !all {
			n = have + 1 + rng.Intn(len(evs)-have)
		}
		c.files[w] = append(c.files[w], evs[have:n]...)
		changed = true
	}
	if changed { // merged history sorts before what was applied: rebuild, as the projection does
		c.state = foldAll(c.events())
	}
}

// events is everything the clone has, in replay order (lc, writer, seq).
func (c *simClone) events() []eventlog.Event {
	var all []eventlog.Event
	for _, evs := range c.files {
		all = append(all, evs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Before(&all[j]) })
	return all
}

func foldAll(events []eventlog.Event) *State {
	s := New()
	for i := range events {
		s.Apply(&events[i])
	}
	return s
}

// TestClonesConverge: random operations on two or three clones, each
// deciding against its own fold, with the clones pulling parts of each
// other's logs at random points (as merges and rebases in any order do).
// Whatever they append, every clone's fold satisfies every invariant at
// every point, and once all have everything they fold to the same bytes.
// The operations include the conflicts clones cannot see coming: one
// dedupe key queued on two clones (an explicit key, or the name identity of
// an older spool's entries), one entry claimed, stepped, cancelled,
// recovered or resubmitted on two clones.
func TestClonesConverge(t *testing.T) {
	seeds, steps := 60, 300
	if testing.Short() {
		seeds = 8
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := 2 + rng.Intn(2)
		clones := make([]*simClone, n)
		for i := range clones {
			clones[i] = newSimClone(fmt.Sprintf("w%d", i+1))
		}
		now := t0
		p := pol
		p.Admins = []string{"root"}
		p.Capacity = rng.Intn(2) * 5
		conflicts := 0
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rng.Intn(60)) * time.Second)
			if rng.Intn(15) == 0 {
				now = now.Add(p.Lease) // leases expire
			}
			c := clones[rng.Intn(n)]
			where := fmt.Sprintf("seed %d step %d (%s)", seed, i, c.writer)
			if rng.Intn(5) == 0 {
				other := clones[rng.Intn(n)]
				if other != c {
					c.pull(rng, other, rng.Intn(3) == 0)
				}
			} else {
				actor := []string{"ada", "bob", "root"}[rng.Intn(3)]
				drafts := randomOp(rng, c, p, actor, now, i)
				c.append(t, now, actor, drafts)
			}
			for _, cl := range clones {
				if bad := CheckInvariants(cl.state); len(bad) > 0 {
					t.Fatalf("%s: clone %s: %v", where, cl.writer, bad)
				}
			}
		}
		// Everyone pulls everything: the same log, the same state.
		for range 2 {
			for _, a := range clones {
				for _, b := range clones {
					if a != b {
						a.pull(rng, b, true)
					}
				}
			}
		}
		want := clones[0].state.render()
		for _, c := range clones[1:] {
			if got := c.state.render(); !bytes.Equal(got, want) {
				t.Fatalf("seed %d: clones %s and %s fold differently:\n%s\n%s", seed, clones[0].writer, c.writer, want, got)
			}
		}
		if bad := CheckInvariants(clones[0].state); len(bad) > 0 {
			t.Fatalf("seed %d: %v", seed, bad)
		}
		for _, e := range clones[0].state.All() {
			if len(e.Conflicts) > 0 {
				conflicts++
			}
		}
		t.Logf("seed %d: %d clones, %d entries, %d events skipped, %d entries with a resolved conflict",
			seed, n, clones[0].state.Len(), clones[0].state.Skipped, conflicts)
	}
}

// randomOp decides one random operation against the clone's own fold; a
// rejected one decides nothing.
func randomOp(rng *rand.Rand, c *simClone, p Policy, actor string, now time.Time, i int) []eventlog.Draft {
	s := c.state
	var id int64
	if s.Len() > 0 {
		id = int64(rng.Intn(s.Len()) + 1)
	}
	runner := c.writer + "/r" + fmt.Sprint(rng.Intn(2))
	switch rng.Intn(11) {
	case 0, 1, 2:
		// This clone's worktrees, and "legacy": the name identity older
		// spools gave every clone's worktree of that name.
		ws := []string{c.writer + "/wt", c.writer + "/w2", "legacy"}[rng.Intn(3)]
		r := SubmitRequest{Workspace: "wt", WorkspaceID: ws, Branch: "b", HeadSHA: sha(rng.Intn(4) + 1), Priority: P(rng.Intn(5)), Actor: actor}
		if rng.Intn(3) == 0 {
			r.ChangeID = fmt.Sprintf("C%d", rng.Intn(2))
		}
		if rng.Intn(6) == 0 {
			r.DedupeKey = "shared:K"
		}
		sub, _ := DecideSubmit(s, r, p, now)
		return sub.Drafts
	case 3:
		d, _ := DecideCancel(s, id, actor, "", p)
		return d
	case 4:
		d, _ := DecideRetry(s, id, actor, p)
		return d
	case 5, 6:
		d, _ := DecideClaim(s, runner, Target{Branch: "main", SHA: sha(50)}, p, now)
		return d
	case 7, 8:
		e := s.Entry(id)
		if e == nil || !strings.HasPrefix(e.Runner, c.writer+"/") {
			return nil // only this clone's runners step their entries
		}
		tos := transitions[e.Status]
		if len(tos) == 0 {
			return nil
		}
		d, _ := DecideStep(s, Step{EntryID: id, Runner: e.Runner, From: e.Status, To: tos[rng.Intn(len(tos))], HeadSHA: e.HeadSHA,
			TestedSHA: sha(100 + i), TestedAgainstSHA: sha(50), ScratchDir: "/tmp/" + e.Runner}, p, now)
		return d
	case 9:
		merged := map[int64]bool{}
		for _, e := range s.Expired(now) {
			merged[e.ID] = rng.Intn(2) == 0
		}
		return DecideRecover(s, merged, nil, p, now)
	default:
		if e := s.Entry(id); e != nil && strings.HasPrefix(e.Runner, c.writer+"/") {
			d, _ := DecideRenew(s, id, e.Runner, p, now)
			return d
		}
		if rng.Intn(2) == 0 {
			return DecideFreeze(s, "x")
		}
		return DecideUnfreeze(s)
	}
}

// rawEvent is an event as a clone's log holds it.
func rawEvent(writer string, seq, lc uint64, typ, data string) eventlog.Event {
	return eventlog.Event{V: 1, ID: fmt.Sprintf("%s-%d", writer, seq), Writer: writer, Seq: seq, LC: lc, At: t0.Add(time.Duration(lc) * time.Second),
		Actor: writer + "@example.com", Type: typ, Subject: "merge/1", Data: json.RawMessage(data)}
}

// Two clones' trains claim the same pending entry; once the logs merge,
// the entry is the first claimant's, and only its steps apply: the other
// runner's claim and steps are skipped, visibly.
func TestFoldTwoClaimsOfOneEntry(t *testing.T) {
	head := sha(1)
	sub := rawEvent("a", 1, 1, EvSubmitted, `{"entry_id":1,"to":"pending","workspace":"wt","workspace_id":"a/wt","branch":"b","change_id":"C","change_id_source":"trailer","dedupe_key":"a/wt:C","head_sha":"`+head+`","priority":2}`)
	step := func(writer string, seq, lc uint64, typ, from, to, runner string) eventlog.Event {
		return rawEvent(writer, seq, lc, typ, `{"entry_id":1,"entry_ref":"a-1","from":"`+from+`","to":"`+to+`","head_sha":"`+head+
			`","runner":"`+runner+`","scratch_dir":"/tmp/`+runner+`","lease_until":"2030-01-01T00:00:00Z"}`)
	}
	// Clone a: the submission, then its train; clone b pulled the
	// submission and ran its own train at the same time.
	log := []eventlog.Event{
		sub,
		step("a", 2, 2, EvClaimed, "pending", "claimed", "ra"),
		step("b", 1, 2, EvClaimed, "pending", "claimed", "rb"),
		step("b", 2, 3, EvTransitioned, "claimed", "rebasing", "rb"),
		step("a", 3, 3, EvTransitioned, "claimed", "rebasing", "ra"),
		step("b", 3, 4, EvTransitioned, "rebasing", "testing", "rb"),
		step("a", 4, 4, EvTransitioned, "rebasing", "testing", "ra"),
	}
	s := foldAll(log)
	e := s.Entry(1)
	if e.Status != Testing || e.Runner != "ra" || e.ScratchDir != "/tmp/ra" {
		t.Fatalf("entry is %s, held by %s in %s; want testing, held by ra in /tmp/ra", e.Status, e.Runner, e.ScratchDir)
	}
	checkInvariants(t, s)
	var skipped []string
	for _, r := range e.Conflicts {
		if r.To != "" || !strings.Contains(r.Reason, "ra") {
			t.Errorf("resolution %+v", r)
		}
		skipped = append(skipped, r.Event)
	}
	if strings.Join(skipped, " ") != "b-1 b-2 b-3" {
		t.Errorf("skipped %v, want b's claim and steps", skipped)
	}
	// Events of older logs carry no runner: they apply as before.
	old := foldAll([]eventlog.Event{sub, step("a", 2, 2, EvClaimed, "pending", "claimed", "ra"),
		rawEvent("a", 3, 3, EvTransitioned, `{"entry_id":1,"from":"claimed","to":"rebasing","head_sha":"`+head+`"}`)})
	if old.Entry(1).Status != Rebasing || len(old.Entry(1).Conflicts) != 0 {
		t.Errorf("an older log's step without a runner: %s %v", old.Entry(1).Status, old.Entry(1).Conflicts)
	}
}

// Two clones of an older spool each queued a worktree named wt (the name
// was the identity), or two clones queued one dedupe key: the merged log
// has two submissions of one workspace. The later one in replay order
// ends cancelled, saying whose duplicate it is, and verify's invariants hold.
func TestFoldConcurrentSubmissions(t *testing.T) {
	submitted := func(writer string, lc uint64, ws, key, head string) eventlog.Event {
		_, change, _ := strings.Cut(key, ":")
		return rawEvent(writer, 1, lc, EvSubmitted, `{"entry_id":1,"to":"pending","workspace":"`+ws+`","branch":"b-`+writer+
			`","change_id":"`+change+`","change_id_source":"trailer","dedupe_key":"`+key+`","head_sha":"`+head+`","priority":2}`)
	}
	for name, log := range map[string][]eventlog.Event{
		"one name, older spool": {submitted("a", 1, "wt", "wt:Ca", sha(1)), submitted("b", 1, "wt", "wt:Cb", sha(2))},
		"one dedupe key":        {submitted("a", 1, "wa", "shared:K", sha(1)), submitted("b", 1, "wb", "shared:K", sha(2))},
	} {
		s := foldAll(log)
		checkInvariants(t, s)
		first, second := s.Entry(1), s.Entry(2)
		if first.Status != Pending || second.Status != Cancelled || second.Position != 0 || s.PendingCount != 1 {
			t.Fatalf("%s: entries %s and %s", name, first.Status, second.Status)
		}
		if c := second.Conflict(); !strings.Contains(c, "entry 1") || !strings.Contains(c, "concurrently") {
			t.Errorf("%s: the loser does not say why: %q", name, c)
		}
		if second.LastStep.To != Cancelled || second.Owner != "b@example.com" || second.HeadSHA != sha(2) {
			t.Errorf("%s: loser %+v", name, second)
		}
	}
}

// A resubmission on one clone and a new entry of the same key on another:
// the later activation loses; a skipped resubmission leaves the entry as it was.
func TestFoldConcurrentResubmission(t *testing.T) {
	a := newSimClone("a")
	b := newSimClone("b")
	rng := rand.New(rand.NewSource(1))
	r := req("wa", 1, "ada")
	r.DedupeKey = "shared:K"
	sub, _ := DecideSubmit(a.state, r, pol, t0)
	a.append(t, t0, "ada", sub.Drafts)
	a.append(t, t0, "ada", must(DecideCancel(a.state, 1, "ada", "", pol)))
	b.pull(rng, a, true)
	r.HeadSHA = sha(2)
	sub, _ = DecideSubmit(a.state, r, pol, t0) // a: resubmit its cancelled entry
	if sub.Type != SubmissionResubmitted {
		t.Fatalf("a: %+v", sub)
	}
	a.append(t, t0, "ada", sub.Drafts)
	rb := req("wb", 3, "bob")
	rb.DedupeKey = "shared:K"
	sub, _ = DecideSubmit(b.state, rb, pol, t0) // b: the key is free, a new entry
	if sub.Type != SubmissionNew {
		t.Fatalf("b: %+v", sub)
	}
	b.append(t, t0, "bob", sub.Drafts)
	a.pull(rng, b, true)
	b.pull(rng, a, true)
	checkInvariants(t, a.state)
	if !bytes.Equal(a.state.render(), b.state.render()) {
		t.Fatal("the clones fold differently")
	}
	first, second := a.state.Entry(1), a.state.Entry(2)
	if first.Status.Active() == second.Status.Active() {
		t.Fatalf("entries %s and %s: want exactly one active", first.Status, second.Status)
	}
	loser := first
	if first.Status.Active() {
		loser = second
	}
	if loser.Conflict() == "" || loser.Status != Cancelled {
		t.Fatalf("the loser is %s with no reason: %+v", loser.Status, loser.Conflicts)
	}
}
