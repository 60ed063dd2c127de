package prdqueue

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/fault"
)

var t0 = time.Date(2026, 2, 26, 10, 0, 0, 0, time.UTC)

// world folds drafts as the log would.
type world struct {
	t   *testing.T
	s   *State
	seq int
	log []eventlog.Event
}

func newWorld(t *testing.T) *world { return &world{t: t, s: NewState()} }

func (w *world) apply(drafts ...eventlog.Draft) {
	w.t.Helper()
	for _, d := range drafts {
		data, err := json.Marshal(d.Data)
		if err != nil {
			w.t.Fatal(err)
		}
		w.seq++
		e := eventlog.Event{ID: fmt.Sprint(w.seq), At: t0.Add(time.Duration(w.seq) * time.Second), Type: d.Type, Subject: d.Subject, Data: data}
		w.s.Apply(&e)
		w.log = append(w.log, e)
	}
}

func (w *world) must(drafts []eventlog.Draft, err error) []eventlog.Draft {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
	w.apply(drafts...)
	return drafts
}

// feature starts a feature run with the PRDs given, submitted.
func (w *world) feature(slug string, prds ...string) {
	w.t.Helper()
	w.must(StartFeature(w.s, slug, "", DefaultWorkerCap))
	for _, p := range prds {
		w.must(AddItem(w.s, slug, p, ""))
	}
}

func (w *world) submit(feature, prd string, f Facts) {
	w.t.Helper()
	w.must(Submit(w.s, w.s.Items[ItemKey{feature, prd}], f, t0))
}

func (w *world) sync(prd string, f Facts) []eventlog.Draft {
	w.t.Helper()
	d := Reconcile(w.s, prd, f, false, t0)
	w.apply(d...)
	return d
}

// enqueue promotes one submitted, runnable item onto epic.
func (w *world) enqueue(feature, prd, epic string) {
	w.t.Helper()
	cands, _, err := Runnable(w.s, feature)
	for _, c := range cands {
		if c.Item.PRD == prd {
			w.apply(c.Enqueued(epic, 1))
			return
		}
	}
	w.t.Fatalf("%s/%s is not runnable (%v)", feature, prd, err)
}

func (w *world) state(feature, prd string) Status { return w.s.Items[ItemKey{feature, prd}].State }

func facts(prdGate, beadsGate string, questions ...string) Facts {
	return Facts{PRDGate: prdGate, BeadsGate: beadsGate, OpenQuestions: questions, Hash: "h1"}
}

// The promotion rule over every pair of gate values, near misses included,
// with and without open questions.
func TestPromotionRule(t *testing.T) {
	t.Parallel()
	values := []string{"approved", "", "Approved", "approved ", " approved", "APPROVED", "yes", "true", "pending", "approved\n"}
	for _, prdGate := range values {
		for _, beadsGate := range values {
			for _, questions := range [][]string{nil, {"Which database?"}} {
				name := fmt.Sprintf("prd=%q beads=%q questions=%d", prdGate, beadsGate, len(questions))
				t.Run(name, func(t *testing.T) {
					w := newWorld(t)
					w.feature("f", "p")
					w.submit("f", "p", facts(prdGate, beadsGate, questions...))
					it := w.s.Items[ItemKey{"f", "p"}]
					want, reason := AwaitingPRDApproval, ""
					switch {
					case prdGate != "approved":
					case beadsGate != "approved":
						want = AwaitingBeadsApproval
					case len(questions) > 0:
						want, reason = Approved, BlockedOpenQuestions
					default:
						want = Approved
					}
					if it.State != want || w.s.BlockedReason(it) != reason {
						t.Fatalf("%s, blocked %q; want %s, %q", it.State, w.s.BlockedReason(it), want, reason)
					}
					runnable, _, err := Runnable(w.s, "f")
					if err != nil {
						t.Fatal(err)
					}
					if (len(runnable) == 1) != (want == Approved && reason == "") {
						t.Fatalf("runnable %v for %s %q", runnable, want, reason)
					}
				})
			}
		}
	}
}

