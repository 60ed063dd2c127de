package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/store"
)

// The worktree and run directory are derived from the task id, and only
// from an id a task can have: any other has none, never a path outside
// .git/spool.
func TestPathsAreDerivedFromValidIDsOnly(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/config.json": "{}\n"})
	st, err := store.Open(context.Background(), r.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Env: store.Env{Store: st}}
	private := st.Repo.PrivateDir()
	for _, id := range []string{"bd-a1b2", "bd-a1b2.1", "sp-4mx5"} {
		wt, run := s.Worktree(id), s.runDir(&orchestrator.Active{TaskID: id})
		if filepath.Dir(wt) != filepath.Join(private, "worktrees") || filepath.Dir(run) != filepath.Join(private, "runs") ||
			!strings.HasSuffix(wt, "task-"+id) || !strings.HasSuffix(run, "task-"+id) {
			t.Errorf("%s: %s %s", id, wt, run)
		}
	}
	for _, id := range []string{"../../victim", "a/b", "..", "", ".x", "-x"} {
		if wt, run := s.Worktree(id), s.runDir(&orchestrator.Active{TaskID: id}); wt != "" || run != "" {
			t.Errorf("%q: %q %q", id, wt, run)
		}
	}
	if _, _, err := s.launch(context.Background(), &orchestrator.Active{TaskID: "../../victim"}, nil); err == nil {
		t.Error("launched an agent for an id no task can have")
	}
}
