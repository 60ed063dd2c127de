package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
)

// mergeMain measures the merge queue as a user runs it: it builds spool
// (run it from the repository's root), seeds a repository's log with 1,000
// merge queue entries, then times whole processes of `spool merge submit
// --no-push` and `spool merge list --json` and prints medians; and it runs
// the train over real entries and prints its own overhead per entry
// (everything but rebase and test command):
//
//	spoolbench merge [-n 30] [-entries 1000] [-active N] [-generated] [-train 10] [-keep DIR]
//
// With -active N, all but the last N seeded entries have ended
// (cancelled): a long-lived repository's log, whose history outgrows its
// queue. With -generated the seeded entries have the change ids spool
// generates in a git repository without Change-Id trailers (each
// remembered in the queue's identities) rather than trailers' ids.
func mergeMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench merge", flag.ExitOnError)
	runs := fs.Int("n", 30, "timed runs of each command")
	entries := fs.Int("entries", 1000, "entries seeded into the log")
	active := fs.Int("active", -1, "of the seeded entries, how many stay active (the others are cancelled); -1: all")
	generated := fs.Bool("generated", false, "seeded entries have generated change ids, not trailers'")
	trainN := fs.Int("train", 10, "entries the train merges (0: no train run)")
	keep := fs.String("keep", "", "build the repositories in this directory and keep them")
	fs.Parse(args)
	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "benchmerge-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b := &mergeBench{runs: *runs, generated: *generated, env: append(os.Environ(), "SPOOL_ACTOR=bench@example.com", "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com", "GIT_CONFIG_NOSYSTEM=1", "SPOOL_NOW=")}
	b.bin = filepath.Join(dir, "spool")
	if err := b.run(".", "go", "build", "-o", b.bin, "./cmd/spool"); err != nil {
		return err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if *active < 0 || *active > *entries {
		*active = *entries
	}
	if err := b.commands(dir, *entries, *active); err != nil {
		return err
	}
	if *trainN == 0 {
		return nil
	}
	return b.train(dir, *entries, *trainN)
}

// mergeBench is one run of spoolbench merge: its spool binary and the
// environment every command gets.
type mergeBench struct {
	runs      int
	generated bool
	bin       string
	env       []string
}

// commands times submit and list with entries entries in the log, the
// last active of them pending.
func (b *mergeBench) commands(dir string, entries, active int) error {
	root, err := b.newRepo(dir, "repo")
	if err != nil {
		return err
	}
	if err := seed(root, entries, entries-active, b.generated); err != nil {
		return err
	}
	ws, err := b.worktree(root, "bench-ws")
	if err != nil {
		return err
	}
	// Warm up: catch the projection up.
	if err := b.run(ws, b.bin, "merge", "submit", "--no-push"); err != nil {
		return err
	}
	if err := b.run(root, b.bin, "merge", "list", "--json"); err != nil {
		return err
	}
	// A worktree per timed run of a first submission: a new entry, whose
	// dedupe key is looked for among every entry, ended ones included.
	fresh := make([]string, b.runs)
	for i := range fresh {
		if fresh[i], err = b.worktree(root, fmt.Sprintf("new-%d", i)); err != nil {
			return err
		}
	}
	fmt.Printf("log: %d merge queue entries (%d pending, %d cancelled), %d timed runs each\n", entries, active, entries-active, b.runs)
	for _, c := range []struct {
		what string
		dirs []string // the runs take them in turn
		args []string
	}{
		{"spool merge submit --no-push (queued: update)", []string{ws}, []string{"merge", "submit", "--no-push"}},
		{"spool merge submit --no-push (new entry)", fresh, []string{"merge", "submit", "--no-push"}},
		{"spool merge list --json", []string{root}, []string{"merge", "list", "--json"}},
		{"spool merge list --all --json", []string{root}, []string{"merge", "list", "--all", "--json"}},
	} {
		run := 0
		t, err := repeat(0, b.runs, func() *exec.Cmd {
			cmd := exec.Command(b.bin, c.args...)
			cmd.Dir, cmd.Env = c.dirs[run%len(c.dirs)], b.env
			run++
			return cmd
		})
		if err != nil {
			return err
		}
		// The CPU times (user+sys of the process and the git commands it
		// waited for) say what the command costs when the machine is busy.
		report(c.what, t.wall)
		report("  cpu time (user+sys, git children included)", t.cpu)
		fmt.Printf("  %-48s %6.1f MiB\n", "peak RSS (largest run)", float64(t.maxRSS)/1024)
	}
	return nil
}

