package workqueue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jsonout"
)

// NativeStats on a state read from its snapshots (the index's counts and
// bits, the history, what changed since) is what Policy.Stats counts over
// every task of the state held whole: on the snapshot as written, after
// changes (blockers closed and reopened, labels, parents, claims, failures,
// blocks), at several times and under both policies.
func TestNativeStatsAsEveryTaskCounted(t *testing.T) {
	t.Parallel()
	for seed := range 12 {
		r := rand.New(rand.NewPCG(uint64(seed), 34))
		w := newWorld(t)
		pol := DefaultPolicy()
		if seed%2 == 1 {
			pol.Kind = Progressive
		}
		step := 1800
		if seed%3 != 2 {
			step, pol.MaxFailures = 90, 2 // backoffs still running, abandonments
		}
		c := &churn{w: w, r: r, pol: pol, at: t0, step: step}
		c.change(300)
		for i := range 3 { // failed twice just now: in backoff, or abandoned
			id := w.add(fmt.Sprint("f", i), i, c.at)
			for range 2 {
				d, err := ClaimTask(w.s, pol, id, "agent", "ada", c.at)
				if err != nil {
					t.Fatal(err)
				}
				w.apply("ada", c.at, d...)
				if d, err = Fail(w.s, pol, id, "ada", "boom", c.at); err != nil {
					t.Fatal(err)
				}
				w.apply("ada", c.at, d...)
				c.lastFail = c.at
			}
		}
		fresh, onFile := w.reopener(t), w.fileReopener(t)
		for round := range 3 {
			if round > 0 {
				c.change(40)
			}
			for j, now := range []time.Time{c.at, c.at.Add(-2 * time.Hour), c.at.Add(time.Minute), c.at.Add(10 * time.Minute), c.at.Add(48 * time.Hour), c.lastFail.Add(30 * time.Second)} {
				g := testGates[(seed+round+j)%len(testGates)]
				whole := fresh()
				whole.allTasks()
				want := whole.NativeStats(pol, g, now) // held whole: every task counted
				got := fresh().NativeStats(pol, g, now)
				if fold := w.s.NativeStats(pol, g, now); fold != want {
					t.Fatalf("seed %d round %d at %v: the fold's %+v, want %+v", seed, round, now, fold, want)
				}
				if want != got {
					t.Fatalf("seed %d round %d at %v: %+v, want %+v", seed, round, now, got, want)
				}
				// On a file, with tasks changed since the save: the summary,
				// corrected for them, without the index.
				lazy := onFile()
				if got := lazy.NativeStats(pol, g, now); want != got {
					t.Fatalf("seed %d round %d at %v, on a file: %+v, want %+v", seed, round, now, got, want)
				}
				if lazy.trk.lazy != nil && lazy.trk.lazy.loaded.Load() != nil {
					t.Fatalf("seed %d round %d: stats read the index", seed, round)
				}
				// ready --json from the listings, past the tasks whose
				// blockers closed or reopened since: as every task held whole.
				// Under a gate and label filters too, read from the table's
				// section of labels and types.
				f := testFilters[(seed+j)%len(testFilters)]
				var views []any
				for _, task := range whole.Claimable(pol, g, f, now, 0) {
					views = append(views, whole.View(task, pol, now))
				}
				var wantJSON, gotJSON strings.Builder
				if err := jsonout.WriteList(&wantJSON, len(views), func(i int) any { return views[i] }, false); err != nil {
					t.Fatal(err)
				}
				ok, err := onFile().WriteReadyJSON(&gotJSON, pol, g, f, now)
				if err != nil || ok && gotJSON.String() != wantJSON.String() {
					t.Fatalf("seed %d round %d at %v, gate %+v, filter %+v: ready --json (%v)\n%s\nwant\n%s", seed, round, now, g, f, err, gotJSON.String(), wantJSON.String())
				}
				if !ok && pol.Kind != Progressive {
					t.Fatalf("seed %d round %d, gate %+v, filter %+v: ready --json not from the listings", seed, round, g, f)
				}
			}
		}
	}
}

// The labels and types churn gives tasks, and the gates and filters the
// tests ask through them (the first gate: none).
var (
	gateLabels = []string{"backend", "ui"}
	gateTypes  = []string{"", "bug", "chore"}
	testGates  = []Gate{{}, {Require: []string{"backend"}}, {Exclude: []string{"ui"}}, {ExcludeTypes: []string{"bug"}},
		{Require: []string{"backend", "ui", "backend"}, Exclude: []string{BlockedLabel}, ExcludeTypes: []string{"chore", ""}},
		{Require: []string{"nothere"}}}
	testFilters = []ReadyFilter{{}, {All: []string{"ui"}}, {Any: []string{"backend", "nothere"}}, {All: []string{"backend"}, Any: []string{"ui"}}}
)

