package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/proc"
	"github.com/spoolhq/spool/internal/proc/proctest"
)

// These tests run the orchestrator as it runs for real: spool watch
// processes, the fake agent (testdata/fakeagent/agent) under its
// supervisor, kill -9 at each phase. Every wait has a deadline.

// orchRepo is a repository with a first commit, one task, and the fake
// agent configured in mode; it returns the directory, the env, the task id
// and the file the agent's runs are written to.
func orchRepo(t *testing.T, bin, mode string, priority int) (dir string, env []string, id, runs string) {
	t.Helper()
	dir, env = jobRepo(t, bin)
	runs = filepath.Join(t.TempDir(), "runs")
	env = append(env, "FAKE_AGENT_RUNS="+runs, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("add", "-A")
	git("commit", "-qm", "start")
	t.Cleanup(func() { killSupervisors(dir) })
	agent, err := filepath.Abs("../../testdata/fakeagent/agent")
	if err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal([]string{"sh", agent, mode})
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.agent_command", string(argv))
	var task struct {
		ID string `json:"id"`
	}
	out := jobSpool(t, bin, dir, env, "--json", "task", "add", "the task", "-p", strconv.Itoa(priority))
	if err := json.Unmarshal([]byte(out), &task); err != nil || task.ID == "" {
		t.Fatalf("task add: %v\n%s", err, out)
	}
	return dir, env, task.ID, runs
}

// killSupervisors ends the agents a failed test left running: their
// supervisors outlive a killed watch by design.
func killSupervisors(dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, ".git", "spool", "runs", "*", "attempt-*.supervisor.json"))
	for _, f := range files {
		var p orchestrator.Process
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &p) == nil {
			proc.KillGroup(proc.Record{PID: p.PID, PGID: p.PGID, Start: p.Start, Boot: p.Boot})
		}
	}
}

// stallFast makes a stall a 1 s affair that ends the task: the first
// failure abandons it.
func stallFast(t *testing.T, bin, dir string, env []string) {
	t.Helper()
	for _, kv := range [][2]string{{"orchestrator.stall_timeout", "1s"}, {"orchestrator.watchdog_interval", "1s"},
		{"orchestrator.kill_grace", "1s"}, {"workqueue.policy", "exponential"}, {"backoff.max_failures", "1"}} {
		jobSpool(t, bin, dir, env, "config", "set", kv[0], kv[1])
	}
}

// finished returns the orchestrator.finished events' outcomes, in order.
func finished(t *testing.T, bin, dir string, env []string) []string {
	t.Helper()
	var out []string
	for _, e := range jobEvents(t, bin, dir, env, orchestrator.TypeFinished) {
		var d orchestrator.FinishedData
		json.Unmarshal(e.Data, &d)
		out = append(out, d.Outcome)
	}
	return out
}

func taskStatus(t *testing.T, bin, dir string, env []string, id string) string {
	t.Helper()
	var got []struct {
		Status string `json:"status"`
	}
	out := jobSpool(t, bin, dir, env, "--json", "task", "show", id)
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		t.Fatalf("task show: %v\n%s", err, out)
	}
	return got[0].Status
}

// noTwice fails when the fake agent saw another agent of its task alive.
func noTwice(t *testing.T, runs string) {
	t.Helper()
	for _, l := range lines(runs) {
		if strings.HasPrefix(l, "twice ") {
			t.Errorf("two agents ran for one task at once: %s", l)
		}
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// An agent that succeeds: watch --once runs it in its worktree on
// spool/<id>, closes the task, and the work is on the branch.
func TestOrchestratorAgentSucceeds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "succeed", 2)
	jobSpool(t, bin, dir, env, "watch", "--once")
	if s := taskStatus(t, bin, dir, env, id); s != "closed" {
		t.Fatalf("task is %s after the agent succeeded", s)
	}
	if got := finished(t, bin, dir, env); strings.Join(got, ",") != "done" {
		t.Errorf("outcomes %v, want [done]", got)
	}
	if files := gitOut(t, dir, "ls-tree", "--name-only", "spool/"+id); !strings.Contains(files, "work-"+id+".txt") {
		t.Errorf("branch spool/%s has %q, want the agent's commit", id, files)
	}
	log, err := os.ReadFile(filepath.Join(dir, ".git", "spool", "runs", "task-"+id, "attempt-1.log"))
	if err != nil || !strings.Contains(string(log), "committed") {
		t.Errorf("attempt-1.log: %v\n%s", err, log)
	}
	var st struct {
		CurrentTask *orchestrator.Active `json:"currentTask"`
		QueueDepth  int                  `json:"queueDepth"`
	}
	if err := json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "orchestrator", "status")), &st); err != nil || st.CurrentTask != nil || st.QueueDepth != 0 {
		t.Errorf("status after: %+v, %v", st, err)
	}
	noTwice(t, runs)
}