// Editing an approved PRD invalidates its approval; approving it again is
// approval_version 2 with the key <slug>:2; the epic stays the PRD's.
func TestEditReapprove(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.feature("f", "p")
	approved := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	w.submit("f", "p", approved)
	p := w.s.PRDs["p"]
	if w.state("f", "p") != Approved || p.Version != 1 || p.Key() != "p:1" {
		t.Fatalf("%s v%d %s", w.state("f", "p"), p.Version, p.Key())
	}
	cands, _, err := Runnable(w.s, "f")
	if err != nil || len(cands) != 1 || cands[0].Key != "p:1" {
		t.Fatalf("%v %v", cands, err)
	}
	w.apply(cands[0].Enqueued("sp-epic", 1))
	if w.state("f", "p") != Queued || w.s.Keys["p:1"] != "sp-epic" {
		t.Fatal("not queued")
	}
	if d := w.sync("p", approved); len(d) != 0 {
		t.Fatalf("a sync with nothing changed made %v", d)
	}

	edited := approved
	edited.Hash = "h2" // the body changed; the gates still say approved
	w.sync("p", edited)
	it := w.s.Items[ItemKey{"f", "p"}]
	if it.State != AwaitingPRDApproval || w.s.BlockedReason(it) != BlockedApprovalInvalidated || !p.Invalidated {
		t.Fatalf("after an edit: %s %q", it.State, w.s.BlockedReason(it))
	}
	if d := w.sync("p", edited); len(d) != 0 {
		t.Fatalf("the stale approved value approved again: %v", d)
	}
	// Approved again explicitly (spool prd approve): version 2.
	w.apply(Reconcile(w.s, "p", edited, true, t0)...)
	if p.Version != 2 || p.Key() != "p:2" || w.state("f", "p") != Approved {
		t.Fatalf("re-approved: v%d %s %s", p.Version, p.Key(), w.state("f", "p"))
	}
	cands, _, err = Runnable(w.s, "f")
	if err != nil || len(cands) != 1 || cands[0].Key != "p:2" || cands[0].Epic != "sp-epic" {
		t.Fatalf("the re-approved PRD reuses its epic: %+v %v", cands, err)
	}
	if m := w.s.Manifest("f"); m.Items[0].ApprovalVersion != 2 || m.Items[0].IdempotencyKey != "p:2" {
		t.Fatalf("manifest %+v", m.Items[0])
	}

	// Or through the file: the gate leaves approved and comes back.
	edited.Hash = "h3"
	w.sync("p", edited)
	w.sync("p", Facts{PRDGate: "pending", BeadsGate: "approved", Hash: "h3"})
	w.sync("p", edited)
	if p.Version != 3 || w.state("f", "p") != Approved {
		t.Fatalf("re-approved in the file: v%d %s", p.Version, w.state("f", "p"))
	}
}

// A new approval version is queued onto the PRD's epic while the tracker
// has it open, and onto an epic of its own once it is closed (or gone), so
// that it has work someone can take; the manifest names the new one, and
// each key keeps the epic it was enqueued with.
func TestNewVersionEpic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status string
		found  bool
		keeps  bool
	}{
		{"open", true, true}, {"in_progress", true, true}, {"blocked", true, true}, {"deferred", true, true},
		{"closed", true, false}, {"tombstone", true, false}, {"", false, false},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.status, tc.found), func(t *testing.T) {
			w := newWorld(t)
			w.feature("f", "p")
			ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
			w.submit("f", "p", ok)
			w.enqueue("f", "p", "e1")
			if c := (Candidate{Key: "p:1"}); c.EpicFor(tc.status, tc.found) != "" {
				t.Fatal("a PRD with no epic kept one")
			}
			edited := ok
			edited.Hash = "h2"
			w.sync("p", edited)
			w.apply(Reconcile(w.s, "p", edited, true, t0)...)
			cands, _, _ := Runnable(w.s, "f")
			if len(cands) != 1 || cands[0].Key != "p:2" || cands[0].Epic != "e1" {
				t.Fatalf("%+v", cands)
			}
			epic := cands[0].EpicFor(tc.status, tc.found)
			if (epic == "e1") != tc.keeps || !tc.keeps && epic != "" {
				t.Fatalf("epic %q", epic)
			}
			if epic == "" {
				epic = "e2"
			}
			w.apply(cands[0].Enqueued(epic, 1))
			m := w.s.ManifestItem(w.s.Items[ItemKey{"f", "p"}])
			if m.State != Queued || m.EpicID != epic || w.s.Keys["p:1"] != "e1" || w.s.Keys["p:2"] != epic {
				t.Fatalf("%+v, keys %v", m, w.s.Keys)
			}
			if bad := (&Projection{s: w.s}).Invariants(); len(bad) != 0 {
				t.Fatal(bad)
			}
		})
	}
}

