// Command benchmerge measures the merge queue as a user runs it: it builds
// spool, seeds a repository's log with 1,000 merge queue entries, then times
// whole processes of `spool merge submit --no-push` and `spool merge list
// --json` and prints medians; and it runs the train over real entries and
// prints its own overhead per entry (everything but rebase and test command).
//
//	go run ./internal/benchmerge [-n 30] [-entries 1000] [-train 10]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/store"
)

var (
	runs    = flag.Int("n", 30, "timed runs of each command")
	entries = flag.Int("entries", 1000, "entries seeded into the log")
	trainN  = flag.Int("train", 10, "entries the train merges")
	keep    = flag.String("keep", "", "build the repositories in this directory and keep them")
	env     []string
)

func main() {
	flag.Parse()
	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "benchmerge-")
		check(err)
		defer os.RemoveAll(d)
		dir = d
	} else {
		check(os.MkdirAll(dir, 0o755))
	}
	env = append(os.Environ(), "SPOOL_ACTOR=bench@example.com", "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com", "GIT_CONFIG_NOSYSTEM=1", "SPOOL_NOW=")
	bin := filepath.Join(dir, "spool")
	run(".", "go", "build", "-o", bin, "./cmd/spool")
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}

	root := newRepo(dir, "repo", bin)
	seed(root, *entries, false)
	ws := worktree(root, "bench-ws")
	run(ws, bin, "merge", "submit", "--no-push") // warm: catch the projection up
	run(root, bin, "merge", "list", "--json")
	fmt.Printf("log: %d merge queue entries (pending), %d timed runs each\n", *entries, *runs)
	timeRuns("spool merge submit --no-push", ws, bin, "merge", "submit", "--no-push")
	timeRuns("spool merge list --json", root, bin, "merge", "list", "--json")
	timeRuns("spool merge list --all --json", root, bin, "merge", "list", "--all", "--json")

	troot := newRepo(dir, "train", bin)
	seed(troot, *entries, true)
	for i := 0; i < *trainN; i++ {
		w := worktree(troot, fmt.Sprintf("t%d", i))
		run(w, bin, "merge", "submit", "--no-push")
	}
	out := run(troot, bin, "merge", "run", "--once", "--json")
	var res struct {
		Processed []struct {
			Status    string  `json:"status"`
			ElapsedMS float64 `json:"elapsed_ms"`
			RebaseMS  float64 `json:"rebase_ms"`
			TestMS    float64 `json:"test_ms"`
		} `json:"processed"`
	}
	check(json.Unmarshal([]byte(out), &res))
	var overhead, elapsed []time.Duration
	for _, p := range res.Processed {
		if p.Status != "merged" {
			fail("train: entry ended %s", p.Status)
		}
		overhead = append(overhead, time.Duration((p.ElapsedMS-p.RebaseMS-p.TestMS)*float64(time.Millisecond)))
		elapsed = append(elapsed, time.Duration(p.ElapsedMS*float64(time.Millisecond)))
	}
	fmt.Printf("train: %d entries merged with %d terminal entries in the log (test command: true)\n", len(res.Processed), *entries)
	report("train overhead per entry (no rebase, no test)", overhead)
	report("train total per entry", elapsed)
}

func newRepo(dir, name, bin string) string {
	root := filepath.Join(dir, name)
	run(dir, "git", "init", "-q", "-b", "main", root)
	os.WriteFile(filepath.Join(root, "README"), []byte("bench\n"), 0o644)
	run(root, bin, "init")
	run(root, "git", "add", "-A")
	run(root, "git", "commit", "-q", "-m", "init")
	run(root, bin, "config", "set", "merge.test_command", `["true"]`)
	return root
}

func worktree(root, name string) string {
	path := filepath.Join(filepath.Dir(root), root[len(filepath.Dir(root))+1:]+"-"+name)
	run(root, "git", "worktree", "add", "-q", path, "-b", name)
	os.WriteFile(filepath.Join(path, name+".txt"), []byte(name+"\n"), 0o644)
	run(path, "git", "add", "-A")
	run(path, "git", "commit", "-q", "-m", name)
	return path
}

// seed appends n submitted entries (and cancels them when terminal) straight
// to the log, in batches, as spool's own commands would have.
func seed(root string, n int, terminal bool) {
	st, err := store.Open(context.Background(), root, nil)
	check(err)
	at := time.Now().Add(-time.Hour).UTC()
	for start := 0; start < n; start += 250 {
		var drafts []eventlog.Draft
		for i := start; i < min(n, start+250); i++ {
			ws := fmt.Sprintf("seed-%04d", i)
			prio := i % 5
			id := int64(i + 1)
			drafts = append(drafts, eventlog.Draft{Type: mergequeue.EvSubmitted, Subject: mergequeue.Subject(id), Data: mergequeue.EntryData{
				EntryID: id, To: mergequeue.Pending, Workspace: ws, Branch: ws, ChangeID: "I" + ws, ChangeIDSource: mergequeue.SourceTrailer,
				DedupeKey: ws + ":I" + ws, HeadSHA: fmt.Sprintf("%040x", i+1), Priority: &prio}})
			if terminal {
				drafts = append(drafts, eventlog.Draft{Type: mergequeue.EvCancelled, Subject: mergequeue.Subject(id),
					Data: mergequeue.EntryData{EntryID: id, From: mergequeue.Pending, To: mergequeue.Cancelled, HeadSHA: fmt.Sprintf("%040x", i+1)}})
			}
		}
		_, err := st.Log.Append(context.Background(), at, "seed@example.com", drafts, eventlog.AppendOptions{})
		check(err)
	}
}

// timeRuns runs a command n times and returns the wall times; the CPU
// times (user+sys of the process and the git commands it waited for) are
// printed too, as they say what the command costs when the machine is busy.
func timeRuns(what, dir, name string, args ...string) {
	var wall, cpu []time.Duration
	for i := 0; i < *runs; i++ {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			fail("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		wall = append(wall, time.Since(start))
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	report(what, wall)
	report("  cpu time (user+sys, git children included)", cpu)
}

func report(what string, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds) == 0 {
		return
	}
	fmt.Printf("  %-48s median %6.1f ms   min %6.1f ms   max %6.1f ms   (n=%d)\n", what,
		ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]), len(ds))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func run(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		fail("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchmerge: "+format+"\n", args...)
	os.Exit(1)
}
