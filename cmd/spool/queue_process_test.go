package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/spoolhq/spool/internal/git"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/store"
	"github.com/spoolhq/spool/internal/workqueue"
)

// These tests run real spool processes side by side, as workers would.

// queueRepo makes a spool repository holding n open tasks, appended in-process.
func queueRepo(t *testing.T, bin string, n int) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main"}, {bin, "init"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	st, err := store.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var drafts []eventlog.Draft
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("sp-%04d", i)
		drafts = append(drafts, eventlog.Draft{Type: workqueue.TypeCreated, Subject: id,
			Data: workqueue.CreatedData{Title: "task " + id, Priority: i % 5, IssueType: "task"}})
	}
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	if _, err := st.Log.Append(context.Background(), at, "setup", drafts, eventlog.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func spoolCmd(bin, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Eight workers call next in a loop against 200 tasks: every task is claimed
// exactly once, because each claim is decided under the log's lock, on
// tables saved once a quarter of the log is unsaved and overlays between
// (SPOOL_TEST_AMORTIZE), as at a million events.
func concurrentNextClaimsEachTaskOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ~200 processes")
	}
	bin := spoolBinary(t)
	const tasks, workers = 200, 8
	dir := queueRepo(t, bin, tasks)
	var mu sync.Mutex
	claims := map[string][]string{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(worker string) {
			defer wg.Done()
			for {
				out, err := spoolCmd(bin, dir, []string{"SPOOL_NOW=", "SPOOL_TEST_AMORTIZE=4"}, "--actor", worker, "--json", "next").Output()
				if err != nil {
					errs <- fmt.Errorf("%s: next: %v", worker, err)
					return
				}
				if strings.TrimSpace(string(out)) == "null" {
					return
				}
				var got struct{ ID, Worker string }
				if err := json.Unmarshal(out, &got); err != nil || got.ID == "" {
					errs <- fmt.Errorf("%s: bad output %q", worker, out)
					return
				}
				mu.Lock()
				claims[got.ID] = append(claims[got.ID], worker)
				mu.Unlock()
			}
		}(fmt.Sprint("worker-", w))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(claims) != tasks {
		t.Errorf("%d tasks claimed, want %d", len(claims), tasks)
	}
	for id, by := range claims {
		if len(by) != 1 {
			t.Errorf("%s claimed %d times, by %v", id, len(by), by)
		}
	}
	out, err := spoolCmd(bin, dir, nil, "log", "--json", "-t", "task.claimed").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out, []byte("\n")); n != tasks {
		t.Errorf("%d task.claimed events in the log, want %d", n, tasks)
	}
	if out, err := spoolCmd(bin, dir, nil, "verify").CombinedOutput(); err != nil {
		t.Errorf("verify: %v\n%s", err, out)
	}
}