// Watch and the hooks check again the readiness of a queued PRD that a
// check passed, and record it when it changed: a withdrawn selectable ends
// its queue-readiness; doctor_pass stays what prd check found.
func TestRechecks(t *testing.T) {
	t.Parallel()
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	for _, tc := range []struct {
		name               string
		selectable, doctor bool // as prd check recorded them
		queued             bool
		rechecked          bool
	}{
		{"ready", true, true, true, true},
		{"selectable, doctor failed", true, false, true, true},
		{"doctor passed, nothing selectable", false, true, true, true},
		{"never passed a check", false, false, true, false},
		{"not queued", false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.feature("f", "p")
			w.submit("f", "p", ok)
			if tc.queued {
				w.enqueue("f", "p", "e")
			}
			it := w.s.Items[ItemKey{"f", "p"}]
			if tc.queued {
				w.apply(Check(it, tc.selectable, tc.doctor)...)
			}
			got := Rechecks(w.s)
			if (len(got) == 1) != tc.rechecked {
				t.Fatalf("rechecks %v", got)
			}
			if !tc.rechecked {
				return
			}
			if d := Check(it, tc.selectable, it.DoctorPass); len(d) != 0 {
				t.Fatalf("nothing changed, yet %v", d)
			}
			w.apply(Check(it, false, it.DoctorPass)...) // the epic closed
			if it.Selectable || it.DoctorPass != tc.doctor || w.s.QueueReady(it) {
				t.Fatalf("%+v, queue-ready %v", it, w.s.QueueReady(it))
			}
			w.apply(Check(it, true, it.DoctorPass)...) // work under it again
			if !it.Selectable || w.s.QueueReady(it) != tc.doctor {
				t.Fatalf("%+v", it)
			}
		})
	}
}

// A gate revoked and given back without an edit returns the PRD to
// queued under the same key: no second enqueue.
func TestGateBackWithoutEditRequeues(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.feature("f", "p")
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	w.submit("f", "p", ok)
	cands, _, _ := Runnable(w.s, "f")
	w.apply(cands[0].Enqueued("sp-epic", 1))
	w.sync("p", Facts{PRDGate: "approved", BeadsGate: "no", Hash: "h1"})
	if w.state("f", "p") != AwaitingBeadsApproval {
		t.Fatal(w.state("f", "p"))
	}
	d := w.sync("p", ok)
	if w.state("f", "p") != Queued || len(d) != 3 { // read, → approved, → queued
		t.Fatalf("%s after %d events", w.state("f", "p"), len(d))
	}
	if cands, _, _ := Runnable(w.s, "f"); len(cands) != 0 {
		t.Fatal("a queued PRD is runnable")
	}
}

