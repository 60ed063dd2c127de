package board_test

import (
	"context"
	"strings"
	"testing"
	"time"

	mqservice "github.com/spoolhq/spool/internal/mergequeue/service"
)

// The entry page opens every attempt's test log, each in a directory of its
// own: the second attempt does not write over the first (issue 28).
func TestMergeEntryShowsEachAttemptsLog(t *testing.T) {
	f := newFixture(t)
	f.submitMerge("feat", alice)
	st := f.open()
	if err := st.Config.Set("merge.test_command", `["sh","-c","echo FAIL-MARK; exit 1"]`); err != nil {
		t.Fatal(err)
	}
	train := func() {
		r := &mqservice.Runner{Store: st, Actor: alice, Target: "main", ID: mqservice.NewRunnerID("train"),
			Now: func() time.Time { return f.advance(time.Second) }}
		if _, err := r.Run(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	train()
	if _, _, err := mqservice.Open(f.env(alice)).Retry(context.Background(), "1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Config.Set("merge.test_command", `["sh","-c","echo PASS-MARK"]`); err != nil {
		t.Fatal(err)
	}
	train()
	f.follow()()
	r := f.get("/merge/1")
	wantPage(t, r, 200)
	for _, want := range []string{"Test logs", "attempt 1", "attempt 2", "FAIL-MARK", "PASS-MARK", "/runs/merge/"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("no %q in the entry page:\n%s", want, r.body)
		}
	}
	if strings.Count(r.body, "<details") != 2 || strings.Count(r.body, " open>") != 1 {
		t.Errorf("want two attempts, the latest open:\n%s", r.body)
	}
}

// The merge page and an entry's page show aging as the CLI does: the
// effective priority and why.
func TestMergePagesShowAging(t *testing.T) {
	f := newFixture(t)
	f.submitMerge("feat", alice)
	f.follow()()
	if r := f.get("/merge"); strings.Contains(r.body, "aged") {
		t.Fatalf("aged at once:\n%s", r.body)
	}
	f.advance(3 * 24 * time.Hour)
	r := f.get("/merge")
	wantPage(t, r, 200)
	if !strings.Contains(r.body, "P2→P0 aged 3d") {
		t.Errorf("no aging on the merge page:\n%s", r.body)
	}
	r = f.get("/merge/1")
	if !strings.Contains(r.body, "(effective 0: P2→P0 aged 3d)") {
		t.Errorf("no aging on the entry page:\n%s", r.body)
	}
}
