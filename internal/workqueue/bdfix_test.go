package workqueue

import (
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

func types(drafts []eventlog.Draft) []string {
	var out []string
	for _, d := range drafts {
		out = append(out, d.Type+" "+d.Subject)
	}
	return out
}

// An import sets the whole task: a live claim on it ends in the history
// too (task and queue agree), and an import that unblocks a task clears
// Blocked.
func TestImportOverAClaim(t *testing.T) {
	p := DefaultPolicy()
	w := newWorld(t)
	a := w.add("claimed", 1, t0)
	b := w.add("blocked", 1, t0)
	w.next(p, Gate{}, "agent", t0)
	blk, err := Block(w.s, b, "human")
	if err != nil {
		t.Fatal(err)
	}
	w.apply("ada", t0, blk)
	recs := w.s.Export()
	for i := range recs {
		recs[i].Status, recs[i].Assignee, recs[i].Labels = StatusOpen, "", nil
	}
	drafts, err := ImportTasks(w.s, recs)
	if err != nil || len(drafts) != 2 {
		t.Fatalf("%v %v", types(drafts), err)
	}
	w.apply("importer", t0, drafts...)
	if h := w.s.History[a]; h.Status != HistPending || h.Actor != "" || h.Attempts != 1 || h.Failures != 0 {
		t.Fatalf("claimed task's history after the import: %+v", h)
	}
	if _, err := Done(w.s, p, a, "agent", "", t0); code(err) != CodeNotClaimed.Name {
		t.Fatalf("done after the import: %v", err)
	}
	if h := w.s.History[b]; h.Blocked || h.Status != HistPending || w.s.isBlocked(b) {
		t.Fatalf("blocked task's history after an import that unblocks it: %+v", h)
	}
	if got := w.next(p, Gate{}, "agent", t0); got != a {
		t.Fatalf("next after the import: %q", got)
	}
}
