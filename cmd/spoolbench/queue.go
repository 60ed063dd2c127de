package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"strconv"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/ids"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// queueMain builds a repository with a large work queue (10,000 tasks and
// 100,000 events by default) and times whole spool processes on it,
// reporting the median of several runs:
//
//	spoolbench queue -spool BIN [-tasks N] [-events N] [-runs N] [-dir DIR]
func queueMain(args []string) error {
	fs := flag.NewFlagSet("spoolbench queue", flag.ExitOnError)
	bin := fs.String("spool", "", "the spool binary to time (required)")
	tasks := fs.Int("tasks", 10_000, "tasks to create")
	events := fs.Int("events", 100_000, "events in the log, task.created included")
	runs := fs.Int("runs", 21, "runs per command")
	keep := fs.String("dir", "", "build the repository here (default: a temp dir, removed after)")
	fs.Parse(args)
	if *bin == "" {
		return fmt.Errorf("%w: -spool BIN is required", errUsage)
	}
	return benchQueue(*bin, *tasks, *events, *runs, *keep)
}

func benchQueue(bin string, nTasks, nEvents, runs int, dir string) error {
	bin, dir, env, cleanup, err := queueDataset(bin, nTasks, nEvents, dir)
	if err != nil {
		return err
	}
	defer cleanup()
	out, err := run(dir, env, bin, "ready", "--json", "--limit", "1")
	if err != nil {
		return err
	}
	var first []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &first); err != nil || len(first) == 0 {
		return fmt.Errorf("no ready task to show: %v", err)
	}
	for _, c := range [][]string{
		{"version"}, // the floor: starting the binary and parsing the command line
		{"ready", "--json"},
		{"ready", "--json", "--limit", "0"},
		{"next", "--json"},
		{"task", "add", "benchmark task", "-p", "1"},
		{"history", "--json"},
		{"stats", "--json"},
		// The beads front end, with the argv a bd client uses.
		{"bd", "ready", "--json"},
		{"bd", "ready", "--json", "--limit", "0"},
		{"bd", "list", "--json"},
		{"bd", "list", "--json", "--limit", "0"},
		{"bd", "show", first[0].ID, "--json"},
		{"bd", "create", "benchmark task", "-p", "1", "--silent"},
	} {
		t, err := repeat(0, runs, func() *exec.Cmd {
			cmd := exec.Command(bin, c...)
			cmd.Dir, cmd.Env = dir, env
			return cmd
		})
		if err != nil {
			return err
		}
		// Wall time is what a user waits; CPU time (user+system) shows the
		// work itself when other processes share the machine.
		fmt.Printf("spool %-34s wall median %6.1f ms (min %6.1f, max %6.1f)  cpu median %6.1f ms  (%d runs)\n",
			fmt.Sprint(c), ms(t.wall[len(t.wall)/2]), ms(t.wall[0]), ms(t.wall[len(t.wall)-1]), ms(t.cpu[len(t.cpu)/2]), runs)
	}
	return nil
}

// queueDataset makes the work queue's dataset in dir (a temp dir when
// empty, removed by cleanup), projections built, and prints what it made.
// It returns bin made absolute and the environment spool runs with.
func queueDataset(bin string, nTasks, nEvents int, dir string) (string, string, []string, func(), error) {
	start := time.Now()
	bin, dir, env, cleanup, err := benchRepo(bin, dir, "spool-bench-", "bench@spool.invalid")
	if err != nil {
		return "", "", nil, cleanup, err
	}
	if err := generateQueue(dir, nTasks, nEvents); err != nil {
		return "", "", nil, cleanup, err
	}
	if _, err := run(dir, env, bin, "replay"); err != nil {
		return "", "", nil, cleanup, err
	}
	fmt.Printf("dataset: %d tasks, %d events in %s (built in %s)\n", nTasks, nEvents, dir, time.Since(start).Round(time.Millisecond))
	printLoad()
	return bin, dir, env, cleanup, nil
}

