// Package projectiontest is the conformance suite every projection runs:
// whatever a domain folds, its projection must survive a snapshot, catch up
// incrementally to exactly what a fresh replay gives, skip event types it
// does not know, and give the same bytes however often and wherever the log
// is replayed.
//
// The suite writes real logs: several clones, each with its own writer
// file, append one command's events per fsynced append, as the CLI does,
// and exchange their files from time to time, as git does. What the clones
// append is up to the domain: a Clone folds the events its clone has and
// decides the next command with the domain's own decide functions, so the
// log holds the sequences spool really writes, including the conflicting
// ones clones produce when they act concurrently.
//
// # The checks
//
// Each is a subtest of Run, on logs built for it:
//
//   - snapshot-round-trip: at random points of a log, the state marshalled,
//     unmarshalled into a new projection and marshalled again is the same
//     bytes, with the same files; the copy, then fed the rest of the log
//     (whether it was read right away or left encoded), equals the original.
//   - catch-up-equals-replay: clones catch up at random points as commands
//     do (Open, CatchUp, Save under the lock; or a view kept open, as the
//     merge train's), through merges that sort events before what was
//     applied and files git replaced; after each, the view, the snapshot
//     on disk and the public files equal a fresh Engine.Replay, byte for
//     byte, the replay holds the projection's invariants (when it is a
//     projections.Checker), and Engine.Verify agrees at the end.
//   - unknown-types-skipped: events of types no spool knows (future.thing,
//     and <namespace>.frobnicated and <type>.v2 with the subject and data of
//     the domain's own events) leave the state as the log without them gives.
//   - replay-twice-identical: two replays of a log, and two renderings of
//     one state, are the same bytes; so is what a projections.StateWriter
//     or FileWriter streams.
//   - order-independent-across-writers: clones that merged the same writer
//     files in another order, and a copy of the files in another
//     directory, replay to the same bytes.
//
// # Plugging a domain in
//
// A domain (the PRD queue, the job scheduler, the orchestrator, ...) adds
// one test file in an external test package, so that only its exported
// API is used: a model of a clone and one Run per projection it registers.
//
//	func TestJobsConformance(t *testing.T) {
//		projectiontest.Run(t, projectiontest.Suite{Spec: jobs.Spec, NewClone: newJobClone})
//	}
//
//	// jobClone decides what spool's job commands would on one clone,
//	// against the jobs that clone has folded.
//	type jobClone struct {
//		s      *jobs.State
//		writer string // for domains whose ids derive from it
//	}
//
//	func newJobClone(writer string) projectiontest.Clone {
//		return &jobClone{s: jobs.New(), writer: writer}
//	}
//
//	func (c *jobClone) Apply(e *eventlog.Event) { c.s.Apply(e) }
//
//	func (c *jobClone) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
//		actor := []string{"ada@example.com", "bob@example.com"}[r.IntN(2)]
//		switch r.IntN(3) {
//		case 0:
//			drafts, err := jobs.DecideSchedule(c.s, jobs.Request{Name: "nightly ✓", Every: time.Hour}, now)
//			return actor, drafts, err
//		case 1:
//			drafts, err := jobs.DecideDispatch(c.s, "worker-1", now)
//			return "worker-1", drafts, err
//		}
//		drafts, err := jobs.DecideFinish(c.s, someRunningJob(r, c.s), actor, now)
//		return actor, drafts, err
//	}
//
// Command picks an operation at random, with random but valid arguments
// (names and texts with spaces, quotes and non-ASCII characters; ids taken
// from the state, now and then one that does not exist) and returns what
// the domain's decide function gave, refusals included; weight the operations so that
// entities get through their whole life, and iterate maps in sorted order
// so that a seed always gives the same log. Keep the model free of I/O and
// independent of the projection under test. Commands (a func type) serves
// a domain whose commands need no state. A projection that deliberately
// folds every event, whatever its type (stats counts them), sets
// FoldsUnknown. internal/workqueue/conformance_test.go and
// internal/mergequeue/conformance_test.go are complete examples.
//
// # Reproducing a failure
//
// Every check runs for seeds 1 and 2 (1 only with -short), as subtests
// named TestX/<check>/seed<N>; a failure names its seed, and
// go test -run 'TestX/<check>/seed<N>' runs it again, byte for byte the same
// log. -projectiontest.seeds=N runs seeds 1 to N, -projectiontest.seed=N
// that one seed only, and -projectiontest.scale=K builds logs K times
// longer (a soak: go test ./... -run Conformance -projectiontest.seeds=50
// -projectiontest.scale=5).
package projectiontest

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// Suite describes one projection to the conformance checks.
type Suite struct {
	// Spec is the projection under test.
	Spec projections.Spec
	// NewClone returns the domain's model of a clone whose writer id is
	// writer, knowing no events yet.
	NewClone func(writer string) Clone
	// Steps is how many steps (commands, merges, clock jumps) a log is
	// built from; 0 means 120.
	Steps int
	// FoldsUnknown marks a projection that folds every event whatever its
	// type, by design. The unknown-types check then only requires that such
	// events fold without error, as the same fold in memory and in the engine.
	FoldsUnknown bool
}