// An agent that fails is retried at once with the failure as context
// (progressive, the default with an agent), and a task at priority 4 is
// Blocked after three failures, with task.blocked's payload (taskId,
// totalAttempts, lastFailureReason).
func TestOrchestratorFailingAgentBlocks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "fail", 4)
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := finished(t, bin, dir, env); strings.Join(got, ",") != "failed,failed,failed" {
		t.Fatalf("outcomes %v, want three failed attempts", got)
	}
	blocked := jobEvents(t, bin, dir, env, "task.blocked")
	if len(blocked) != 1 {
		t.Fatalf("%d task.blocked events", len(blocked))
	}
	var d struct {
		TaskID            string `json:"taskId"`
		TotalAttempts     int    `json:"totalAttempts"`
		LastFailureReason string `json:"lastFailureReason"`
	}
	json.Unmarshal(blocked[0].Data, &d)
	if d.TaskID != id || d.TotalAttempts != 3 || !strings.Contains(d.LastFailureReason, "3 tests failed") {
		t.Errorf("task.blocked = %s", blocked[0].Data)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".git", "spool", "runs", "task-"+id, "attempt-2.log"))
	if !strings.Contains(string(log), "the last attempt failed: agent exited with status 1") {
		t.Errorf("attempt 2 had no failure context:\n%s", log)
	}
	noTwice(t, runs)
}

// An agent killed while git moved its branch leaves the ref's lock file:
// the failed attempt's revert must not be refused for ever.
func TestOrchestratorRevertsPastAStaleRefLock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, _ := orchRepo(t, bin, "lockfail", 4)
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := finished(t, bin, dir, env); strings.Join(got, ",") != "failed,failed,failed" {
		t.Fatalf("outcomes %v, want three failed attempts", got)
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "main", "spool/"+id).Output()
	if lines := strings.Fields(string(out)); err != nil || len(lines) != 2 || lines[0] != lines[1] {
		t.Fatalf("spool/%s was not reverted to main: %v %s", id, err, out)
	}
}

// A stalled agent is stopped by the watchdog (SIGTERM, grace, SIGKILL) and
// its attempt recorded as failed, "stalled".
func TestOrchestratorStalledAgentStopped(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "stall", 2)
	stallFast(t, bin, dir, env)
	jobSpool(t, bin, dir, env, "watch", "--once")
	failed := jobEvents(t, bin, dir, env, "task.failed")
	if len(failed) != 1 || !strings.Contains(string(failed[0].Data), "stalled: no output for 1s") {
		t.Fatalf("task.failed events: %v", failed)
	}
	var pid int
	for _, l := range lines(runs) {
		if f := strings.Fields(l); f[0] == "start" {
			pid, _ = strconv.Atoi(f[3])
		}
	}
	proctest.WaitExited(t, pid)
	if got := finished(t, bin, dir, env); strings.Join(got, ",") != "failed" {
		t.Errorf("outcomes %v", got)
	}
	_ = id
}