// churn makes random changes to a world's tasks, as a team and its agents
// do: adds (some with the blocked label), closes and reopens, dependencies
// (one on a task that does not exist), parents, labels, claims, failures,
// completions, retries, unblocks, releases and blocks; the later ones
// mostly on tasks claimed before. Each change comes after a random wait
// of up to step seconds.
type churn struct {
	w        *world
	r        *rand.Rand
	pol      Policy
	at       time.Time
	step     int
	lastFail time.Time
	ids      []string
	worked   []string // claimed at some point
}

func (c *churn) pick() string { return c.ids[c.r.IntN(len(c.ids))] }

func (c *churn) pickWorked() string {
	if len(c.worked) == 0 || c.r.IntN(4) == 0 {
		return c.pick()
	}
	return c.worked[c.r.IntN(len(c.worked))]
}

func (c *churn) try(drafts []eventlog.Draft, err error) {
	if err == nil {
		c.w.apply("ada", c.at, drafts...)
	}
}

func (c *churn) one(d eventlog.Draft, err error) { c.try([]eventlog.Draft{d}, err) }

// change makes n changes.
func (c *churn) change(n int) {
	w, r, pol := c.w, c.r, c.pol
	for range n {
		c.at = c.at.Add(time.Duration(r.IntN(c.step)) * time.Second)
		at := c.at
		switch k := r.IntN(24); {
		case k < 7 || len(c.ids) == 0:
			var labels []string
			if r.IntN(6) == 0 {
				labels = []string{BlockedLabel}
			}
			for _, l := range gateLabels { // what the gates in the tests look at
				if r.IntN(3) == 0 {
					labels = append(labels, l)
				}
			}
			nt := NewTask{Title: fmt.Sprint("t", len(c.ids)), Priority: r.IntN(5), Labels: labels, Type: gateTypes[r.IntN(len(gateTypes))]}
			d, id, err := AddTask(w.s, nt, "sp", "writer1", at)
			if err != nil {
				w.t.Fatal(err)
			}
			w.apply("ada", at, d)
			c.ids = append(c.ids, id)
		case k < 9:
			c.try(CloseTasks(w.s, []string{c.pick()}, "done"))
		case k < 10:
			c.one(Reopen(w.s, c.pick()))
		case k < 12:
			c.one(AddDep(w.s, c.pick(), c.pick()))
		case k < 13:
			c.one(AddDep(w.s, c.pick(), "sp-nothere"))
		case k < 14 && r.IntN(3) == 0:
			parent := c.pick()
			c.try(UpdateTask(w.s, c.pick(), Update{Parent: &parent}))
		case k < 15:
			l := BlockedLabel
			if r.IntN(3) == 0 {
				l = gateLabels[r.IntN(len(gateLabels))]
			}
			if r.IntN(2) == 0 {
				c.try(UpdateTask(w.s, c.pickWorked(), Update{AddLabels: []string{l}}))
			} else {
				c.try(UpdateTask(w.s, c.pickWorked(), Update{RemoveLabels: []string{l}}))
			}
		case k < 17:
			id := c.pick()
			if drafts, err := ClaimTask(w.s, pol, id, "agent", "ada", at); err == nil {
				w.apply("ada", at, drafts...)
				c.worked = append(c.worked, id)
			}
		case k < 19:
			if drafts, err := Fail(w.s, pol, c.pickWorked(), "ada", "boom", at); err == nil {
				w.apply("ada", at, drafts...)
				c.lastFail = at
			}
		case k < 20:
			c.try(Done(w.s, pol, c.pickWorked(), "ada", "ok", at))
		case k < 21:
			c.one(Retry(w.s, pol, c.pickWorked(), at))
		case k < 22:
			c.one(Unblock(w.s, c.pickWorked(), r.IntN(2) == 0))
		case k < 23:
			id := c.pickWorked()
			c.one(Release(w.s, pol, id, "ada", at))
			if r.IntN(2) == 0 { // a pending entry: the label counts
				c.try(UpdateTask(w.s, id, Update{AddLabels: []string{BlockedLabel}}))
			}
		default:
			c.one(Block(w.s, c.pickWorked(), "stuck"))
		}
	}
}