// generateQueue appends the dataset straight through the event log: nTasks
// task.created, then updates, comments, dependencies and queue attempts
// until there are nEvents events.
func generateQueue(dir string, nTasks, nEvents int) error {
	ctx := context.Background()
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		return err
	}
	sess, err := st.Log.Begin(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	taskIDs := make([]string, nTasks)
	taken := map[string]bool{}
	var batch []eventlog.Draft
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := sess.Append(at, "bench@spool.invalid", batch, eventlog.AppendOptions{})
		batch = batch[:0]
		at = at.Add(time.Second)
		return err
	}
	add := func(d eventlog.Draft) error {
		batch = append(batch, d)
		if len(batch) == 5000 {
			return flush()
		}
		return nil
	}
	labels := []string{"automated", "backend", "frontend", "infra", "docs"}
	for i := range taskIDs {
		title := "task number " + strconv.Itoa(i)
		id := ids.New("sp", sess.Writer(), title, at, i, func(id string) bool { return taken[id] })
		taken[id], taskIDs[i] = true, id
		d := workqueue.CreatedData{Title: title, Description: "Generated for the work-queue benchmark; it has a description of a typical length.",
			Priority: i % 5, IssueType: "task", Labels: []string{labels[i%len(labels)]}}
		if i > 0 && i%10 == 0 {
			d.Deps = []string{taskIDs[i-1]}
		}
		if err := add(eventlog.Draft{Type: workqueue.TypeCreated, Subject: id, Data: d}); err != nil {
			return err
		}
	}
	lease := at.Add(24 * 365 * time.Hour)
	closed := map[string]bool{}
	for n, i := nTasks, 0; n < nEvents; i++ {
		id := taskIDs[i%nTasks]
		var drafts []eventlog.Draft
		kind := i % 6
		if closed[id] && kind >= 1 && kind <= 4 {
			kind = 0 // what spool would refuse for a closed task: a comment instead
		}
		switch kind {
		case 0:
			drafts = []eventlog.Draft{{Type: workqueue.TypeCommented, Subject: id, Data: workqueue.CommentData{Text: "a note on progress"}}}
		case 1:
			p := (i / 7) % 5
			drafts = []eventlog.Draft{{Type: workqueue.TypeUpdated, Subject: id, Data: workqueue.UpdatedData{Priority: &p}}}
		case 2, 3:
			drafts = []eventlog.Draft{
				{Type: workqueue.TypeClaimed, Subject: id, Data: workqueue.ClaimedData{Attempt: 1, Worker: "w", LeaseUntil: lease, Source: "native"}},
				{Type: workqueue.TypeFailed, Subject: id, Data: workqueue.FailedData{Attempt: 1, Error: "tests failed"}},
				{Type: workqueue.TypeRetried, Subject: id, Data: workqueue.RetriedData{PreviousStatus: "failed", PreviousAttempts: 1}},
			}
		case 4:
			if (i/6)%4 == 0 { // a quarter of these tasks get done
				closed[id] = true
				drafts = []eventlog.Draft{
					{Type: workqueue.TypeClaimed, Subject: id, Data: workqueue.ClaimedData{Attempt: 1, Worker: "w", LeaseUntil: lease, Source: "native"}},
					{Type: workqueue.TypeSucceeded, Subject: id, Data: workqueue.AttemptData{Attempt: 1}},
					{Type: workqueue.TypeClosed, Subject: id, Data: workqueue.ClosedData{Reason: "done"}},
				}
			} else {
				l := "reviewed"
				drafts = []eventlog.Draft{{Type: workqueue.TypeUpdated, Subject: id, Data: workqueue.UpdatedData{AddLabels: []string{l}}}}
			}
		case 5:
			drafts = []eventlog.Draft{{Type: workqueue.TypeCommented, Subject: id, Data: workqueue.CommentData{Text: "another note"}}}
		}
		for _, d := range drafts {
			if n >= nEvents {
				break
			}
			if err := add(d); err != nil {
				return err
			}
			n++
		}
	}
	return flush()
}
