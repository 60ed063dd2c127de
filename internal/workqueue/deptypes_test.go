package workqueue

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/spoolhq/spool/eventlog"
)

// bd's dependency types: blocks waits, parent-child is the parent, the
// others are links that block nothing; bd's gates are refused.
func TestDependencyTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, typ string
		code      string // the refusal, or ""
		waits     bool   // the dependent is no longer ready
		parent    bool   // the other task became the parent
		link      bool   // a link of that type is kept
	}{
		{name: "blocks", typ: "blocks", waits: true},
		{name: "empty is blocks", typ: "", waits: true},
		{name: "parent-child", typ: "parent-child", parent: true},
		{name: "related", typ: "related", link: true},
		{name: "discovered-from", typ: "discovered-from", link: true},
		{name: "a type of one's own", typ: "tracks", link: true},
		{name: "conditional-blocks", typ: "conditional-blocks", code: "unsupported_dependency_type"},
		{name: "waits-for", typ: "waits-for", code: "unsupported_dependency_type"},
		{name: "whitespace", typ: "two words", code: "unsupported_dependency_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			a := w.add("a", 2, t0)
			b := w.add("b", 2, t0)
			d, err := AddDepOf(w.s, b, a, tc.typ)
			if code(err) != tc.code {
				t.Fatalf("AddDepOf: %v, want %q", err, tc.code)
			}
			if tc.code != "" {
				return
			}
			w.apply("bob", t0.Add(1e9), d)
			task := w.s.Task(b)
			ready := slices.ContainsFunc(w.s.Ready(DefaultPolicy(), ReadyFilter{}, t0, 0), func(x *Task) bool { return x.ID == b })
			if ready == tc.waits {
				t.Fatalf("ready %v, want %v", ready, !tc.waits)
			}
			if (task.Parent == a) != tc.parent {
				t.Fatalf("parent %q", task.Parent)
			}
			hasLink := slices.ContainsFunc(task.Links, func(l Link) bool { return l.ID == a && l.Type == tc.typ })
			if hasLink != tc.link {
				t.Fatalf("links %+v", task.Links)
			}
			// The record bd clients read has the type, dated and signed by the event.
			deps := task.deps()
			if len(deps) != 1 || deps[0].DependsOnID != a || deps[0].CreatedBy != "bob" || !deps[0].CreatedAt.Equal(t0.Add(1e9)) ||
				deps[0].Type != cmpOr(tc.typ, DepBlocks) {
				t.Fatalf("dependency records %+v", deps)
			}
			// The same again is refused; a remove takes it away, whatever its type.
			if _, err := AddDepOf(w.s, b, a, tc.typ); code(err) != "dependency_exists" {
				t.Fatalf("again: %v", err)
			}
			rm, err := RemoveDeps(w.s, b, a)
			if err != nil {
				t.Fatal(err)
			}
			w.apply("bob", t0, rm...)
			if deps := w.s.Task(b).deps(); len(deps) != 0 {
				t.Fatalf("after remove: %+v", deps)
			}
			if _, err := RemoveDeps(w.s, b, a); code(err) != "not_found" {
				t.Fatalf("remove again: %v", err)
			}
		})
	}
}

// A link closes a cycle as bd sees one, whatever the new dependency's type
// (but relates-to, which goes both ways); a second parent is refused.
func TestDependencyTypeCycles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	b := w.add("b", 2, t0)
	c := w.add("c", 2, t0)
	d, _ := AddDepOf(w.s, b, a, "related")
	w.apply("ada", t0, d)
	if _, err := AddDepOf(w.s, a, b, "discovered-from"); code(err) != "dependency_cycle" {
		t.Fatalf("cycle through a link: %v", err)
	}
	if _, err := AddDepOf(w.s, a, b, DepBlocks); code(err) != "dependency_cycle" {
		t.Fatalf("blocks closing a cycle through a link: %v", err)
	}
	if _, err := AddDepOf(w.s, a, b, DepRelatesTo); err != nil {
		t.Fatalf("relates-to both ways: %v", err)
	}
	d, _ = AddDepOf(w.s, c, a, DepParentChild)
	w.apply("ada", t0, d)
	if _, err := AddDepOf(w.s, c, b, DepParentChild); code(err) != "dependency_exists" {
		t.Fatalf("second parent: %v", err)
	}
}

// Events from before types (a dep_added or dep_removed without one) are
// blocks, and removing one leaves a link to the same task alone.
func TestOldDependencyEventsAreBlocks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.add("a", 2, t0)
	b := w.add("b", 2, t0)
	link, _ := AddDepOf(w.s, b, a, "related")
	w.apply("ada", t0, link)
	for _, typ := range []string{TypeDepAdded, TypeDepRemoved} {
		e := eventlog.Event{V: 1, ID: typ, At: t0, Actor: "ada", Type: typ, Subject: b, Data: json.RawMessage(`{"blocker":"` + a + `"}`)}
		if err := w.s.Apply(&e); err != nil {
			t.Fatal(err)
		}
		task := w.s.Task(b)
		if wantBlocked := typ == TypeDepAdded; (len(task.Blockers) == 1) != wantBlocked || len(task.Links) != 1 {
			t.Fatalf("after an old %s: blockers %+v, links %+v", typ, task.Blockers, task.Links)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