// kill -9 of spool watch at each phase of an attempt, with the agent left
// alive or killed too: the next watch monitors the agent to its end or
// reverts the attempt and reopens the task, and never runs two agents for
// the task at once. The task is done in the end.
func TestOrchestratorKill9EachPhase(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	cases := []struct {
		pause     string
		killAgent bool
		outcomes  string // orchestrator.finished, in order
	}{
		{"claimed", false, "released,done"},
		{"launched", false, "done"},
		{"launched", true, "released,done"},
		{orchestrator.TypeAgentStarted, false, "done"},
		{orchestrator.TypeAgentStarted, true, "released,done"},
		{orchestrator.TypeAgentExited, false, "done"},
	}
	for _, c := range cases {
		name := strings.TrimPrefix(c.pause, "orchestrator.")
		if c.killAgent {
			name += "/agent killed"
		}
		t.Run(name, func(t *testing.T) {
			dir, env, id, runs := orchRepo(t, bin, "wait", 2)
			release := filepath.Join(t.TempDir(), "release")
			// Released at the end whatever happened: the agent then ends, and
			// its supervisor with it, even when the test failed halfway.
			t.Cleanup(func() {
				os.WriteFile(release, []byte("0"), 0o644)
				time.Sleep(500 * time.Millisecond) // the agent looks every 0.2 s
			})
			paused := filepath.Join(t.TempDir(), "paused")
			env = append(env, "FAKE_AGENT_RELEASE="+release)
			if c.pause == orchestrator.TypeAgentExited {
				os.WriteFile(release, []byte("0"), 0o644) // the agent ends at once
			}
			w := startSpool(t, bin, dir, append(env, "SPOOL_TEST_ORCH_PAUSE="+c.pause, "SPOOL_TEST_ORCH_PAUSE_FILE="+paused), "watch", "watch")
			proctest.WaitFile(t, paused)
			var agent int
			if c.pause != "claimed" && c.pause != orchestrator.TypeAgentExited {
				waitFor(t, 10*time.Second, "the agent started", func() bool { return len(lines(runs)) > 0 })
				agent, _ = strconv.Atoi(strings.Fields(lines(runs)[0])[3])
			}
			w.kill(t)
			var sup orchestrator.Process
			if agent != 0 {
				b, _ := os.ReadFile(orchestrator.SupervisorPath(filepath.Join(dir, ".git", "spool", "runs", "task-"+id), 1))
				json.Unmarshal(b, &sup)
				if !proctest.Running(agent) || !proctest.Running(sup.PID) {
					t.Fatalf("the agent (%d) or its supervisor (%d) died with watch", agent, sup.PID)
				}
			}
			if c.killAgent {
				syscall.Kill(sup.PID, syscall.SIGKILL)
				proctest.WaitExited(t, agent) // the supervisor's guard ends the agent's group
			}
			if c.pause != orchestrator.TypeAgentExited {
				os.WriteFile(release, []byte("0"), 0o644)
			}
			w2 := startSpool(t, bin, dir, env, "watch2", "watch", "--poll", "100ms")
			waitFor(t, 30*time.Second, "the task was closed", func() bool { return taskStatus(t, bin, dir, env, id) == "closed" })
			w2.stop(t)
			if got := strings.Join(finished(t, bin, dir, env), ","); got != c.outcomes {
				t.Errorf("outcomes %s, want %s", got, c.outcomes)
			}
			noTwice(t, runs)
			if strings.HasPrefix(c.outcomes, "released") {
				// The reverted attempt's partial commit is not on the branch.
				if files := gitOut(t, dir, "ls-tree", "--name-only", "spool/"+id); strings.Contains(files, "partial-"+id+"-1.txt") {
					t.Errorf("attempt 1's partial commit survived the revert: %s", files)
				}
				if out := jobSpool(t, bin, dir, env, "task", "show", id); !strings.Contains(out, "reverted and the task reopened") {
					t.Errorf("no failure comment on the task:\n%s", out)
				}
			}
		})
	}
}

// kill -9 of spool watch after it recorded that it stops a stalled agent
// and before it signalled it: the next watch stops the agent and records
// the stalled attempt.
func TestOrchestratorKill9WhileStopping(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "stall", 2)
	stallFast(t, bin, dir, env)
	paused := filepath.Join(t.TempDir(), "paused")
	w := startSpool(t, bin, dir, append(env, "SPOOL_TEST_ORCH_PAUSE="+orchestrator.TypeStopping, "SPOOL_TEST_ORCH_PAUSE_FILE="+paused), "watch", "watch")
	proctest.WaitFile(t, paused)
	w.kill(t)
	agent, _ := strconv.Atoi(strings.Fields(lines(runs)[0])[3])
	if !proctest.Running(agent) {
		t.Fatal("the agent died with watch")
	}
	jobSpool(t, bin, dir, env, "watch", "--once")
	proctest.WaitExited(t, agent)
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "failed" {
		t.Errorf("outcomes %s, want failed", got)
	}
	if failed := jobEvents(t, bin, dir, env, "task.failed"); len(failed) != 1 || !strings.Contains(string(failed[0].Data), "stalled") {
		t.Errorf("task.failed: %v", failed)
	}
	if s := taskStatus(t, bin, dir, env, id); s == "in_progress" {
		t.Errorf("task still %s", s)
	}
	noTwice(t, runs)
}

