package prdqueue

import (
	"strings"
	"testing"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

// fork is another clone of w: it has folded w's log so far, decides on
// what it has, and its drafts reach w (the merged log) when a test applies
// them there.
func (w *world) fork() *world {
	w.t.Helper()
	o := &world{t: w.t, s: NewState(), seq: w.seq}
	for i := range w.log {
		o.s.Apply(&w.log[i])
	}
	return o
}

// The PRD queue's fold of logs that clones wrote apart and git merged: each
// case builds a shared history, has two clones decide on their own copies,
// and folds their drafts in the merged order.
func TestFoldMergedClones(t *testing.T) {
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	edited := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h2"}

	t.Run("a PRD added by two clones is one item, and keeps its state", func(t *testing.T) {
		w := newWorld(t)
		w.feature("f")
		b := w.fork()
		w.must(AddItem(w.s, "f", "p", ""))
		w.submit("f", "p", ok)
		// The other clone added it too, before it had the first one's add.
		w.apply(b.must(AddItem(b.s, "f", "p", ""))...)
		if items := w.s.Features["f"].Items; strings.Join(items, ",") != "p" {
			t.Fatalf("the feature lists %v, want p once", items)
		}
		if len(w.s.ItemsOf("p")) != 1 || w.state("f", "p") != Approved {
			t.Fatalf("%d items, %s; want one, still approved", len(w.s.ItemsOf("p")), w.state("f", "p"))
		}
		if bad := (&Projection{s: w.s}).Invariants(); len(bad) != 0 {
			t.Fatal(bad)
		}
	})

	t.Run("a transition from a state the item left is not applied", func(t *testing.T) {
		w := newWorld(t)
		w.feature("f", "p")
		b := w.fork()
		w.apply(must(Discover(w.s.Items[ItemKey{"f", "p"}])))
		// The other clone submitted it from pending, approved: every one of
		// its transitions starts from a state this item is not in.
		w.apply(b.must(Submit(b.s, b.s.Items[ItemKey{"f", "p"}], ok, t0))...)
		if got := w.state("f", "p"); got != InDiscovery {
			t.Fatalf("%s; want in_discovery: pending → awaiting_prd_approval was applied to an item in_discovery", got)
		}
	})

	t.Run("a stale transition of a queued item is not applied", func(t *testing.T) {
		w := newWorld(t)
		w.feature("f", "p")
		w.submit("f", "p", Facts{PRDGate: "approved", BeadsGate: "pending", Hash: "h1"})
		b := w.fork()
		w.sync("p", ok)
		w.enqueue("f", "p", "e1")
		// The other clone saw the beads gate approved and then withdrawn:
		// awaiting_beads_approval → approved → awaiting_beads_approval.
		b.sync("p", ok)
		w.apply(b.sync("p", Facts{PRDGate: "approved", BeadsGate: "pending", Hash: "h1"})...)
		tr := w.log[len(w.log)-1]
		if tr.Type != TypeTransitioned {
			t.Fatalf("the other clone's last event is %s", tr.Type)
		}
		if got := w.state("f", "p"); got != Queued {
			t.Fatalf("%s; want queued: approved → awaiting_beads_approval was applied to a queued item", got)
		}
	})

	t.Run("an enqueue outcome does not queue an item another clone moved back", func(t *testing.T) {
		for _, outcome := range []string{TypeEnqueued, TypeEnqueueFailed} {
			t.Run(outcome, func(t *testing.T) {
				w := newWorld(t)
				w.feature("f", "p")
				w.submit("f", "p", ok)
				cands, _, err := Runnable(w.s, "f")
				if err != nil || len(cands) != 1 {
					t.Fatal(cands, err)
				}
				b := w.fork()
				w.apply(cands[0].Started())
				// Meanwhile the PRD was edited: the other clone's sync took
				// the approval back (the item is awaiting_prd_approval).
				w.apply(b.sync("p", edited)...)
				if w.state("f", "p") != AwaitingPRDApproval {
					t.Fatalf("after the edit: %s", w.state("f", "p"))
				}
				if outcome == TypeEnqueued {
					w.apply(cands[0].Enqueued("e1", 1))
				} else {
					w.apply(cands[0].Failed(1, "boom", false), cands[0].Failed(2, "boom", true))
				}
				it := w.s.Items[ItemKey{"f", "p"}]
				if it.State != AwaitingPRDApproval || it.InFlight {
					t.Fatalf("%s (in flight %v); want awaiting_prd_approval, the outcome recorded", it.State, it.InFlight)
				}
				if outcome == TypeEnqueued && (w.s.PRDs["p"].Epic != "e1" || w.s.Keys["p:1"] != "e1") {
					t.Fatalf("the epic made is forgotten: %q %q", w.s.PRDs["p"].Epic, w.s.Keys["p:1"])
				}
				if bad := (&Projection{s: w.s}).Invariants(); len(bad) != 0 {
					t.Fatal(bad)
				}
			})
		}
	})

	t.Run("an approval is of the content approved", func(t *testing.T) {
		w := newWorld(t)
		w.feature("f", "p")
		w.submit("f", "p", ok)
		b := w.fork()
		// This clone: the PRD edited, and approved again for h2.
		w.sync("p", edited)
		w.apply(Reconcile(w.s, "p", edited, true, t0)...)
		if p := w.s.PRDs["p"]; !p.PRDApproved() || p.ApprovedHash != "h2" {
			t.Fatalf("approved again: %+v", p)
		}
		// The other clone, on h1 still, records a change of the beads gate
		// only: a read of h1, after the approval of h2 in the merged log.
		w.apply(b.sync("p", Facts{PRDGate: "approved", BeadsGate: "approved ", Hash: "h1"})...)
		p := w.s.PRDs["p"]
		if p.Hash != "h1" || p.ApprovedHash != "h2" {
			t.Fatalf("the merged log: hash %s, approved %s", p.Hash, p.ApprovedHash)
		}
		if p.PRDApproved() {
			t.Fatal("h2's approval approves h1")
		}
		// The next sync takes it back: the entry waits for an approval.
		w.sync("p", ok)
		it := w.s.Items[ItemKey{"f", "p"}]
		if it.State != AwaitingPRDApproval || w.s.BlockedReason(it) != BlockedApprovalInvalidated {
			t.Fatalf("after a sync: %s, %q", it.State, w.s.BlockedReason(it))
		}
	})

	t.Run("an approval folded after a read of other content does not approve it", func(t *testing.T) {
		w := newWorld(t)
		w.feature("f", "p")
		w.submit("f", "p", Facts{PRDGate: "pending", BeadsGate: "approved", Hash: "h1"})
		w.apply(
			eventlog.Draft{Type: TypeRead, Subject: PRDSubject("p"), Data: ReadData{PRDGate: "approved", BeadsGate: "approved", ContentHash: "h2"}},
			eventlog.Draft{Type: TypeApproved, Subject: PRDSubject("p"), Data: ApprovalData{ApprovalVersion: 1, ContentHash: "h1"}},
		)
		if p := w.s.PRDs["p"]; p.PRDApproved() || p.ApprovedHash != "h1" {
			t.Fatalf("h1's approval: approved %v, approved hash %q, hash %q", p.PRDApproved(), p.ApprovedHash, p.Hash)
		}
	})
}

// The decide functions' refusals, which only testscripts checked: nothing
// appended, the code and kind the CLI maps to its exit code.
func TestRefusals(t *testing.T) {
	type refusal struct {
		name string
		do   func(w *world) ([]eventlog.Draft, error)
		code string // "": accepted with no events (a repeat)
		kind fault.Kind
	}
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	for _, tc := range []refusal{
		{"worker cap 0", func(w *world) ([]eventlog.Draft, error) { return StartFeature(w.s, "g", "", 0) }, fault.CodeUsage.Name, fault.Usage},
		{"worker cap -1", func(w *world) ([]eventlog.Draft, error) { return StartFeature(w.s, "g", "", -1) }, fault.CodeUsage.Name, fault.Usage},
		{"worker cap above the most", func(w *world) ([]eventlog.Draft, error) { return StartFeature(w.s, "g", "", MaxWorkerCap+1) }, fault.CodeUsage.Name, fault.Usage},
		{"an unknown mode", func(w *world) ([]eventlog.Draft, error) { return StartFeature(w.s, "g", "fast", 1) }, CodeInvalidMode.Name, fault.Usage},
		{"a started feature with another worker cap", func(w *world) ([]eventlog.Draft, error) {
			return StartFeature(w.s, "f", "", DefaultWorkerCap+1)
		}, CodeFeatureExists.Name, fault.Rejected},
		{"a started feature with another mode", func(w *world) ([]eventlog.Draft, error) {
			return StartFeature(w.s, "f", ModeSequential, DefaultWorkerCap)
		}, CodeFeatureExists.Name, fault.Rejected},
		{"a started feature with its settings", func(w *world) ([]eventlog.Draft, error) {
			return StartFeature(w.s, "f", ModeConflictAware, DefaultWorkerCap)
		}, "", 0},
		{"a PRD added with another path", func(w *world) ([]eventlog.Draft, error) {
			return AddItem(w.s, "f", "p", "docs/elsewhere.md")
		}, CodePathConflict.Name, fault.Rejected},
		{"a PRD added to another feature with another path", func(w *world) ([]eventlog.Draft, error) {
			w.must(StartFeature(w.s, "g", "", 1))
			return AddItem(w.s, "g", "p", "docs/elsewhere.md")
		}, CodePathConflict.Name, fault.Rejected},
		{"a PRD added again with its path", func(w *world) ([]eventlog.Draft, error) { return AddItem(w.s, "f", "p", "docs/prd/p.md") }, "", 0},
		{"a PRD added to a feature not started", func(w *world) ([]eventlog.Draft, error) { return AddItem(w.s, "g", "p", "") }, fault.CodeNotFound.Name, fault.Rejected},
		{"a submitted PRD submitted again", func(w *world) ([]eventlog.Draft, error) {
			w.submit("f", "p", Facts{PRDGate: "pending", BeadsGate: "pending", Hash: "h1"})
			return Submit(w.s, w.s.Items[ItemKey{"f", "p"}], ok, t0)
		}, fault.CodeInvalidStateTransition.Name, fault.Rejected},
		{"an approved PRD submitted again", func(w *world) ([]eventlog.Draft, error) {
			w.submit("f", "p", ok)
			return Submit(w.s, w.s.Items[ItemKey{"f", "p"}], ok, t0)
		}, fault.CodeInvalidStateTransition.Name, fault.Rejected},
		{"a queued PRD submitted again", func(w *world) ([]eventlog.Draft, error) {
			w.submit("f", "p", ok)
			w.enqueue("f", "p", "e1")
			return Submit(w.s, w.s.Items[ItemKey{"f", "p"}], ok, t0)
		}, fault.CodeInvalidStateTransition.Name, fault.Rejected},
		{"a submitted PRD discovered", func(w *world) ([]eventlog.Draft, error) {
			w.submit("f", "p", ok)
			d, err := Discover(w.s.Items[ItemKey{"f", "p"}])
			return []eventlog.Draft{d}, err
		}, fault.CodeInvalidStateTransition.Name, fault.Rejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.feature("f", "p")
			d, err := tc.do(w)
			if tc.code == "" {
				if err != nil || len(d) != 0 {
					t.Fatalf("%v, %v; want nothing to append", d, err)
				}
				return
			}
			f := fault.Classify(err)
			if err == nil || f.Code != tc.code || f.Kind != tc.kind || len(d) != 0 && d[0].Type != "" {
				t.Fatalf("%v, %v (%s, %v); want refused: %s, %v", d, err, f.Code, f.Kind, tc.code, tc.kind)
			}
		})
	}
	// The refusals' limits: the least and the most worker cap are taken,
	// by the command and by the fold; the fold skips what the command
	// refuses (a log anyone can push to may hold it).
	for _, n := range []int{0, 1, MaxWorkerCap, MaxWorkerCap + 1} {
		w := newWorld(t)
		d, err := StartFeature(w.s, "g", ModeSequential, n)
		if valid := n >= 1 && n <= MaxWorkerCap; (err == nil && len(d) == 1) != valid {
			t.Fatalf("worker cap %d: %v, %v", n, d, err)
		}
		w.apply(eventlog.Draft{Type: TypeFeatureStarted, Subject: FeatureSubject("g"), Data: FeatureData{FeatureSlug: "g", Mode: ModeSequential, WorkerCap: n}})
		if f := w.s.Features["g"]; (f != nil) != (n >= 1 && n <= MaxWorkerCap) {
			t.Fatalf("worker cap %d: the fold made %+v", n, f)
		}
	}
}

// The manifest's invariants: a feature lists each of its PRDs once, and
// only PRDs that are its items (as an old snapshot could hold otherwise).
func TestManifestListInvariants(t *testing.T) {
	w := newWorld(t)
	w.feature("f", "p", "q")
	p := &Projection{s: w.s}
	if bad := p.Invariants(); len(bad) != 0 {
		t.Fatal(bad)
	}
	w.s.Features["f"].Items = []string{"p", "q", "p", "r"}
	bad := p.Invariants()
	if strings.Join(bad, "\n") != "feature f lists p twice\nfeature f lists r, which is not one of its items" {
		t.Fatalf("%q", bad)
	}
}