// Commands killed at any moment, overlays written between the saves of the
// tables (SPOOL_TEST_AMORTIZE): nothing a command acknowledged is lost, no
// task is claimed twice, and what the next command loads is what a replay
// folds (verify).
func overlaysSurviveKills(t *testing.T) {
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 60)
	env := []string{"SPOOL_NOW=", "SPOOL_ACTOR=agent@example.com", "SPOOL_TEST_AMORTIZE=4"}
	run := func(args ...string) string {
		t.Helper()
		out, err := spoolCmd(bin, dir, env, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("status") // the first save
	over := filepath.Join(dir, ".git", "spool", "state", "tasks.over")
	if _, err := os.Stat(over); err == nil {
		t.Fatal("an overlay before any save was put off")
	}
	run("task", "comment", "sp-0001", "first")
	if _, err := os.Stat(over); err != nil {
		t.Fatalf("no overlay after a save put off: %v", err)
	}
	kill := func(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }
	acked := map[string][]string{} // task: comments acknowledged
	claimed := map[string]bool{}
	for i := range soak(30, 120) {
		id := fmt.Sprintf("sp-%04d", i%60)
		text := fmt.Sprint("acknowledged ", i)
		run("task", "comment", id, text)
		acked[id] = append(acked[id], text)
		killMidway(t, bin, dir, env, 30*time.Millisecond, kill, "task", "comment", fmt.Sprintf("sp-%04d", (i+7)%60), fmt.Sprint("killed ", i))
		if i%3 == 0 {
			var got struct{ ID string }
			if err := json.Unmarshal([]byte(run("--json", "next")), &got); err != nil || got.ID == "" {
				t.Fatalf("next: %v", err)
			}
			if claimed[got.ID] {
				t.Fatalf("%s claimed twice", got.ID)
			}
			claimed[got.ID] = true
			killMidway(t, bin, dir, env, 30*time.Millisecond, kill, "--json", "next")
		}
	}
	for id, texts := range acked {
		shown := run("--json", "task", "show", id)
		for _, text := range texts {
			if !strings.Contains(shown, text) {
				t.Errorf("%s lost the comment %q", id, text)
			}
		}
	}
	run("verify")
}

// A worker killed mid-task holds its claim until the lease runs out; then
// the task comes back and the lost attempt is counted.
func TestKilledWorkerTaskReturnsAfterLease(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 1)
	claimed := filepath.Join(t.TempDir(), "claimed.json")
	at := func(d time.Duration) []string {
		return []string{"SPOOL_NOW=" + time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).Add(d).Format(time.RFC3339)}
	}
	if out, err := spoolCmd(bin, dir, nil, "config", "set", "workqueue.lease", "30m").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The worker claims, then works (sleeps) until it is killed.
	worker := exec.Command("sh", "-c", `"$0" -C "$1" --actor doomed --json next > "$2" && exec sleep 60`, bin, dir, claimed)
	worker.Env = append(os.Environ(), at(0)...)
	worker.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(claimed); bytes.Contains(b, []byte(`"sp-0000"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never claimed its task")
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-worker.Process.Pid, syscall.SIGKILL)
	worker.Wait()

	// Within the lease nobody else gets it.
	out, err := spoolCmd(bin, dir, at(29*time.Minute), "--actor", "rescuer", "--json", "next").Output()
	if err != nil || strings.TrimSpace(string(out)) != "null" {
		t.Fatalf("within the lease: %s %v", out, err)
	}
	// After it, the task returns with the attempt counted.
	out, err = spoolCmd(bin, dir, at(30*time.Minute), "--json", "history", "sp-0000").Output()
	if err != nil || !bytes.Contains(out, []byte(`"last_error": "lease expired"`)) || !bytes.Contains(out, []byte(`"status": "failed"`)) {
		t.Fatalf("history after the lease: %s %v", out, err)
	}
	out, err = spoolCmd(bin, dir, at(31*time.Minute), "--actor", "rescuer", "--json", "next").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID      string
		Attempt int
	}
	if json.Unmarshal(out, &got); got.ID != "sp-0000" || got.Attempt != 2 {
		t.Fatalf("after the lease: %s", out)
	}
	out, _ = spoolCmd(bin, dir, nil, "log", "-t", "task.lease_expired").Output()
	if !bytes.Contains(out, []byte(`"worker":"doomed"`)) {
		t.Fatalf("no task.lease_expired for the dead worker:\n%s", out)
	}
}

// Agents starting together in a clone of the old layout (writer files
// committed, so .gitattributes names the merge driver) whose driver is not
// registered (a fresh clone): every command works without a warning, and
// the driver is registered once.
func TestConcurrentFirstCommandsRegisterTheDriver(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 1)
	if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte(".spool/events/*.jsonl merge=spool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exec.Command("git", "-C", dir, "config", "--remove-section", "merge.spool").Run() // not registered yet
	const n = 40
	var wg sync.WaitGroup
	outs := make([][]byte, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "-C", dir, "status")
			outs[i], _ = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for _, out := range outs {
		if bytes.Contains(out, []byte("warning")) || bytes.Contains(out, []byte("spool:")) {
			t.Fatalf("a first command complained:\n%s", out)
		}
	}
	out, err := exec.Command("git", "-C", dir, "config", "--get-all", "merge.spool.driver").Output()
	if err != nil || strings.TrimSpace(string(out)) != git.MergeDriver {
		t.Fatalf("merge.spool.driver = %q, %v", out, err)
	}
}

// Requests to bd left pending (bd failed) are carried out by whichever later
// commands run once their wait is over (a refused request is not tried again
// for 10 s), and commands started together never run one twice: each is run
// under the clone's sync lock, against the pending list read after it.
func TestConcurrentCommandsRunAPendingRequestOnce(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	dir := queueRepo(t, bin, 0)
	fake, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fakebd", "bd"))
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	ready := filepath.Join(scratch, "ready.json")
	argv := filepath.Join(scratch, "argv.log")
	const tasks = 3
	var beads []string
	for i := range tasks {
		beads = append(beads, fmt.Sprintf(`{"id":"bd-%d","title":"bead %d","priority":1}`, i, i))
	}
	if err := os.WriteFile(ready, []byte("["+strings.Join(beads, ",")+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"SPOOL_ACTOR=agent", "SPOOL_FAKEBD_READY=" + ready, "SPOOL_FAKEBD_LOG=" + argv}
	must := func(env []string, args ...string) string {
		t.Helper()
		out, err := spoolCmd(bin, dir, env, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("spool %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	must(env, "config", "set", "workqueue.source", "bd")
	must(env, "config", "set", "workqueue.source_bin", fake)
	failing := append([]string{"SPOOL_FAKEBD_FAIL=Error: database is locked", "SPOOL_FAKEBD_FAIL_CMD=close"}, env...)
	for range tasks {
		must(env, "next")
	}
	for i := range tasks {
		if out := must(failing, "done", fmt.Sprintf("bd-%d", i)); !strings.Contains(out, "bd refused close for "+fmt.Sprintf("bd-%d", i)) {
			t.Fatalf("done with bd failing did not warn:\n%s", out)
		}
	}

	// A minute on: every refused request's wait is over.
	later := append([]string{"SPOOL_NOW=" + time.Now().Add(time.Minute).UTC().Format(time.RFC3339)}, env...)
	const n = 6
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := spoolCmd(bin, dir, later, "next").CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || strings.Contains(outs[i], "warning") {
			t.Fatalf("next %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	log, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	events := must(nil, "log", "-t", "task.synced")
	for i := range tasks {
		// The close its done tried, refused (the dones after it left it to
		// its wait), and one that worked.
		if got := strings.Count(string(log), fmt.Sprintf("bd close --reason=done -- bd-%d\n", i)); got != 2 {
			t.Errorf("bd-%d was closed %d times, want 2 (its done's, refused; one that worked):\n%s", i, got, log)
		}
		if got := strings.Count(events, fmt.Sprintf(" bd-%d ", i)); got != 1 {
			t.Errorf("bd-%d has %d task.synced events, want 1:\n%s", i, got, events)
		}
	}
	if out := must(nil, "--json", "history"); strings.Contains(out, "pending_sync") {
		t.Fatalf("requests still pending:\n%s", out)
	}
}
