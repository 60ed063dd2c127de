package fleet

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/git"
)

// Claims through the remote take turns. A claim is a compare-and-swap of
// one branch, and the machine that won the last round tends to win the
// next: its log is fresh, so its round (nothing to fetch, nothing to bring
// in) is the shortest. With two clones contending, one claimed 69 times
// while the other waited 8 s for its one claim; on a loaded CI machine a
// clone lost every round for its whole 30 s patience. So a claim that
// loses a round, or finds others waiting, enters a waiting room on the
// remote, a ref named for when it first waited (waitingRefs), and a claim
// that sees an entry older than its own (one that never waited has none)
// lets it go first: it neither fetches nor
// pushes, and looks again after a pause, without the log's lock. The
// oldest entry yields to no one, so it wins the next round. The push that
// wins takes its entry away (atomically); a claim that ends otherwise
// takes it away then. An entry left by a claim that was killed, or pushed
// by someone hostile, holds claims back while it is first in line, at
// most a round's timeout and a second (at least yieldEach): then the claim
// that waited for it takes it away. All entries together hold a claim
// back at most three times that, and none once it is entryLife old (or as
// far in the future).
const (
	yieldEach  = 3 * time.Second
	entryLife  = time.Minute
	maxEntries = 64 // live ones read: a claim's round stays bounded
)

// waitingRefs is the prefix of the waiting room's entries for branch:
// <prefix><unix ms>-<writer>-<nonce>.
func waitingRefs(branch string) string { return "refs/spool/waiting/" + branch + "/" }

// An entry is a claim waiting for its turn.
type entry struct {
	ref   string
	since time.Time
}

// older orders entries by when they first lost, then by name.
func (e entry) older(than entry) bool {
	if c := e.since.Compare(than.since); c != 0 {
		return c < 0
	}
	return e.ref < than.ref
}

// entriesIn are the waiting room's entries among refs, oldest first; a
// name that is not an entry's is skipped.
func entriesIn(refs map[string]string, prefix string) []entry {
	var out []entry
	for ref := range refs {
		if e, ok := parseEntry(prefix, ref); ok {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b entry) int {
		return cmp.Or(a.since.Compare(b.since), strings.Compare(a.ref, b.ref))
	})
	return out
}

func parseEntry(prefix, ref string) (entry, bool) {
	rest, ok := strings.CutPrefix(ref, prefix)
	ms, _, named := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || !named || err != nil || n <= 0 || strings.Contains(rest, "/") {
		return entry{}, false
	}
	return entry{ref: ref, since: time.UnixMilli(n)}, true
}

// newEntry names this claim's entry, first lost at now.
func newEntry(prefix, writer string, now time.Time) entry {
	var b [4]byte
	rand.Read(b[:])
	return entry{ref: prefix + strconv.FormatInt(now.UnixMilli(), 10) + "-" + writer + "-" + hex.EncodeToString(b[:]), since: now.Truncate(time.Millisecond)}
}

// turn is one claim's place in the waiting room, across its rounds.
type turn struct {
	own      entry                // this claim's entry, once it waited
	listed   bool                 // own is on the remote
	tried    bool                 // own was pushed, whether or not it landed, and not taken away since
	yielded  map[string]time.Time // an entry, and when this claim first let it go first
	first    time.Time            // when this claim first let any go first
	stale    []string             // entries past entryLife, or first in line too long: to take away
	removed  int                  // of stale, those already taken away
	ahead    int                  // how many the last round let go first
	attempts int
	each     time.Duration // how long one entry may hold the claim back (at least yieldEach)
}