// The watchdog firing every second while other processes append events
// and ping the watcher: passes run one at a time, so one agent runs at a
// time, and every task is done once.
func TestOrchestratorWatchdogAndEventsStartOneAgent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, first, runs := orchRepo(t, bin, "wait", 2)
	ids := []string{first}
	for _, title := range []string{"second", "third"} {
		var task struct {
			ID string `json:"id"`
		}
		json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "add", title)), &task)
		ids = append(ids, task.ID)
	}
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.watchdog_interval", "1s")
	release := filepath.Join(t.TempDir(), "release")
	env = append(env, "FAKE_AGENT_RELEASE="+release)
	w := startSpool(t, bin, dir, env, "watch", "watch", "--poll", "50ms")
	waitFor(t, 10*time.Second, "an agent started", func() bool { return len(lines(runs)) > 0 })
	for i := range 20 { // events and the watchdog, together, for about 2.5 s
		jobSpool(t, bin, dir, env, "task", "comment", ids[i%3], "poke "+strconv.Itoa(i))
		time.Sleep(100 * time.Millisecond)
	}
	os.WriteFile(release, []byte("0"), 0o644)
	waitFor(t, 30*time.Second, "every task was closed", func() bool {
		for _, id := range ids {
			if taskStatus(t, bin, dir, env, id) != "closed" {
				return false
			}
		}
		return true
	})
	w.stop(t)
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "done,done,done" {
		t.Errorf("outcomes %s, want three done", got)
	}
	if n := len(jobEvents(t, bin, dir, env, orchestrator.TypeWatchdogRan)); n < 2 {
		t.Errorf("the watchdog ran %d times in about 3 s at a 1 s interval", n)
	}
	noTwice(t, runs)
}

// A setting changed while spool watch runs takes effect at once: with the
// watchdog an hour away, configuring the agent command starts the agent for
// the waiting task within seconds, because the configuration's change
// wakes the watcher.
func TestOrchestratorConfiguredWhileWatchRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, _ := orchRepo(t, bin, "succeed", 2)
	argv := jobSpool(t, bin, dir, env, "config", "get", "orchestrator.agent_command")
	jobSpool(t, bin, dir, env, "config", "unset", "orchestrator.agent_command")
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.watchdog_interval", "1h")
	w := startWatch(t, bin, dir, env)
	time.Sleep(500 * time.Millisecond) // its first pass: nothing to run
	if s := taskStatus(t, bin, dir, env, id); s != "open" {
		t.Fatalf("task is %s before the agent command was set", s)
	}
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.agent_command", strings.TrimSpace(argv))
	waitFor(t, 20*time.Second, "the agent did not run after the setting changed", func() bool {
		return taskStatus(t, bin, dir, env, id) == "closed"
	})
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch: %v\n%s", err, w.output())
	}
}

// An epic (a PRD's queue handle, label prd) is never handed to the agent,
// however urgent: watch --once runs the task and leaves the epic open. With
// orchestrator.epics the epic is agent work too; a plan's epic never is.
func TestOrchestratorLeavesEpicsAlone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, task, runs := orchRepo(t, bin, "succeed", 2)
	add := func(args ...string) string {
		var got struct {
			ID string `json:"id"`
		}
		out := jobSpool(t, bin, dir, env, append([]string{"--json", "task", "add"}, args...)...)
		if err := json.Unmarshal([]byte(out), &got); err != nil || got.ID == "" {
			t.Fatalf("task add: %v\n%s", err, out)
		}
		return got.ID
	}
	prd := add("PRD checkout", "-t", "epic", "-l", "prd", "-p", "0")
	plan := add("Plan epic", "-t", "epic", "-l", "plan", "-p", "0")
	jobSpool(t, bin, dir, env, "watch", "--once")
	if s := taskStatus(t, bin, dir, env, task); s != "closed" {
		t.Fatalf("task is %s", s)
	}
	for _, l := range lines(runs) {
		if strings.Contains(l, prd) || strings.Contains(l, plan) {
			t.Fatalf("an agent ran for an epic: %s", l)
		}
	}
	if s := taskStatus(t, bin, dir, env, prd); s != "open" {
		t.Fatalf("the PRD epic is %s", s)
	}
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.epics", "true")
	jobSpool(t, bin, dir, env, "watch", "--once")
	if s := taskStatus(t, bin, dir, env, prd); s != "closed" {
		t.Errorf("with orchestrator.epics the PRD epic is %s", s)
	}
	if s := taskStatus(t, bin, dir, env, plan); s != "open" {
		t.Errorf("a plan's epic went to the agent: %s", s)
	}
}

