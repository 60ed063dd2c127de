package fleet

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

const room = "refs/spool/waiting/spool-log/"

func TestParseEntry(t *testing.T) {
	for _, c := range []struct {
		ref   string
		ok    bool
		since int64
	}{
		{room + "1700000000000-w1-0a0b0c0d", true, 1700000000000},
		{room + "1700000000000-w", true, 1700000000000},
		{room + "1700000000000", false, 0},                     // no writer
		{room + "x-w1-00", false, 0},                           // no time
		{room + "-5-w1-00", false, 0},                          // negative
		{room + "0-w1-00", false, 0},                           // the epoch
		{room + "1700000000000-w1/x", false, 0},                // below the room
		{"refs/spool/waiting/other/1700000000000-w", false, 0}, // another branch's
		{"refs/heads/spool-log", false, 0},
	} {
		e, ok := parseEntry(room, c.ref)
		if ok != c.ok || ok && (e.since.UnixMilli() != c.since || e.ref != c.ref) {
			t.Errorf("parseEntry(%q) = %+v, %v; want since %d, %v", c.ref, e, ok, c.since, c.ok)
		}
	}
	now := time.UnixMilli(1700000000123)
	e := newEntry(room, "w1", now.Add(456*time.Microsecond))
	if back, ok := parseEntry(room, e.ref); !ok || back != e || !e.since.Equal(now) {
		t.Errorf("newEntry %+v parses as %+v, %v", e, back, ok)
	}
}

func TestEntriesInOldestFirst(t *testing.T) {
	refs := map[string]string{
		"refs/heads/spool-log": "c",
		room + "300-b-1":       "c",
		room + "100-z-1":       "c",
		room + "300-a-1":       "c",
		room + "junk":          "c",
		room + "200-m-1":       "c",
	}
	var got []string
	for _, e := range entriesIn(refs, room) {
		got = append(got, e.ref[len(room):])
	}
	if fmt.Sprint(got) != "[100-z-1 200-m-1 300-a-1 300-b-1]" {
		t.Errorf("entries %v", got)
	}
}

