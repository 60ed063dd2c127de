package projections

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

func TestFirstDifference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ disk, want, where string }{
		{`{"items":[{"state":"queued"},{"state":"approved"}]}`, `{"items":[{"state":"queued"},{"state":"queued"}]}`,
			`items[1].state is "approved" on disk, "queued" in a fresh replay`},
		{`{"a":1}`, `{"a":1,"b":2}`, `b is missing on disk, 2 in a fresh replay`},
		{`{"a":1,"z":[1]}`, `{"a":1}`, `z is [1] on disk, absent in a fresh replay`},
		{`{"items":[1,2,3]}`, `{"items":[1,2]}`, `items is 3 items on disk, 2 in a fresh replay`},
		{`[1]`, `{"a":1}`, `the document is [1] on disk, {"a":1} in a fresh replay`},
		{`{"a": 1}`, `{"a":1}`, ``}, // equal as JSON
		{`not json`, `{"a":1}`, ``},
	} {
		where, ok := firstDifference([]byte(tc.disk), []byte(tc.want))
		if where != tc.where || ok != (tc.where != "") {
			t.Errorf("%s vs %s: %q %v, want %q", tc.disk, tc.want, where, ok, tc.where)
		}
	}
}

// A tracked file is rewritten only when its bytes change, and verify names
// the first field of a hand-edited one.
func TestTrackedFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := f.writer("a", f.events)
	f.add(l, 3)
	f.catchUp()
	path := filepath.Join(f.root, "out", "ledger.json")
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	f.add(l, 0, eventlog.Draft{Type: "other.happened", Subject: "x"}) // the ledger's bytes stay the same
	f.catchUp()
	if st, err := os.Stat(path); err != nil || !st.ModTime().Equal(old) {
		t.Fatalf("an unchanged tracked file was rewritten (%v)", err)
	}
	f.add(l, 1)
	f.catchUp()
	if st, _ := os.Stat(path); st.ModTime().Equal(old) {
		t.Fatal("a changed tracked file was not rewritten")
	}

	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), `"s0": 2`, `"s0": 20`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	diffs, _, _, err := f.engine().Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 1 || !strings.Contains(diffs[0].Problem, "sums.s0 is 20 on disk, 2 in a fresh replay") {
		t.Fatalf("diffs %+v", diffs)
	}
}