// A rogue agent, its marker variable unset, tries to change the log: task
// add, done of its own task, and the same from a double-forked process in a
// session of its own. spool refuses each (exit 3, agent_may_not_write) and
// appends nothing; reading still works; and the daemon the rogue left ends
// with the attempt. The task's fate is its exit status: failed, then
// Blocked at priority 4.
func TestOrchestratorAgentCannotWrite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "rogue", 4)
	env = append(env, "FAKE_AGENT_SPOOL="+bin)
	created := len(jobEvents(t, bin, dir, env, "task.created"))
	jobSpool(t, bin, dir, env, "watch", "--once")
	got := map[string]int{}
	for _, l := range lines(runs + ".rogue") {
		got[l]++
	}
	if got["add 3"] != 3 || got["done 3"] != 3 || got["orphan 3"] != 3 || got["show 0"] != 3 || len(got) != 4 {
		t.Errorf("the rogue's exit statuses over three attempts: %v", got)
	}
	if n := len(jobEvents(t, bin, dir, env, "task.created")); n != created {
		t.Errorf("%d tasks created by the agent", n-created)
	}
	if s := jobEvents(t, bin, dir, env, "task.succeeded"); len(s) != 0 {
		t.Errorf("the agent closed its own task: %v", s)
	}
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "failed,failed,failed" {
		t.Errorf("outcomes %s", got)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".git", "spool", "runs", "task-"+id, "attempt-1.log"))
	if !strings.Contains(string(log), "spool does not change the log for an agent") {
		t.Errorf("the refusal does not say why:\n%s", log)
	}
	daemons := lines(runs + ".rogue.daemon")
	if len(daemons) != 3 {
		t.Fatalf("the rogue's daemons recorded %d pids, want 3", len(daemons))
	}
	for _, l := range daemons {
		pid, err := strconv.Atoi(l)
		if err != nil || pid <= 1 {
			t.Fatalf("daemon pid %q", l)
		}
		proctest.WaitExited(t, pid) // killed with its attempt, not left to run 600 s
	}
	noTwice(t, runs)
}

// storm is a repository with five ready tasks at priority 1 and the agent
// command argv; it returns the directory, the env and the task ids.
func storm(t *testing.T, bin string, mode string, argv []string) (string, []string, []string) {
	t.Helper()
	dir, env, first, _ := orchRepo(t, bin, mode, 1)
	ids := []string{first}
	for i := range 4 {
		var task struct {
			ID string `json:"id"`
		}
		json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "add", "task "+strconv.Itoa(i), "-p", "1")), &task)
		ids = append(ids, task.ID)
	}
	if argv != nil {
		b, _ := json.Marshal(argv)
		jobSpool(t, bin, dir, env, "config", "set", "orchestrator.agent_command", string(b))
	}
	return dir, env, ids
}

// uncharged fails unless every task is open at priority 1 with no failure
// counted, demoted or Blocked: the breaker's runs are not the tasks'.
func uncharged(t *testing.T, bin, dir string, env []string, ids []string) {
	t.Helper()
	for _, typ := range []string{"task.failed", "task.demoted", "task.blocked", "task.abandoned"} {
		if evs := jobEvents(t, bin, dir, env, typ); len(evs) > 0 {
			t.Errorf("%d %s events: %s", len(evs), typ, evs[0].Data)
		}
	}
	for _, id := range ids {
		var got []struct {
			Status   string `json:"status"`
			Priority int    `json:"priority"`
		}
		json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "task", "show", id)), &got)
		if len(got) != 1 || got[0].Status != "open" || got[0].Priority != 1 {
			t.Errorf("task %s after the storm: %+v", id, got)
		}
	}
}

// paused returns the orchestrator's pause as orchestrator status --json
// shows it, checking that the text status, doctor and the board's data say
// it too.
func paused(t *testing.T, bin, dir string, env []string) *orchestrator.Pause {
	t.Helper()
	var st struct {
		Paused *orchestrator.Pause `json:"paused"`
	}
	if err := json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "orchestrator", "status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Paused == nil {
		return nil
	}
	if out := jobSpool(t, bin, dir, env, "orchestrator", "status"); !strings.Contains(out, "PAUSED:") || !strings.Contains(out, "spool orchestrator resume") {
		t.Errorf("orchestrator status does not say it is paused, nor what to do:\n%s", out)
	}
	if out, err := jobSpoolErr(bin, dir, env, "doctor"); err == nil || !strings.Contains(out, "orchestrator") || !strings.Contains(out, "paused since") {
		t.Errorf("doctor: %v\n%s", err, out)
	}
	return st.Paused
}