// yield is how many of entries (oldest first) this claim lets go first at
// now: those older than its own entry, not past entryLife, and within the
// claim's budgets. Only the first in line spends a budget: a live one
// waits for no one and wins within a round, so one that stays first for
// longer than each (a round's timeout and a second) is taken for a claim
// that died waiting. It is let go, and taken away (stale, which Pause
// removes at once), so that the claims after this one do not each wait
// for it again. Entries past entryLife are taken away too.
func (t *turn) yield(entries []entry, now time.Time) int {
	t.ahead = 0
	each := max(t.each, yieldEach)
	if !t.first.IsZero() && now.Sub(t.first) >= 3*each {
		return 0 // waited long enough in all: something is wrong with the room
	}
	live, head := 0, true
	for _, e := range entries {
		if e.ref == t.own.ref {
			head = false // those after this claim's own entry wait for it
			continue
		}
		if age := now.Sub(e.since); age > entryLife || -age > entryLife {
			t.drop(e.ref)
			continue
		}
		if live++; live > maxEntries {
			break
		}
		if t.own.ref != "" && !e.older(t.own) {
			continue
		}
		if head {
			first, seen := t.yielded[e.ref]
			if !seen {
				first = now
				if t.yielded == nil {
					t.yielded = make(map[string]time.Time)
				}
				t.yielded[e.ref] = first
			}
			if now.Sub(first) >= each {
				t.drop(e.ref) // first in line and not moving: the next one is first
				continue
			}
			head = false
		}
		if t.first.IsZero() {
			t.first = now
		}
		t.ahead++
	}
	return t.ahead
}

// drop records ref to be taken away.
func (t *turn) drop(ref string) {
	if !slices.Contains(t.stale, ref) && len(t.stale) < maxEntries {
		t.stale = append(t.stale, ref)
	}
}

// pause is how long to wait before the claim's next round: after one that
// let others go first, about a round for each of them (the first in line
// needs one); after a lost push, a short jittered pause, capped, since a
// loser that waits long lets the fresh winner win again.
func (t *turn) pause() time.Duration {
	t.attempts++
	if t.listed && t.ahead == 0 {
		return 0 // the others let this claim go first
	}
	if t.ahead > 0 {
		d := time.Duration(t.ahead) * 50 * time.Millisecond
		return min(d/2+time.Duration(mrand.Int64N(int64(d))), 500*time.Millisecond)
	}
	return time.Duration(mrand.Int64N(int64(5*time.Millisecond) << min(t.attempts, 4)))
}

// enter records on the remote that the claim lost a round, or let others
// go first, at now: an entry pointing at tip (a commit the remote has, so
// nothing is sent).
// Once per claim: a failed push is not tried again, and costs the claim
// only its place.
func (t *turn) enter(ctx context.Context, dir string, o Options, writer, tip string, now time.Time) {
	if t.tried || tip == "" {
		return
	}
	t.tried = true
	t.own = newEntry(waitingRefs(o.Branch), writer, now)
	t.listed = git.PushSpecs(ctx, dir, o.Remote, tip+":"+t.own.ref) == nil
}

// leave takes away what the claim leaves in the waiting room: its entry
// (unless the push that won took it; also when its push failed, since one
// cut off at its timeout may have landed), and the entries past
// entryLife it saw. Best effort: an entry left holds claims back only
// within budgets.
func (t *turn) leave(ctx context.Context, dir string, o Options) {
	var specs []string
	if t.tried {
		specs = append(specs, ":"+t.own.ref)
	}
	t.listed, t.tried = false, false
	t.push(ctx, dir, o, specs)
}

// sweep takes away at once the entries found stale since the last sweep:
// until then every claim waits for them again.
func (t *turn) sweep(ctx context.Context, dir string, o Options) { t.push(ctx, dir, o, nil) }

// push pushes specs and the deletions of the stale entries not yet taken
// away, if any: best effort.
func (t *turn) push(ctx context.Context, dir string, o Options, specs []string) {
	for _, ref := range t.stale[t.removed:] {
		specs = append(specs, ":"+ref)
	}
	t.removed = len(t.stale)
	if len(specs) > 0 {
		git.PushSpecs(ctx, dir, o.Remote, specs...)
	}
}