func TestYield(t *testing.T) {
	t0 := time.UnixMilli(1700000000000)
	at := func(d time.Duration, name string) entry {
		return entry{ref: fmt.Sprintf("%s%d-%s-1", room, t0.Add(d).UnixMilli(), name), since: t0.Add(d)}
	}
	old, mid, young := at(-2*time.Second, "old"), at(-time.Second, "mid"), at(0, "young")
	stale := at(-entryLife-time.Second, "stale")

	// A claim that never lost lets every live entry go first, and keeps
	// the stale ones to take away.
	var k turn
	if n := k.yield([]entry{stale, old, mid, young}, t0); n != 3 || len(k.stale) != 1 || k.stale[0] != stale.ref {
		t.Errorf("a fresh claim yields to %d, stale %v; want 3, [%s]", n, k.stale, stale.ref)
	}
	k.yield([]entry{stale}, t0)
	if len(k.stale) != 1 {
		t.Errorf("a stale entry kept twice: %v", k.stale)
	}

	// In line, only older entries go first; its own entry is not one.
	k = turn{own: mid}
	if n := k.yield([]entry{old, mid, young}, t0); n != 1 {
		t.Errorf("in line after old: yields to %d, want 1", n)
	}
	k = turn{own: old}
	if n := k.yield([]entry{old, mid, young}, t0); n != 0 {
		t.Errorf("first in line yields to %d", n)
	}
	// Equal times: the name decides, the same way on every machine.
	twin := entry{ref: room + fmt.Sprint(old.since.UnixMilli()) + "-a-1", since: old.since}
	if n := (&turn{own: old}).yield([]entry{twin}, t0); n != 1 {
		t.Errorf("%s does not go before %s", twin.ref, old.ref)
	}
	if n := (&turn{own: twin}).yield([]entry{old}, t0); n != 0 {
		t.Errorf("%s goes before %s", old.ref, twin.ref)
	}

	// An entry that holds the claim back yieldEach is let go; another
	// still holds it, until three times that in all.
	k = turn{}
	k.yield([]entry{old}, t0)
	if n := k.yield([]entry{old, mid}, t0.Add(yieldEach-time.Millisecond)); n != 2 {
		t.Errorf("within yieldEach: yields to %d, want 2", n)
	}
	if n := k.yield([]entry{old, mid}, t0.Add(yieldEach)); n != 1 {
		t.Errorf("old held the claim yieldEach: yields to %d, want 1 (mid)", n)
	}
	all := 3 * yieldEach
	k = turn{}
	for i := range 10 {
		e := at(time.Duration(i)*time.Second, fmt.Sprint("e", i)) // each new when first seen
		now := t0.Add(time.Duration(i) * all / 10)
		if n := k.yield([]entry{e}, now); n != 1 {
			t.Errorf("entry %d at %s: yields to %d", i, now.Sub(t0), n)
		}
	}
	if n := k.yield([]entry{at(20*time.Second, "late")}, t0.Add(all)); n != 0 {
		t.Errorf("past three times yieldEach the claim still yields (%d)", n)
	}
	// Only the first in line spends a budget: one behind it may wait
	// longer than yieldEach, and once the first is let go (and kept to be
	// taken away) the next one's budget starts.
	k = turn{}
	for _, d := range []time.Duration{0, yieldEach / 2, yieldEach - time.Millisecond} {
		if n := k.yield([]entry{old, mid}, t0.Add(d)); n != 2 {
			t.Errorf("at %s: yields to %d, want 2", d, n)
		}
	}
	if n := k.yield([]entry{old, mid}, t0.Add(yieldEach)); n != 1 || !slices.Equal(k.stale, []string{old.ref}) {
		t.Errorf("old first in line for yieldEach: yields to %d, to take away %v", n, k.stale)
	}
	if n := k.yield([]entry{old, mid}, t0.Add(2*yieldEach-time.Millisecond)); n != 1 {
		t.Errorf("mid, first in line since yieldEach: yields to %d", n)
	}
	if n := k.yield([]entry{old, mid}, t0.Add(2*yieldEach)); n != 0 || len(k.stale) != 2 {
		t.Errorf("mid first in line for yieldEach: yields to %d, to take away %v", n, k.stale)
	}
	// In line itself, a claim spends no budget on the entries behind the
	// first: they are not ahead of it.
	k = turn{own: young}
	k.yield([]entry{old, mid, young}, t0)
	if n := k.yield([]entry{old, mid, young}, t0.Add(yieldEach-time.Millisecond)); n != 2 {
		t.Errorf("behind old and mid: yields to %d", n)
	}

	// A round may take its timeout: the budget is at least that.
	k = turn{each: 10 * time.Second}
	k.yield([]entry{old}, t0)
	if n := k.yield([]entry{old}, t0.Add(9*time.Second)); n != 1 {
		t.Errorf("within each: yields to %d", n)
	}
	if n := k.yield([]entry{old}, t0.Add(10*time.Second)); n != 0 {
		t.Errorf("past each: yields to %d", n)
	}

	// An entry as far in the future as entryLife is stale too; stale
	// entries do not count against maxEntries, and are kept to at most
	// that many.
	future := at(entryLife+time.Second, "future")
	k = turn{}
	if n := k.yield([]entry{future}, t0); n != 0 || len(k.stale) != 1 {
		t.Errorf("a future entry: yields to %d, stale %v", n, k.stale)
	}
	var many []entry
	for i := range maxEntries + 5 {
		many = append(many, at(-entryLife-time.Duration(i+1)*time.Second, fmt.Sprint("s", i)))
	}
	k = turn{}
	if n := k.yield(append(many, young), t0); n != 1 || len(k.stale) != maxEntries {
		t.Errorf("behind %d stale entries: yields to %d, %d kept to take away", len(many), n, len(k.stale))
	}
	var crowd []entry
	for i := range maxEntries + 5 {
		crowd = append(crowd, at(-time.Duration(i+1)*time.Millisecond, fmt.Sprint("c", i)))
	}
	if n := (&turn{}).yield(crowd, t0); n != maxEntries {
		t.Errorf("%d live entries: yields to %d, want %d", len(crowd), n, maxEntries)
	}
}

func TestPause(t *testing.T) {
	for ahead := 1; ahead <= 20; ahead++ {
		k := turn{ahead: ahead}
		for range 50 {
			d := k.pause()
			if lo, hi := time.Duration(ahead)*25*time.Millisecond, time.Duration(ahead)*75*time.Millisecond; d < min(lo, 500*time.Millisecond) || d > min(hi, 500*time.Millisecond) {
				t.Fatalf("%d ahead: paused %s", ahead, d)
			}
		}
	}
	if d := (&turn{listed: true}).pause(); d != 0 {
		t.Errorf("first in line paused %s", d)
	}
	k := turn{}
	for range 10 {
		if d := k.pause(); d < 0 || d > 80*time.Millisecond {
			t.Errorf("after a lost round: paused %s", d)
		}
	}
}