// A wrong agent command (not found) used to run every ready task and, in
// seconds, demote and Block them all. The first run that cannot start
// pauses the orchestrator: nothing is charged, watch --once returns, and
// status, doctor say why. spool orchestrator resume tries again (and trips
// again); fixing the command resumes it by itself, and the work gets done.
func TestOrchestratorBreakerCommandNotFound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, ids := storm(t, bin, "succeed", []string{filepath.Join(t.TempDir(), "no-such-agent")})
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "released" {
		t.Errorf("outcomes %s, want one released run", got)
	}
	p := paused(t, bin, dir, env)
	if p == nil || p.Kind != orchestrator.BreakCannotStart || !strings.Contains(p.Reason, "could not start") {
		t.Fatalf("pause %+v", p)
	}
	uncharged(t, bin, dir, env, ids)
	if out := jobSpool(t, bin, dir, env, "task", "show", p.Tasks[0]); !strings.Contains(out, "not counted: the agent could not start") {
		t.Errorf("no comment on the task says why:\n%s", out)
	}

	jobSpool(t, bin, dir, env, "orchestrator", "resume")
	if p := paused(t, bin, dir, env); p != nil {
		t.Fatalf("still paused after resume: %+v", p)
	}
	if _, err := jobSpoolErr(bin, dir, env, "orchestrator", "resume"); err == nil {
		t.Error("resume of an orchestrator that is not paused succeeded")
	}
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "released,released" {
		t.Errorf("after resume: outcomes %s, want one more released run", got)
	}
	if paused(t, bin, dir, env) == nil {
		t.Fatal("the same broken command did not pause it again")
	}

	agent, _ := filepath.Abs("../../testdata/fakeagent/agent")
	argv, _ := json.Marshal([]string{"sh", agent, "succeed"})
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.agent_command", string(argv))
	jobSpool(t, bin, dir, env, "watch", "--once")
	for _, id := range ids {
		if s := taskStatus(t, bin, dir, env, id); s != "closed" {
			t.Errorf("task %s is %s after the command was fixed", id, s)
		}
	}
	if len(jobEvents(t, bin, dir, env, orchestrator.TypeResumed)) != 2 {
		t.Error("want two resumes: by hand, then by the changed command")
	}
}

// An agent command that exits at once having done nothing (a wrong
// script path under sh, say): each run is released uncounted, and the
// third in a row pauses the orchestrator.
func TestOrchestratorBreakerQuickExits(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, ids := storm(t, bin, "quick", nil)
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "released,released,released" {
		t.Errorf("outcomes %s, want three released runs", got)
	}
	p := paused(t, bin, dir, env)
	if p == nil || p.Kind != orchestrator.BreakQuickExit || !strings.Contains(p.Reason, "3 times in a row") {
		t.Fatalf("pause %+v", p)
	}
	uncharged(t, bin, dir, env, ids)
}

// The same error for three different tasks in a row (a failing agent that
// did change its worktree): the third task's run is released and the
// orchestrator paused; the two before were failures of their own tasks,
// two each, neither demoted.
func TestOrchestratorBreakerSameError(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, _ := storm(t, bin, "fail", nil)
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "failed,failed,failed,failed,released" {
		t.Errorf("outcomes %s", got)
	}
	p := paused(t, bin, dir, env)
	if p == nil || p.Kind != orchestrator.BreakSameError || len(p.Tasks) != 3 || !strings.Contains(p.Reason, "3 tests failed") {
		t.Fatalf("pause %+v", p)
	}
	if d := jobEvents(t, bin, dir, env, "task.demoted"); len(d) != 0 {
		t.Errorf("demoted: %v", d)
	}
}

// bdOrch is orchRepo with a bd source: the fake bd offers one bead at
// priority 1 (its ready output in the returned file) and records its argv.
func bdOrch(t *testing.T, bin, mode string) (dir string, env []string, ready, argv string) {
	t.Helper()
	dir, env, _, _ = orchRepo(t, bin, mode, 2)
	fake, _ := filepath.Abs("../../testdata/fakebd/bd")
	ready, argv = filepath.Join(t.TempDir(), "ready.json"), filepath.Join(t.TempDir(), "argv.log")
	bdReady(t, ready, "")
	env = append(env, "SPOOL_FAKEBD_READY="+ready, "SPOOL_FAKEBD_LOG="+argv)
	jobSpool(t, bin, dir, env, "config", "set", "workqueue.source", "bd")
	jobSpool(t, bin, dir, env, "config", "set", "workqueue.source_bin", fake)
	return dir, env, ready, argv
}

