package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// hookRepo is queueRepo's repository with n tasks, abandoned at their
// first failure, and workqueue.on_abandoned set to a script that appends
// "TASK PID" to the file it returns, then sleeps for sleep seconds.
func hookRepo(t *testing.T, bin string, n int, sleep int) (dir, ran string) {
	t.Helper()
	dir = queueRepo(t, bin, n)
	scratch := t.TempDir()
	ran = filepath.Join(scratch, "ran")
	script := filepath.Join(scratch, "hook.sh")
	body := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\necho \"$SPOOL_TASK_ID $$\" >> %q\nsleep %d\n", ran, sleep)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal([]string{script})
	for _, kv := range [][2]string{{"backoff.max_failures", "1"}, {"workqueue.on_abandoned", string(argv)}} {
		if out, err := spoolCmd(bin, dir, nil, "config", "set", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("config set %s: %v\n%s", kv[0], err, out)
		}
	}
	return dir, ran
}

// hookOutcomes returns the data of every task.hook_finished, by task.
func hookOutcomes(t *testing.T, bin, dir string) map[string][]workqueue.HookFinishedData {
	t.Helper()
	out := map[string][]workqueue.HookFinishedData{}
	for _, e := range jobEvents(t, bin, dir, nil, workqueue.TypeHookFinished) {
		var d workqueue.HookFinishedData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		out[e.Subject] = append(out[e.Subject], d)
	}
	return out
}

// Eight workers each claim a task and fail it at once, abandoning it: every
// abandonment's hook runs exactly once, though each command also looks for
// requests others left, under the clone's hooks lock.
func TestConcurrentAbandonmentsRunEachHookOnce(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	const workers = 8
	dir, ran := hookRepo(t, bin, workers, 0)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	outs := make([]string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := []string{"SPOOL_NOW=", fmt.Sprintf("SPOOL_ACTOR=worker-%d", w)}
			out, err := spoolCmd(bin, dir, env, "--json", "next").Output()
			var claimed struct{ ID string }
			if err != nil || json.Unmarshal(out, &claimed) != nil || claimed.ID == "" {
				errs[w] = fmt.Errorf("next: %v %s", err, out)
				return
			}
			b, err := spoolCmd(bin, dir, env, "fail", claimed.ID, "--error", "boom").CombinedOutput()
			outs[w], errs[w] = string(b), err
		}()
	}
	wg.Wait()
	for w := range workers {
		if errs[w] != nil || strings.Contains(outs[w], "warning") {
			t.Fatalf("worker %d: %v\n%s", w, errs[w], outs[w])
		}
	}
	runs := map[string]int{}
	for _, l := range lines(ran) {
		runs[strings.Fields(l)[0]]++
	}
	outcomes := hookOutcomes(t, bin, dir)
	for i := range workers {
		id := fmt.Sprintf("sp-%04d", i)
		if runs[id] != 1 {
			t.Errorf("the hook ran %d times for %s, want once:\n%s", runs[id], id, strings.Join(lines(ran), "\n"))
		}
		if o := outcomes[id]; len(o) != 1 || o[0].ExitCode == nil || *o[0].ExitCode != 0 {
			t.Errorf("outcomes for %s: %+v", id, o)
		}
	}
}

// spool died after appending an abandonment and its hook's request (the
// append stands, the hook never ran): the commands that come next, started
// together, and a watcher's pass run it exactly once.
func TestHookLeftByACrashRunsOnce(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir, ran := hookRepo(t, bin, 1, 0)
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, at := "sp-0000", time.Now().UTC()
	abandoned := workqueue.AbandonedData{TaskID: id, Attempts: 1, LastError: "boom", MaxFailures: 1}
	reqs, err := workqueue.HookRequests([]eventlog.Draft{{Type: workqueue.TypeAbandoned, Subject: id, Data: abandoned}},
		workqueue.HooksFrom(st.Config))
	if err != nil || len(reqs) != 1 {
		t.Fatalf("requests %v %v", reqs, err)
	}
	drafts := []eventlog.Draft{
		{Type: workqueue.TypeClaimed, Subject: id, Data: workqueue.ClaimedData{Attempt: 1, Worker: "crashed", LeaseUntil: at.Add(time.Hour), Source: workqueue.SourceNative}},
		{Type: workqueue.TypeFailed, Subject: id, Data: workqueue.FailedData{Attempt: 1, Error: "boom"}},
		{Type: workqueue.TypeAbandoned, Subject: id, Data: abandoned},
		reqs[0],
	}
	if _, err := st.Log.Append(context.Background(), at, "crashed", drafts, eventlog.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := spoolCmd(bin, dir, nil, "history", id).CombinedOutput(); err != nil || !strings.Contains(string(out), "hook pending: on_abandoned") {
		t.Fatalf("history does not show the request pending: %v\n%s", err, out)
	}

	const n = 6
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"next"}
			if i == 0 {
				args = []string{"watch", "--once"}
			}
			out, err := spoolCmd(bin, dir, []string{"SPOOL_NOW=", "SPOOL_ACTOR=after"}, args...).CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || strings.Contains(outs[i], "warning") {
			t.Fatalf("command %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	if got := lines(ran); len(got) != 1 || !strings.HasPrefix(got[0], id+" ") {
		t.Fatalf("the hook ran %d times, want once: %q", len(got), got)
	}
	if o := hookOutcomes(t, bin, dir)[id]; len(o) != 1 || o[0].ExitCode == nil || *o[0].ExitCode != 0 {
		t.Fatalf("outcomes %+v", o)
	}
}

// spool is killed while the hook runs: the hook ends with it (its process
// group, internal/proc), and the next command records that it was
// interrupted rather than run it a second time.
func TestHookInterruptedByACrashIsNotRunAgain(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir, ran := hookRepo(t, bin, 1, 60)
	env := []string{"SPOOL_NOW=", "SPOOL_ACTOR=doomed"}
	if out, err := spoolCmd(bin, dir, env, "next").CombinedOutput(); err != nil {
		t.Fatalf("next: %v\n%s", err, out)
	}
	fail := startSpool(t, bin, dir, env, "fail", "fail", "sp-0000", "--error", "boom")
	waitFor(t, 30*time.Second, "the hook never started", func() bool { return len(lines(ran)) == 1 })
	fail.kill(t)
	var pid int
	fmt.Sscanf(strings.Fields(lines(ran)[0])[1], "%d", &pid)
	waitFor(t, 10*time.Second, fmt.Sprintf("the hook (pid %d) outlived spool", pid), func() bool { return !processAlive(pid) })

	out, err := spoolCmd(bin, dir, []string{"SPOOL_NOW=", "SPOOL_ACTOR=after"}, "next").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "interrupted: spool stopped while the hook ran") {
		t.Fatalf("next after the crash: %v\n%s", err, out)
	}
	if got := lines(ran); len(got) != 1 {
		t.Fatalf("the hook ran %d times, want once: %q", len(got), got)
	}
	o := hookOutcomes(t, bin, dir)["sp-0000"]
	if len(o) != 1 || o[0].ExitCode != nil || !strings.HasPrefix(o[0].Error, "interrupted") {
		t.Fatalf("outcomes %+v", o)
	}
	if out, _ := spoolCmd(bin, dir, nil, "--json", "history", "sp-0000").Output(); strings.Contains(string(out), "pending_hooks") {
		t.Fatalf("still pending:\n%s", out)
	}
}

// processAlive reports whether pid runs (a zombie does not). Only Linux is
// asked: elsewhere spool cannot promise it (internal/proc's guard).
func processAlive(pid int) bool {
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