// train has the train merge trainN entries with entries terminal ones in
// the log and reports its overhead per entry.
func (b *mergeBench) train(dir string, entries, trainN int) error {
	troot, err := b.newRepo(dir, "train")
	if err != nil {
		return err
	}
	if err := seed(troot, entries, entries, b.generated); err != nil {
		return err
	}
	for i := range trainN {
		w, err := b.worktree(troot, fmt.Sprintf("t%d", i))
		if err != nil {
			return err
		}
		if err := b.run(w, b.bin, "merge", "submit", "--no-push"); err != nil {
			return err
		}
	}
	out, err := run(troot, b.env, b.bin, "merge", "run", "--once", "--json")
	if err != nil {
		return err
	}
	var res struct {
		Processed []struct {
			Status    string  `json:"status"`
			ElapsedMS float64 `json:"elapsed_ms"`
			RebaseMS  float64 `json:"rebase_ms"`
			TestMS    float64 `json:"test_ms"`
		} `json:"processed"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return err
	}
	var overhead, elapsed []time.Duration
	for _, p := range res.Processed {
		if p.Status != "merged" {
			return fmt.Errorf("train: entry ended %s", p.Status)
		}
		overhead = append(overhead, time.Duration((p.ElapsedMS-p.RebaseMS-p.TestMS)*float64(time.Millisecond)))
		elapsed = append(elapsed, time.Duration(p.ElapsedMS*float64(time.Millisecond)))
	}
	fmt.Printf("train: %d entries merged with %d terminal entries in the log (test command: true)\n", len(res.Processed), entries)
	report("train overhead per entry (no rebase, no test)", overhead)
	report("train total per entry", elapsed)
	return nil
}

// run runs a command for its effect.
func (b *mergeBench) run(dir, name string, args ...string) error {
	_, err := run(dir, b.env, name, args...)
	return err
}

// newRepo makes dir/name: a repository with one commit, spool initialised
// and `true` as the merge test command.
func (b *mergeBench) newRepo(dir, name string) (string, error) {
	root := filepath.Join(dir, name)
	if err := b.run(dir, "git", "init", "-q", "-b", "main", root); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(root, "README"), []byte("bench\n"), 0o644); err != nil {
		return "", err
	}
	for _, c := range [][]string{
		{b.bin, "init"},
		{"git", "add", "-A"},
		{"git", "commit", "-q", "-m", "init"},
		{b.bin, "config", "set", "merge.test_command", `["true"]`},
	} {
		if err := b.run(root, c[0], c[1:]...); err != nil {
			return "", err
		}
	}
	return root, nil
}

// worktree adds a worktree of root beside it, on a new branch name with one
// commit of its own.
func (b *mergeBench) worktree(root, name string) (string, error) {
	path := root + "-" + name
	if err := b.run(root, "git", "worktree", "add", "-q", path, "-b", name); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(path, name+".txt"), []byte(name+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := b.run(path, "git", "add", "-A"); err != nil {
		return "", err
	}
	return path, b.run(path, "git", "commit", "-q", "-m", name)
}

// seed appends n submitted entries (and cancels the first ended of them)
// straight to the log, in batches, as spool's own commands would have;
// with generated, as spool submits in a repository without Change-Id
// trailers (workspace ids of this clone, change ids generated).
func seed(root string, n, ended int, generated bool) error {
	st, err := store.Open(context.Background(), root, nil)
	if err != nil {
		return err
	}
	writer, err := st.Log.WriterID()
	if err != nil {
		return err
	}
	at := time.Now().Add(-time.Hour).UTC()
	for start := 0; start < n; start += 250 {
		var drafts []eventlog.Draft
		for i := start; i < min(n, start+250); i++ {
			ws := fmt.Sprintf("seed-%04d", i)
			prio := i % 5
			id := int64(i + 1)
			d := mergequeue.EntryData{EntryID: id, To: mergequeue.Pending, Workspace: ws, Branch: ws, ChangeID: "I" + ws, ChangeIDSource: mergequeue.SourceTrailer,
				DedupeKey: ws + ":I" + ws, HeadSHA: fmt.Sprintf("%040x", i+1), Priority: &prio}
			if generated {
				d.WorkspaceID = mergequeue.WorkspaceID(writer, ws)
				d.Worktree = filepath.Join(filepath.Dir(root), ws)
				d.ChangeID = mergequeue.GenerateChangeID(d.WorkspaceID, d.Branch, d.HeadSHA, at)
				d.ChangeIDSource = mergequeue.SourceGenerated
				d.DedupeKey = mergequeue.ComputeDedupeKey(d.ChangeID, d.WorkspaceID)
			}
			drafts = append(drafts, eventlog.Draft{Type: mergequeue.EvSubmitted, Subject: mergequeue.Subject(id), Data: d})
			if i < ended {
				drafts = append(drafts, eventlog.Draft{Type: mergequeue.EvCancelled, Subject: mergequeue.Subject(id),
					Data: mergequeue.EntryData{EntryID: id, From: mergequeue.Pending, To: mergequeue.Cancelled, HeadSHA: fmt.Sprintf("%040x", i+1)}})
			}
		}
		if _, err := st.Log.Append(context.Background(), at, "seed@example.com", drafts, eventlog.AppendOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// report prints the median, min and max of ds.
func report(what string, ds []time.Duration) {
	slices.Sort(ds)
	if len(ds) == 0 {
		return
	}
	fmt.Printf("  %-48s median %6.1f ms   min %6.1f ms   max %6.1f ms   (n=%d)\n", what,
		ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]), len(ds))
}