// bdReady writes what the fake bd's ready prints: bd-7 at priority 1, with
// the labels given.
func bdReady(t *testing.T, path string, labels string) {
	t.Helper()
	b := fmt.Sprintf(`[{"id":"bd-7","title":"Fix it","priority":1,"issue_type":"task","labels":[%s],"created_at":"2026-01-01T00:00:00Z"}]`, labels)
	if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With a bd source whose update --priority always fails, a failing agent
// used to run again at once, for ever: bd kept the bead at priority 1, so
// the policy never reached priority 4, and watch --once never returned.
// The demotion holds in spool whatever bd does: four demotions' worth of
// failures later the bead is Blocked and watch --once returns; bd's refusal
// is reported once and not retried in a loop. Once bd takes writes again,
// the label reaches it; removing the label in bd unblocks the bead in
// spool, its priority put back.
func TestOrchestratorBdRefusingWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, ready, argv := bdOrch(t, bin, "fail")
	refusing := append(slices.Clone(env), "SPOOL_FAKEBD_FAIL=Error: database is read-only", "SPOOL_FAKEBD_FAIL_CMD=update")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-C", dir, "watch", "--once")
	cmd.Env, cmd.WaitDelay = append(os.Environ(), refusing...), 5*time.Second
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("watch --once: %v\n%s", err, out)
	}
	if n := len(jobEvents(t, bin, dir, env, orchestrator.TypeFinished)); n != 12 {
		t.Errorf("%d runs, want 12 (three at each of priorities 1 to 4)", n)
	}
	blocked := jobEvents(t, bin, dir, env, "task.blocked")
	if len(blocked) != 1 || blocked[0].Subject != "bd-7" {
		t.Fatalf("task.blocked: %v", blocked)
	}
	var demoted []string
	for _, e := range jobEvents(t, bin, dir, env, "task.demoted") {
		demoted = append(demoted, string(e.Data))
	}
	if len(demoted) != 3 || !strings.Contains(demoted[2], `"from":3,"to":4`) {
		t.Errorf("demotions: %v", demoted)
	}
	var updates int
	for _, l := range lines(argv) {
		if strings.HasPrefix(l, "bd update") {
			updates++
		}
	}
	if updates == 0 || updates > 2 {
		t.Errorf("bd update ran %d times: refused, it waits before it is tried again", updates)
	}
	if n := strings.Count(out, "bd refused priority"); n != 1 || !strings.Contains(out, "database is read-only") {
		t.Errorf("the refusal was reported %d times, want once:\n%s", n, out)
	}

	// bd takes writes again: the next queue command, once the wait is over
	// (an hour on), runs the bead's requests in order, the blocked label
	// after the priorities; bd now shows the label.
	later := append(slices.Clone(env), "SPOOL_NOW="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	bdReady(t, ready, `"blocked"`)
	if out := jobSpool(t, bin, dir, later, "--json", "next"); strings.TrimSpace(out) != "null" {
		t.Fatalf("a Blocked bead was claimed: %s", out)
	}
	if !slices.Contains(lines(argv), "bd label add -- bd-7 blocked") {
		t.Fatalf("the blocked label never reached bd:\n%s", strings.Join(lines(argv), "\n"))
	}
	// Someone removes the label in bd: the next poll unblocks the bead, at
	// the priority it had before the policy demoted it.
	bdReady(t, ready, "")
	var claimed struct {
		ID       string `json:"id"`
		Priority int    `json:"priority"`
	}
	if err := json.Unmarshal([]byte(jobSpool(t, bin, dir, later, "--json", "next")), &claimed); err != nil || claimed.ID != "bd-7" || claimed.Priority != 1 {
		t.Fatalf("after the label was removed in bd: %+v, %v", claimed, err)
	}
	if un := jobEvents(t, bin, dir, env, "task.unblocked"); len(un) != 1 || !strings.Contains(string(un[0].Data), `"restore_priority":1`) {
		t.Errorf("task.unblocked: %v", un)
	}
	if !slices.Contains(lines(argv), "bd update --priority=1 -- bd-7") {
		t.Errorf("the priority was not put back in bd:\n%s", strings.Join(lines(argv), "\n"))
	}
}

// Crash recovery with a bd source: spool watch killed after it claimed a
// bead and before its agent started; the next watch reverts the attempt,
// reopens the bead uncounted, and the comment saying why goes to the bead.
func TestOrchestratorBdRecoveryComment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, _, argv := bdOrch(t, bin, "succeed")
	paused := filepath.Join(t.TempDir(), "paused")
	w := startSpool(t, bin, dir, append(slices.Clone(env), "SPOOL_TEST_ORCH_PAUSE=claimed", "SPOOL_TEST_ORCH_PAUSE_FILE="+paused), "watch", "watch")
	proctest.WaitFile(t, paused)
	w.kill(t)
	jobSpool(t, bin, dir, env, "watch", "--once")
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "released,done" {
		t.Errorf("outcomes %s", got)
	}
	var comment string
	for _, l := range lines(argv) {
		if strings.HasPrefix(l, "bd comments add -- bd-7 ") {
			comment = l
		}
	}
	if !strings.Contains(comment, "reverted and the task reopened: spool stopped before the agent started") {
		t.Errorf("no recovery comment on the bead:\n%s", strings.Join(lines(argv), "\n"))
	}
}

