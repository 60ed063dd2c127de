package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
)

// fixture is a real repository (gittest.Repo) with spool initialized.
type fixture struct {
	*gittest.Repo
	t   *testing.T
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	// Untested unless a test sets merge.test_command (config).
	r := gittest.New(t, map[string]string{".spool/config.json": `{"merge.untested": true}` + "\n"})
	return &fixture{Repo: r, t: t, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// service is the merge queue's service in dir, at the fixture's time, as actor.
func (f *fixture) service(dir, actor string) *Service {
	return Open(store.Env{Store: f.store(dir), Now: f.now, Warn: func(string) {},
		Actor: func(context.Context) (string, error) { return actor, nil }})
}

func (f *fixture) store(dir string) *store.Store {
	f.t.Helper()
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

func (f *fixture) config(key, value string) {
	f.t.Helper()
	st := f.store(f.Root)
	if key == "merge.test_command" {
		st.Config.Unset("merge.untested") // the two are exclusive
	}
	if err := st.Config.Set(key, value); err != nil {
		f.t.Fatal(err)
	}
	if err := st.Config.Save(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) submit(dir string, opt SubmitOptions, actor string) (*Response, error) {
	f.now = f.now.Add(time.Second)
	return f.service(dir, actor).Submit(context.Background(), opt)
}

func (f *fixture) mustSubmit(dir string, opt SubmitOptions) *Response {
	f.t.Helper()
	resp, err := f.submit(dir, opt, "ada@example.com")
	if err != nil {
		f.t.Fatalf("submit %s: %v", dir, err)
	}
	return resp
}

func (f *fixture) queue() *mergequeue.State {
	f.t.Helper()
	v, err := f.store(f.Root).Read(context.Background(), mergequeue.Name)
	if err != nil {
		f.t.Fatal(err)
	}
	q := queueOf(v)
	if bad := mergequeue.CheckInvariants(q); len(bad) > 0 {
		f.t.Fatalf("invariants: %v", bad)
	}
	return q
}

// events counts lines in the log.
func (f *fixture) events() int {
	n := 0
	files, _ := filepath.Glob(filepath.Join(f.Root, ".spool", "events", "*.jsonl"))
	for _, p := range files {
		b, _ := os.ReadFile(p)
		n += strings.Count(string(b), "\n")
	}
	return n
}

func (f *fixture) runner() *Runner {
	st := f.store(f.Root)
	return &Runner{Store: st, Actor: "train@example.com", Target: "main", ID: NewRunnerID("train"),
		Now: func() time.Time { f.now = f.now.Add(time.Second); return f.now }}
}

func (f *fixture) run() []Result {
	f.t.Helper()
	res, err := f.runner().Run(context.Background(), true)
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}