// Clone is a domain's model of one clone of the repository.
type Clone interface {
	// Apply folds one event the clone has, in replay order. After a merge
	// brought events of other clones the suite folds the clone's whole log
	// into a new Clone, so Apply never sees an event sort before another.
	// Events of types the domain does not know come through too.
	Apply(e *eventlog.Event)
	// Command decides the clone's next command at now: who runs it and the
	// events it appends, or the error the domain refused it with. A
	// refused command appends nothing; the suite has the clone try another
	// (a few times) and counts the refusals in the log's summary.
	Command(r *rand.Rand, now time.Time) (actor string, drafts []eventlog.Draft, err error)
}

// Commands is a Clone that needs no state: every command is f's.
type Commands func(r *rand.Rand, now time.Time) (actor string, drafts []eventlog.Draft, err error)

// Apply ignores e.
func (f Commands) Apply(*eventlog.Event) {}

// Command calls f.
func (f Commands) Command(r *rand.Rand, now time.Time) (string, []eventlog.Draft, error) {
	return f(r, now)
}

// Step runs c's next command at now, outside any log: its events, applied
// to c in order, with ids ev-1, ev-2, … counted on from *seq. A command c
// refuses gives none. It lets a domain's own tests build a history from
// its clone.
func Step(tb testing.TB, c Clone, r *rand.Rand, now time.Time, seq *int) []*eventlog.Event {
	tb.Helper()
	actor, drafts, err := c.Command(r, now)
	if err != nil {
		return nil
	}
	var out []*eventlog.Event
	for _, d := range drafts {
		e, err := d.Event(actor, now)
		if err != nil {
			tb.Fatal(err)
		}
		*seq++
		e.ID = fmt.Sprintf("ev-%d", *seq)
		c.Apply(e)
		out = append(out, e)
	}
	return out
}

var (
	seedFlag  = flag.Uint64("projectiontest.seed", 0, "run the projection conformance checks with this seed only")
	seedsFlag = flag.Int("projectiontest.seeds", 2, "run the projection conformance checks with seeds 1 to N")
	scaleFlag = flag.Int("projectiontest.scale", 1, "build logs this many times longer")
)

// A check returns what it found wrong; it fails tb itself only when the
// test cannot go on (a file it cannot write).
type check struct {
	name string
	run  func(tb testing.TB, s Suite, seed uint64) error
}

var checks = []check{
	{"snapshot-round-trip", checkRoundTrip},
	{"catch-up-equals-replay", checkCatchUp},
	{"unknown-types-skipped", checkUnknown},
	{"replay-twice-identical", checkReplayTwice},
	{"order-independent-across-writers", checkOrderIndependent},
}

// Run runs every check of the suite against s, each as its own subtest.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.Spec.Name == "" || s.Spec.New == nil || s.NewClone == nil {
		t.Fatal("projectiontest: Suite needs Spec.Name, Spec.New and NewClone")
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, seed := range seeds() {
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
					t.Parallel()
					start := time.Now()
					if err := c.run(t, s, seed); err != nil {
						t.Fatalf("%s, seed %d (go test -run '%s' repeats it): %v", s.Spec.Name, seed, t.Name(), err)
					}
					t.Logf("%s seed %d: %v", s.Spec.Name, seed, time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}

func seeds() []uint64 {
	if *seedFlag != 0 {
		return []uint64{*seedFlag}
	}
	n := *seedsFlag
	if testing.Short() && !flagSet("projectiontest.seeds") {
		n = 1
	}
	out := make([]uint64, 0, n)
	for seed := uint64(1); seed <= uint64(n); seed++ {
		out = append(out, seed)
	}
	return out
}

func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