// Done is not merged: with orchestrator.submit_merge, a branch the train
// refuses for good (failed_terminal: its test fails, one attempt allowed)
// reopens the task and counts as a failed attempt with the train's reason,
// which the next attempt gets as its context; that attempt's branch, tested
// again, merges. (spool watch, not --once: a train run --once drains the
// queue as it stood when watch started.)
func TestOrchestratorMergeRejectionReopens(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "succeed", 2)
	marker := filepath.Join(t.TempDir(), "tested-once")
	test, _ := json.Marshal([]string{"sh", "-c", `test -e "$0" || { touch "$0"; echo "FAIL: TestLogin redirects twice"; exit 1; }`, marker})
	jobSpool(t, bin, dir, env, "config", "set", "merge.test_command", string(test))
	jobSpool(t, bin, dir, env, "config", "set", "merge.max_attempts", "1")
	jobSpool(t, bin, dir, env, "config", "set", "merge.remote", `""`)
	jobSpool(t, bin, dir, env, "config", "set", "watch.merge_train", "true")
	jobSpool(t, bin, dir, env, "config", "set", "orchestrator.submit_merge", "true")
	w := startWatch(t, bin, dir, env)
	waitFor(t, 30*time.Second, "the second attempt was never merged", func() bool {
		return strings.Contains(gitOut(t, dir, "ls-tree", "--name-only", "main"), "work-"+id+".txt")
	})
	if err := w.stop(t); err != nil {
		t.Errorf("spool watch: %v\n%s", err, w.output())
	}
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "done,done" {
		t.Fatalf("outcomes %s, want done,done\n%s", got, w.output())
	}
	rejected := jobEvents(t, bin, dir, env, orchestrator.TypeMergeRejected)
	if len(rejected) != 1 || rejected[0].Subject != id || !strings.Contains(string(rejected[0].Data), `"outcome":"failed"`) {
		t.Fatalf("merge_rejected: %v", rejected)
	}
	failed := jobEvents(t, bin, dir, env, "task.failed")
	if len(failed) != 1 || !strings.Contains(string(failed[0].Data), "merge rejected") || !strings.Contains(string(failed[0].Data), "attempts used up") {
		t.Fatalf("task.failed: %v", failed)
	}
	if r := jobEvents(t, bin, dir, env, "task.reopened"); len(r) != 1 {
		t.Errorf("task.reopened: %v", r)
	}
	var h struct {
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
		Failures int    `json:"failures"`
	}
	if err := json.Unmarshal([]byte(jobSpool(t, bin, dir, env, "--json", "history", id)), &h); err != nil || h.Status != "completed" || h.Attempts != 2 || h.Failures != 1 {
		t.Errorf("history: %+v, %v", h, err)
	}
	if s := taskStatus(t, bin, dir, env, id); s != "closed" {
		t.Errorf("task is %s after the second attempt merged", s)
	}
	log, err := os.ReadFile(filepath.Join(dir, ".git", "spool", "runs", "task-"+id, "attempt-2.log"))
	if err != nil || !strings.Contains(string(log), "the last attempt failed: merge rejected") {
		t.Errorf("attempt 2 was not told why: %v\n%s", err, log)
	}
	noTwice(t, runs)
}

// An agent's MCP server is started by the agent (its client), under the
// agent's guard: its read tools answer, its comment is refused
// agent_may_not_write as the command would be, and nothing is appended.
func TestOrchestratorAgentMCPCannotWrite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs spool watch")
	}
	bin := spoolBinary(t)
	dir, env, id, runs := orchRepo(t, bin, "mcp", 2)
	env = append(env, "FAKE_AGENT_SPOOL="+bin)
	jobSpool(t, bin, dir, env, "watch", "--once")
	answers := make(map[string]string)
	for _, l := range lines(runs + ".mcp") {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID > 0 {
			answers[strconv.Itoa(m.ID)] = string(m.Result) + string(m.Error)
		}
	}
	// Its server offers an agent no tool that writes: comment is unknown.
	if c := answers["2"]; !strings.Contains(c, "comment") || !strings.Contains(strings.ToLower(c), "unknown tool") {
		t.Errorf("the agent's comment over MCP: %s\n%s", c, strings.Join(lines(runs+".mcp"), "\n"))
	}
	if s := answers["3"]; !strings.Contains(s, id) || strings.Contains(s, `"isError":true`) {
		t.Errorf("the agent's show over MCP: %s", s)
	}
	if c := jobEvents(t, bin, dir, env, "task.commented"); len(c) != 0 {
		t.Errorf("the agent commented: %v", c)
	}
	if got := strings.Join(finished(t, bin, dir, env), ","); got != "done" {
		t.Errorf("outcomes %s", got)
	}
}