// A refusal concerns its own entry: promote refuses an entry whose PRD is
// active in another feature run, or whose key was enqueued already, and
// every other entry, of any feature, goes on. The refusal is the entry's
// blocked_reason and last_error, and lifts when its cause does.
func TestRefusalsArePerEntry(t *testing.T) {
	t.Parallel()
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	type want struct {
		feature, prd, reason, error string // error: a part of last_error
	}
	for _, tc := range []struct {
		name    string
		setup   func(w *world)
		promote string // the feature promoted: "" all
		queued  []string
		refused []want
	}{{
		name: "runnable in two features: the first in manifest order goes",
		setup: func(w *world) {
			w.submit("f1", "p", ok)
			w.submit("f2", "p", ok)
		},
		queued:  []string{"f1/p", "f1/q", "f2/r"},
		refused: []want{{"f2", "p", CodeDuplicateActiveEntry.Name, "PRD p is active in feature f1 already (queued); this entry waits: take one out with spool prd remove p --feature f2"}},
	}, {
		name: "runnable in an earlier feature: the later one waits even when promoted alone",
		setup: func(w *world) {
			w.submit("f1", "p", ok)
			w.submit("f2", "p", ok)
		},
		promote: "f2",
		queued:  []string{"f2/r"}, // and f1/p, runnable, stays the one that goes
		refused: []want{{"f2", "p", CodeDuplicateActiveEntry.Name, "active in feature f1 already (runnable)"}},
	}, {
		name: "queued in another feature",
		setup: func(w *world) {
			w.submit("f2", "p", ok)
			w.enqueue("f2", "p", "e-p")
			w.submit("f1", "p", ok)
		},
		queued:  []string{"f1/q", "f2/p", "f2/r"},
		refused: []want{{"f1", "p", CodeDuplicateActiveEntry.Name, "active in feature f2 already (queued)"}},
	}, {
		name: "being enqueued in another feature",
		setup: func(w *world) {
			w.submit("f2", "p", ok)
			cands, _, _ := Runnable(w.s, "f2")
			w.apply(cands[0].Started())
			w.submit("f1", "p", ok)
		},
		queued:  []string{"f1/q", "f2/r"},
		refused: []want{{"f1", "p", CodeDuplicateActiveEntry.Name, "active in feature f2 already (being enqueued)"}},
	}, {
		name: "its key enqueued by an entry since removed (issue 27)",
		setup: func(w *world) {
			w.submit("f1", "p", ok)
			w.enqueue("f1", "p", "e-p")
			w.submit("f2", "p", ok)
			w.apply(Remove(w.s.Items[ItemKey{"f1", "p"}]))
		},
		queued: []string{"f1/q", "f2/r"},
		refused: []want{{"f2", "p", CodeDuplicateIdempotencyKey.Name,
			"idempotency key p:1 was enqueued already (epic e-p), and a key is enqueued once; this entry waits: take it out (spool prd remove p --feature f2), or edit the PRD and approve it again"}},
	}, {
		name: "open questions hold it first: no refusal",
		setup: func(w *world) {
			w.submit("f1", "p", ok)
			w.enqueue("f1", "p", "e-p")
			w.submit("f2", "p", ok)
			w.sync("p", Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1", OpenQuestions: []string{"why?"}})
		},
		queued:  []string{"f1/p", "f1/q", "f2/r"},
		refused: []want{{"f2", "p", BlockedOpenQuestions, ""}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.feature("f1", "p", "q")
			w.feature("f2", "p", "r")
			tc.setup(w)
			w.submit("f1", "q", ok)
			w.submit("f2", "r", ok)
			cands, refusals, err := Runnable(w.s, tc.promote)
			if err != nil {
				t.Fatalf("a refusal stopped the promotion: %v", err)
			}
			for _, c := range cands {
				w.apply(c.Enqueued("e-"+c.Item.PRD, 1))
			}
			var queued []string
			for _, slug := range w.s.FeatureSlugs() {
				for _, prd := range w.s.Features[slug].Items {
					if w.state(slug, prd) == Queued {
						queued = append(queued, slug+"/"+prd)
					}
				}
			}
			if strings.Join(queued, " ") != strings.Join(tc.queued, " ") {
				t.Errorf("queued %v, want %v", queued, tc.queued)
			}
			for _, r := range tc.refused {
				m := w.s.ManifestItem(w.s.Items[ItemKey{r.feature, r.prd}])
				if m.State != Approved || m.BlockedReason != r.reason || !strings.Contains(m.LastError, r.error) {
					t.Errorf("%s/%s: %s, blocked %q, last_error %q; want approved, %q, %q", r.feature, r.prd, m.State, m.BlockedReason, m.LastError, r.reason, r.error)
				}
				row := w.s.Report(r.feature).Rows
				if i := slices.IndexFunc(row, func(x Row) bool { return x.PRDSlug == r.prd }); row[i].BlockedReason != m.BlockedReason || row[i].LastError != m.LastError {
					t.Errorf("the report says %+v, the manifest %+v", row[i], m)
				}
			}
			var got []string
			for _, r := range refusals {
				got = append(got, r.Item.Feature+"/"+r.Item.PRD+" "+r.Code.Name)
				if f := fault.Classify(r.Err()); f.Code != r.Code.Name || f.Kind != fault.Rejected || f.Fields["prd_slug"] != r.Item.PRD || f.Fields["feature_slug"] != r.Item.Feature {
					t.Errorf("the refusal's error: %+v", f)
				}
			}
			var want []string
			for _, r := range tc.refused {
				if r.reason != BlockedOpenQuestions {
					want = append(want, r.feature+"/"+r.prd+" "+r.reason)
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("refused %v, want %v", got, want)
			}
		})
	}
}

// A refusal lifts when its cause does: the other entry removed.
func TestRefusalLifts(t *testing.T) {
	t.Parallel()
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	w := newWorld(t)
	w.feature("f1", "p")
	w.feature("f2", "p")
	w.submit("f1", "p", ok)
	w.submit("f2", "p", ok)
	if _, refusals, _ := Runnable(w.s, ""); len(refusals) != 1 {
		t.Fatalf("refusals %v", refusals)
	}
	w.apply(Remove(w.s.Items[ItemKey{"f1", "p"}]))
	cands, refusals, err := Runnable(w.s, "")
	if err != nil || len(refusals) != 0 || len(cands) != 1 || cands[0].Item.Feature != "f2" {
		t.Fatalf("%v %v %v", cands, refusals, err)
	}
	if m := w.s.ManifestItem(cands[0].Item); m.BlockedReason != "" || m.LastError != "" {
		t.Fatalf("%+v", m)
	}
}

// Two clones that promoted one PRD apart each record an outcome: the
// key's first epic stays, whatever the second names.
func TestOneEpicPerKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.feature("f1", "p")
	w.submit("f1", "p", Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"})
	cands, _, err := Runnable(w.s, "f1")
	if err != nil || len(cands) != 1 {
		t.Fatal(cands, err)
	}
	w.apply(cands[0].Enqueued("first", 1), cands[0].Enqueued("second", 1))
	if epic := w.s.PRDs["p"].Epic; epic != "first" || w.s.Keys["p:1"] != "first" {
		t.Fatalf("epic %q, key %q; want the first", epic, w.s.Keys["p:1"])
	}
	if m := w.s.ManifestItem(w.s.Items[ItemKey{"f1", "p"}]); m.EpicID != "first" || m.State != Queued {
		t.Fatalf("%+v", m)
	}
}

func TestRetryPolicyEvents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.feature("f", "p")
	w.submit("f", "p", Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"})
	cands, _, _ := Runnable(w.s, "f")
	c := cands[0]
	w.apply(c.Started(), c.Failed(1, "boom", false))
	it := w.s.Items[ItemKey{"f", "p"}]
	if it.State != Approved || !it.InFlight || it.RetryCount != 0 {
		t.Fatalf("%+v", it)
	}
	w.apply(c.Failed(2, "boom again", true))
	if it.State != QueueFailed || it.InFlight || it.RetryCount != 1 || it.LastError != "boom again" {
		t.Fatalf("%+v", it)
	}
	if _, err := Discover(it); fault.Classify(err).Code != fault.CodeInvalidStateTransition.Name {
		t.Fatal(err)
	}
	w.must(Retry(w.s, it, t0))
	if it.State != Approved || it.RetryCount != 0 || it.LastError != "" {
		t.Fatalf("%+v", it)
	}
}

// A PRD whose file is gone (or cannot be read as a PRD) is not promoted on
// what it said before: its entries wait with the reason, whatever their
// state, and go on when the file is read again. A queued entry stays
// queued; a PRD not yet submitted records nothing.
func TestUnreadableFileWaits(t *testing.T) {
	t.Parallel()
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	const gone = "PRD file docs/prd/p.md does not exist"
	waiting := Facts{PRDGate: "pending", BeadsGate: "approved", Hash: "h1"}
	for _, tc := range []struct {
		name    string
		setup   func(w *world)
		reason  string // recorded: the blocked_reason while the file is gone
		back    Status // the state once it is back
		runs    bool   // runnable once it is back
		records bool
	}{
		{"pending", func(w *world) {}, "", Pending, false, false},
		{"awaiting approval", func(w *world) { w.submit("f", "p", waiting) },
			CodePRDFileMissing.Name, AwaitingPRDApproval, false, true},
		{"approved", func(w *world) { w.submit("f", "p", ok) }, CodePRDFileMissing.Name, Approved, true, true},
		{"queued", func(w *world) { w.submit("f", "p", ok); w.enqueue("f", "p", "e") }, "", Queued, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.feature("f", "p")
			tc.setup(w)
			d := Unreadable(w.s, "p", CodePRDFileMissing.Name, gone)
			if (len(d) > 0) != tc.records {
				t.Fatalf("recorded %v", d)
			}
			w.apply(d...)
			it := w.s.Items[ItemKey{"f", "p"}]
			m := w.s.ManifestItem(it)
			if m.State != tc.back || m.BlockedReason != tc.reason || (tc.reason != "") != strings.HasPrefix(m.LastError, gone+"; the entry waits") {
				t.Fatalf("while gone: %+v", m)
			}
			if cands, _, _ := Runnable(w.s, ""); len(cands) != 0 {
				t.Fatalf("runnable while its file is gone: %v", cands)
			}
			if again := Unreadable(w.s, "p", CodePRDFileMissing.Name, gone); len(again) != 0 {
				t.Fatalf("recorded twice: %v", again)
			}
			if it.State.Submitted() { // the file is back, as it was
				if it.State == AwaitingPRDApproval {
					w.sync("p", waiting)
				} else {
					w.sync("p", ok)
				}
			}
			m = w.s.ManifestItem(it)
			cands, _, _ := Runnable(w.s, "")
			if m.State != tc.back || m.BlockedReason != "" || m.LastError != "" || (len(cands) == 1) != tc.runs {
				t.Fatalf("back: %+v, runnable %v", m, cands)
			}
		})
	}
	// Only the reasons that describe the file as committed are recorded or
	// folded: not this machine's storage failing.
	w := newWorld(t)
	w.feature("f", "p")
	w.submit("f", "p", ok)
	if d := Unreadable(w.s, "p", fault.CodeStorage.Name, "permission denied"); len(d) != 0 {
		t.Fatalf("recorded %v", d)
	}
	w.apply(eventlog.Draft{Type: TypeUnreadable, Subject: PRDSubject("p"), Data: UnreadableData{Reason: "storage", Error: "x"}})
	if r := w.s.BlockedReason(w.s.Items[ItemKey{"f", "p"}]); r != "" {
		t.Fatalf("folded an unknown reason: %q", r)
	}
	w.apply(Unreadable(w.s, "p", CodeInvalidFrontMatter.Name, "docs/prd/p.md: front matter: line 2")...)
	if r := w.s.BlockedReason(w.s.Items[ItemKey{"f", "p"}]); r != CodeInvalidFrontMatter.Name {
		t.Fatalf("blocked %q", r)
	}
}

// prd retry is for queue_failed alone, and passes no gate: from any other
// state it is refused (the gates move those entries on, through sync), and
// from queue_failed it goes where the gates say now.
func TestRetryOnlyAfterQueueFailed(t *testing.T) {
	t.Parallel()
	pending := Facts{PRDGate: "pending", BeadsGate: "pending", Hash: "h1"}
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	failed := func(w *world) {
		w.submit("f", "p", ok)
		cands, _, _ := Runnable(w.s, "f")
		w.apply(cands[0].Started(), cands[0].Failed(1, "boom", false), cands[0].Failed(2, "boom", true))
	}
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		want  Status // "": refused
		hint  string // a part of the refusal's message
	}{
		{"pending", func(w *world) {}, "", "submit it (spool prd submit p)"},
		{"in_discovery", func(w *world) { w.must([]eventlog.Draft{must(Discover(w.s.Items[ItemKey{"f", "p"}]))}, nil) }, "", "submit it"},
		{"awaiting_prd_approval, both gates pending", func(w *world) { w.submit("f", "p", pending) }, "",
			"it goes on when its PRD gate is approved (spool prd approve p --gate prd, or commit the front matter)"},
		{"awaiting_beads_approval", func(w *world) { w.submit("f", "p", Facts{PRDGate: "approved", BeadsGate: "pending", Hash: "h1"}) }, "",
			"--gate beads"},
		{"approved", func(w *world) { w.submit("f", "p", ok) }, "", "spool prd promote enqueues it"},
		{"approved with open questions", func(w *world) { w.submit("f", "p", facts("approved", "approved", "why?")) }, "", "it waits: open_questions"},
		{"queued", func(w *world) { w.submit("f", "p", ok); w.enqueue("f", "p", "e") }, "", "it is queued already"},
		{"queue_failed", failed, Approved, ""},
		{"queue_failed, its PRD gate since withdrawn (a merged clone's log)", func(w *world) {
			failed(w)
			w.apply(eventlog.Draft{Type: TypeRead, Subject: PRDSubject("p"), Data: ReadData{PRDGate: "pending", BeadsGate: "approved", ContentHash: "h1"}})
		}, AwaitingPRDApproval, ""},
		{"queue_failed, its beads gate since withdrawn", func(w *world) {
			failed(w)
			w.apply(eventlog.Draft{Type: TypeRead, Subject: PRDSubject("p"), Data: ReadData{PRDGate: "approved", BeadsGate: "no", ContentHash: "h1"}})
		}, AwaitingBeadsApproval, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.feature("f", "p")
			tc.setup(w)
			it := w.s.Items[ItemKey{"f", "p"}]
			from := it.State
			d, err := Retry(w.s, it, t0)
			if tc.want == "" {
				f := fault.Classify(err)
				if err == nil || len(d) != 0 || f.Code != fault.CodeInvalidStateTransition.Name || f.Kind != fault.Rejected ||
					f.Fields["current_state"] != string(from) || !strings.Contains(f.Message, "prd retry is only for a queue_failed PRD; p is "+string(from)) ||
					!strings.Contains(f.Message, tc.hint) {
					t.Fatalf("retry from %s: %v, %v; want refused, saying %q", from, d, err, tc.hint)
				}
				return
			}
			w.must(d, err)
			if it.State != tc.want {
				t.Fatalf("retry from %s: %s, want %s", from, it.State, tc.want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The fold refuses what the table forbids.
func TestFoldChecksTable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.feature("f", "p")
	w.apply(eventlog.Draft{Type: TypeTransitioned, Subject: PRDSubject("p"), Data: TransitionData{FeatureSlug: "f", From: Pending, To: Queued}})
	if w.state("f", "p") != Pending {
		t.Fatal("pending → queued was applied")
	}
	for from, tos := range transitions {
		for _, to := range Statuses {
			if CanTransition(from, to) != containsStatus(tos, to) {
				t.Fatalf("%s → %s", from, to)
			}
		}
	}
}

func containsStatus(list []Status, s Status) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSlugsAndPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		slug string
		ok   bool
	}{
		{"2026-02-26--example-prd-a", true}, {"a", true}, {"a.b", true},
		{"", false}, {strings.Repeat("a", 101), false}, {strings.Repeat("a", 100), true},
		{"A", false}, {"a/b", false}, {"a..b", false}, {".a", false}, {"a b", false}, {"é", false},
	} {
		if err := CheckSlug("PRD", tc.slug); (err == nil) != tc.ok || err != nil && fault.Classify(err).Code != CodeInvalidSlug.Name {
			t.Errorf("%q: %v", tc.slug, err)
		}
	}
	for _, tc := range []struct{ in, out string }{
		{"docs/prd/a.md", "docs/prd/a.md"}, {"./x/../docs/a.md", "docs/a.md"}, {"../a.md", ""}, {"/etc/a.md", ""},
		{"docs/a.txt", ""}, {".git/a.md", ""}, {"", ""},
	} {
		got, err := CheckPath(tc.in)
		if got != tc.out || (err == nil) != (tc.out != "") {
			t.Errorf("%q: %q %v", tc.in, got, err)
		}
	}
}

func TestInvariants(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.feature("f", "p", "q")
	ok := Facts{PRDGate: "approved", BeadsGate: "approved", Hash: "h1"}
	w.submit("f", "p", ok)
	w.submit("f", "q", ok)
	cands, _, _ := Runnable(w.s, "f")
	w.apply(cands[0].Enqueued("e1", 1), cands[1].Enqueued("e2", 1))
	p := &Projection{s: w.s}
	if got := p.Invariants(); len(got) != 0 {
		t.Fatalf("a sound state breaks %v", got)
	}
	w.s.PRDs["q"].Epic = "e1"
	w.s.Items[ItemKey{"f", "p"}].EnqueuedKey = ""
	got := p.Invariants()
	if len(got) != 2 || got[0] != "PRDs p and q share the epic e1" || got[1] != "f/p is queued with no epic" {
		t.Fatalf("%v", got)
	}
}

// Slugs and paths from the log name files: the fold takes only what the
// commands take, and the invariants say so of any state (an old snapshot)
// that holds another.
func TestFoldTakesOnlySafeSlugsAndPaths(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.apply(w.must(StartFeature(w.s, "f", "", 2))...)
	w.apply(
		eventlog.Draft{Type: TypeFeatureStarted, Subject: FeatureSubject("../x"), Data: FeatureData{FeatureSlug: "../x", Mode: ModeSequential, WorkerCap: 1}},
		eventlog.Draft{Type: TypeFeatureStarted, Subject: FeatureSubject("g"), Data: FeatureData{FeatureSlug: "g", Mode: ModeSequential, WorkerCap: 1 << 40}},
		eventlog.Draft{Type: TypeFeatureStarted, Subject: FeatureSubject("h"), Data: FeatureData{FeatureSlug: "h", Mode: "parallel", WorkerCap: 2}},
		eventlog.Draft{Type: TypeAdded, Subject: PRDSubject("../../x"), Data: AddedData{FeatureSlug: "f", PRDPath: "docs/prd/x.md"}},
		eventlog.Draft{Type: TypeAdded, Subject: PRDSubject("a"), Data: AddedData{FeatureSlug: "f", PRDPath: "../a.md"}},
		eventlog.Draft{Type: TypeAdded, Subject: PRDSubject("b"), Data: AddedData{FeatureSlug: "f", PRDPath: "docs//b.md"}},
		eventlog.Draft{Type: TypeAdded, Subject: PRDSubject("c"), Data: AddedData{FeatureSlug: "f", PRDPath: ".git/hooks/c.md"}},
	)
	if len(w.s.Features) != 1 || len(w.s.PRDs) != 0 || len(w.s.Items) != 0 {
		t.Fatalf("the fold took %d features, %d PRDs, %d items", len(w.s.Features), len(w.s.PRDs), len(w.s.Items))
	}
	w.apply(w.must(AddItem(w.s, "f", "a", "docs/a.md"))...)
	p := &Projection{s: w.s}
	if bad := p.Invariants(); len(bad) != 0 {
		t.Fatalf("invariants: %q", bad)
	}
	w.s.PRDs["a"].Path = "../a.md" // as a snapshot of an older spool could hold it
	w.s.Features["../x"] = &Feature{Slug: "../x"}
	if bad := p.Invariants(); len(bad) != 2 || !strings.Contains(bad[0]+bad[1], `"../a.md"`) || !strings.Contains(bad[0]+bad[1], `"../x"`) {
		t.Fatalf("invariants: %q", bad)
	}
}
