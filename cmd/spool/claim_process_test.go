package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/git/gittest"
	"github.com/spoolhq/spool/internal/jobs"
	"github.com/spoolhq/spool/internal/mergequeue"
	"github.com/spoolhq/spool/internal/workqueue"
)

// The tests that run many spool processes at once run in two chains, each
// test of a chain after the other: those that contend through one bare
// remote, and those that contend for one clone's log. A test never runs
// beside another of its chain, so that its claims keep the margin to their
// deadlines (half of lock.timeout) they had when the tests ran one by one;
// a chain runs beside the lighter tests in one of -parallel's slots, rather
// than each of its tests holding a slot while it waits for the others.
// (This file sorts early: the chains get their slots among the first.)

func TestContendingRemote(t *testing.T) {
	chain(t, []namedTest{
		{"RemoteClaimsFourClonesNextDone", remoteClaimsFourClonesNextDone},
		{"RemoteClaimsFourClonesJobs", remoteClaimsFourClonesJobs},
		{"RemoteClaimsFourClonesMergeEntries", remoteClaimsFourClonesMergeEntries},
		{"RemoteClaimsKilledMidway", remoteClaimsKilledMidway},
		{"FleetRandomTeam", fleetRandomTeam},
		{"SyncFourClones", syncFourClones},
	})
}

func TestContendingLocal(t *testing.T) {
	chain(t, []namedTest{
		{"JobFourWorkersRunEachSegmentOnce", jobFourWorkersRunEachSegmentOnce},
		{"JobRecurringTwoWorkersOneSubmissionPerOccurrence", jobRecurringTwoWorkersOneSubmissionPerOccurrence},
		{"MCPStdioClaimsAcrossProcesses", mCPStdioClaimsAcrossProcesses},
		{"ConcurrentNextClaimsEachTaskOnce", concurrentNextClaimsEachTaskOnce},
		{"OverlaysSurviveKills", overlaysSurviveKills},
	})
}

type namedTest struct {
	name string
	run  func(*testing.T)
}

// soak is a size for the tests that repeat a step to find a rare race:
// small in the default run, full when SPOOL_TEST_FULL=1 (CI sets it for
// these tests' second run: .ci/run).
func soak(small, full int) int {
	if os.Getenv("SPOOL_TEST_FULL") == "1" {
		return full
	}
	return small
}

// chain runs tests one after another, as one parallel test.
func chain(t *testing.T, tests []namedTest) {
	t.Parallel()
	for _, c := range tests {
		t.Run(c.name, c.run)
	}
}

// Claims through the remote (sync.claims = remote) on real clones of one
// bare remote, each clone a writer of its own and all of them contending:
// every claim is held by one clone at a time, checked on the merged log.

// claimClones is syncClones with sync.claims = remote committed and
// pulled by every clone.
func claimClones(t *testing.T, bin string, n int) (*gittest.Repo, []string, [][]string) {
	t.Helper()
	r, clones, envs := syncClones(t, bin, n)
	jobSpool(t, bin, clones[0], envs[0], "config", "set", "sync.claims", "remote")
	r.Git(clones[0], "commit", "-q", "-m", "spool: claims through the remote", ".spool/config.json")
	r.Git(clones[0], "push", "-q", "origin", "main")
	for _, dir := range clones[1:] {
		r.Git(dir, "pull", "-q", "origin", "main")
	}
	return r, clones, envs
}

// mergedLog is the first clone's log once syncAll has brought every
// clone's events to every clone.
func mergedLog(t *testing.T, bin string, clones []string, envs [][]string) []logEvent {
	t.Helper()
	syncAll(t, bin, clones, envs)
	var out []logEvent
	sc := bufio.NewScanner(strings.NewReader(jobSpool(t, bin, clones[0], envs[0], "--json", "log")))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e logEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// heldOnce walks the merged log in its order and fails the test when a
// subject is claimed while another claim of it holds; it returns the
// claims per subject.
func heldOnce(t *testing.T, log []logEvent, claim string, release ...string) map[string]int {
	t.Helper()
	holder, claims := map[string]string{}, map[string]int{}
	for _, e := range log {
		switch {
		case e.Type == claim:
			if h := holder[e.Subject]; h != "" {
				t.Errorf("%s claimed by %s while %s held it", e.Subject, e.Actor, h)
			}
			holder[e.Subject] = e.Actor
			claims[e.Subject]++
		case slices.Contains(release, e.Type):
			holder[e.Subject] = ""
		}
	}
	return claims
}

// Four clones run next/done loops over 24 tasks (60 in the full run), all
// at once, each claim through the remote: every task is claimed and
// completed exactly once, never held by two clones, and afterwards the
// clones agree. (Each task costs about 0.3 s of CPU.)
func remoteClaimsFourClonesNextDone(t *testing.T) {
	if testing.Short() {
		t.Skip("four clones, 60 claims through a remote")
	}
	bin := spoolBinary(t)
	r, clones, envs := claimClones(t, bin, 4)
	n := soak(24, 60)
	for k := range n {
		jobSpool(t, bin, clones[0], envs[0], "task", "add", fmt.Sprintf("task %03d", k))
	}
	jobSpool(t, bin, clones[0], envs[0], "sync")
	before := make([]string, len(clones))
	for i, dir := range clones {
		before[i] = untouched(r, dir)
	}
	var wg sync.WaitGroup
	done := make([][]string, len(clones))
	for i, dir := range clones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			contended := 0
			for {
				// Claims take turns (the remote's waiting room), so none
				// should lose every race for its 30 s patience, as one
				// did on CI before. If one does on a loaded machine, it
				// says nothing was claimed (sync_contended), and a
				// worker tries again, as it says.
				out, err := jobSpoolErr(bin, dir, envs[i], "--json", "next")
				if err != nil && strings.Contains(out, `"sync_contended"`) && contended < 3 {
					contended++
					t.Logf("clone %d next gave up contended (%d): trying again", i, contended)
					continue
				}
				if err != nil {
					t.Errorf("clone %d next: %v\n%s", i, err, out)
					return
				}
				var c struct{ ID string }
				if strings.TrimSpace(out) == "null" || json.Unmarshal([]byte(out), &c) != nil || c.ID == "" {
					return // every task is claimed
				}
				if out, err := jobSpoolErr(bin, dir, envs[i], "done", c.ID); err != nil {
					t.Errorf("clone %d done %s: %v\n%s", i, c.ID, err, out)
					return
				}
				done[i] = append(done[i], c.ID)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Claims take turns, so every clone gets tasks (before the waiting
	// room, one clone could go without any on a busy machine).
	total := 0
	for i := range clones {
		t.Logf("clone %d completed %d tasks", i, len(done[i]))
		if len(done[i]) == 0 {
			t.Errorf("clone %d completed no task: claims did not take turns", i)
		}
		total += len(done[i])
	}
	if left := r.Git(r.Remote, "for-each-ref", "--format=%(refname)", "refs/spool/waiting/"); left != "" {
		t.Errorf("the claims left entries in the waiting room:\n%s", left)
	}
	if total != n {
		t.Errorf("%d tasks completed in all, want %d", total, n)
	}
	log := mergedLog(t, bin, clones, envs)
	claims := heldOnce(t, log, workqueue.TypeClaimed, workqueue.TypeSucceeded, workqueue.TypeFailed, workqueue.TypeReleased)
	succeeded := map[string]int{}
	for _, e := range log {
		if e.Type == workqueue.TypeSucceeded {
			succeeded[e.Subject]++
		}
	}
	if len(claims) != n || len(succeeded) != n {
		t.Errorf("%d tasks claimed and %d succeeded, want %d", len(claims), len(succeeded), n)
	}
	for id, k := range claims {
		if k != 1 || succeeded[id] != 1 {
			t.Errorf("%s claimed %d times, succeeded %d times", id, k, succeeded[id])
		}
	}
	sameProjections(t, bin, clones, envs)
	for i, dir := range clones {
		if after := untouched(r, dir); after != before[i] {
			t.Errorf("clone %d: claims changed HEAD, the index or the work tree:\nbefore %q\nafter  %q", i, before[i], after)
		}
	}
}

// A claim lets a claim that waits longer go first (the remote's waiting
// room, refs/spool/waiting/<branch>/), but an entry that a killed claim
// left, first in line and not moving, holds it back only a round's
// timeout and a second (6 s here), and is then taken away, so that the
// next claims do not wait for it again; an entry past its life (a
// minute) holds it back not at all and is taken away; a ref in the room
// that is not an entry is ignored and left. The claim leaves no entry of
// its own behind.
func TestClaimWaitingRoom(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a claim through a remote with entries in its waiting room")
	}
	bin := spoolBinary(t)
	r, clones, envs := claimClones(t, bin, 2)
	id := taskID(t, jobSpool(t, bin, clones[0], envs[0], "--json", "task", "add", "one"))
	jobSpool(t, bin, clones[0], envs[0], "sync")
	jobSpool(t, bin, clones[1], envs[1], "sync") // so that it has a commit to enter the room with
	tip := r.Git(r.Remote, "rev-parse", "refs/heads/spool-log")
	room := "refs/spool/waiting/spool-log/"
	now := time.Now().UnixMilli()
	ghost := fmt.Sprintf("%s%d-ghost-00", room, now)
	stale := fmt.Sprintf("%s%d-ghost-01", room, now-2*60*1000)
	junk := room + "not-an-entry"
	for _, ref := range []string{ghost, stale, junk} {
		r.Git(r.Remote, "update-ref", ref, tip)
	}
	start := time.Now()
	var got struct{ ID string }
	if out := jobSpool(t, bin, clones[1], envs[1], "--json", "next"); json.Unmarshal([]byte(out), &got) != nil || got.ID != id {
		t.Fatalf("next claimed %q, want %s", out, id)
	}
	// A lower bound, not a speed: without the waiting room the claim
	// takes a fraction of a second.
	if took := time.Since(start); took < 2500*time.Millisecond {
		t.Errorf("the claim took %s: it did not let the older entry go first", took)
	}
	left := strings.Fields(r.Git(r.Remote, "for-each-ref", "--format=%(refname)", "refs/spool/waiting/"))
	if want := []string{junk}; !slices.Equal(left, want) {
		t.Errorf("the waiting room holds %q, want %q", left, want)
	}
}

// Four clones each run a job worker over 12 jobs (20 in the full run) of 2
// segments submitted in the first: every job is dispatched once, every
// segment runs once. A segment lasts 0.4 s, as real work takes time: with
// segments that end at once, the worker holding a job pushes its records
// so often that on a loaded machine the others lost every race for ten
// seconds (CI saw one worker run all twelve, before claims took turns),
// which is not what this test is about.
func remoteClaimsFourClonesJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("four job workers through a remote")
	}
	bin := spoolBinary(t)
	_, clones, envs := claimClones(t, bin, 4)
	n := soak(12, 20)
	shared := filepath.Join(t.TempDir(), "segments")
	var ids []string
	for range n {
		ids = append(ids, submitJob(t, bin, clones[0], envs[0], "--segments", "2", "--", "sh", "-c", `echo "$SPOOL_JOB_ID $SPOOL_SEGMENT" >> "$0"; sleep 0.4`, shared))
	}
	jobSpool(t, bin, clones[0], envs[0], "sync")
	var ws []*jobWorker
	for i, dir := range clones {
		ws = append(ws, startWorker(t, bin, dir, envs[i], fmt.Sprint("w", i), "--poll", "50ms", "--slots", "1"))
	}
	// Every job recorded complete, not only every segment run: a worker
	// stopped between a segment's run and its record gives the job back,
	// and a worker stopped after it runs the segment again.
	waitFor(t, 120e9, "every segment to run and every job to complete", func() bool {
		complete := 0
		for _, w := range ws {
			complete += strings.Count(w.output(), "; complete")
		}
		return len(lines(shared)) >= 2*n && complete >= n
	})
	stopWorkers(t, ws)
	segmentsRanOnce(t, shared, ids)
	log := mergedLog(t, bin, clones, envs)
	dispatched := heldOnce(t, log, jobs.TypeDispatched, jobs.TypeFinished, jobs.TypeRequeued, jobs.TypePaused, jobs.TypeCancelled)
	workers := map[string]bool{}
	for _, e := range log {
		if e.Type == jobs.TypeDispatched {
			workers[e.Actor] = true
		}
	}
	for _, id := range ids {
		if dispatched[id] != 1 {
			t.Errorf("job %s dispatched %d times", id, dispatched[id])
		}
	}
	if t.Logf("jobs ran on %d workers", len(workers)); len(workers) < 2 {
		t.Error("one worker ran every job: the clones did not contend")
	}
	sameProjections(t, bin, clones, envs)
}

// Four clones run the merge train at once, claiming through the remote,
// for one entry queued in the first at a time: one train claims and
// merges it, the others find it taken. Each train merges into its own
// clone's main (merge.remote names no remote): what is under test is the
// claim.
func remoteClaimsFourClonesMergeEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("four merge trains through a remote")
	}
	bin := spoolBinary(t)
	r, clones, envs := claimClones(t, bin, 4)
	const n = 6
	for i, dir := range clones {
		jobSpool(t, bin, dir, envs[i], "config", "set", "sync.remote", "origin")
		jobSpool(t, bin, dir, envs[i], "config", "set", "merge.remote", "nowhere")
		jobSpool(t, bin, dir, envs[i], "config", "set", "merge.untested", "true")
	}
	for k := range n {
		name := fmt.Sprintf("feat%02d", k)
		wt := filepath.Join(filepath.Dir(clones[0]), name)
		r.Git(clones[0], "worktree", "add", "-q", wt, "-b", name)
		os.WriteFile(filepath.Join(wt, name+".txt"), []byte(name+"\n"), 0o644)
		r.Git(wt, "add", name+".txt")
		r.Git(wt, "commit", "-q", "-m", name)
		r.Git(clones[0], "push", "-q", "origin", name)
		jobSpool(t, bin, wt, envs[0], "merge", "submit", "--no-push")
		jobSpool(t, bin, clones[0], envs[0], "sync")
		for i, dir := range clones[1:] {
			r.Git(dir, "fetch", "-q", "origin") // the entry's commit
			jobSpool(t, bin, dir, envs[i+1], "sync")
		}
		var wg sync.WaitGroup
		for i, dir := range clones {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if out, err := jobSpoolErr(bin, dir, envs[i], "merge", "run", "--once"); err != nil {
					t.Errorf("clone %d merge run: %v\n%s", i, err, out)
				}
			}()
		}
		wg.Wait()
	}
	log := mergedLog(t, bin, clones, envs)
	var released []logEvent
	merged := 0
	for _, e := range log {
		var d struct{ To mergequeue.Status }
		json.Unmarshal(e.Data, &d)
		if e.Type == mergequeue.EvTransitioned && d.To == mergequeue.Merged {
			merged++
		}
		if e.Type == mergequeue.EvTransitioned && !d.To.Processing() {
			e.Type = "released"
		}
		released = append(released, e)
	}
	claims := heldOnce(t, released, mergequeue.EvClaimed, "released", mergequeue.EvRecovered, mergequeue.EvCancelled)
	trains := map[string]bool{}
	for _, e := range released {
		if e.Type == mergequeue.EvClaimed {
			trains[e.Actor] = true
		}
	}
	if len(claims) != n || merged != n {
		t.Errorf("%d entries claimed, %d merged; want %d", len(claims), merged, n)
	}
	for id, k := range claims {
		if k != 1 {
			t.Errorf("entry %s claimed %d times", id, k)
		}
	}
	t.Logf("entries merged by %d trains", len(trains))
	sameProjections(t, bin, clones, envs)
}

// claimIDs are the ids of the task.claimed events in a writer file's
// content.
func claimIDs(content string) []string {
	var ids []string
	for _, l := range strings.Split(content, "\n") {
		var e struct{ ID, Type string }
		if json.Unmarshal([]byte(l), &e) == nil && e.Type == workqueue.TypeClaimed {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// kill -9 at a random moment of spool sync or of a claim through the
// remote, 20 times (50 in the full run): every acknowledged event stays in the local log, the
// log verifies, every claim in the local log is on the remote, and at the
// end the other clone has everything and no task was held twice.
func remoteClaimsKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("kills spool sync and spool next")
	}
	bin := spoolBinary(t)
	r, clones, envs := claimClones(t, bin, 2)
	a, b := clones[0], clones[1]
	var added []string
	for round := range soak(20, 50) {
		title := fmt.Sprintf("round %02d", round)
		jobSpool(t, bin, a, envs[0], "task", "add", title) // acknowledged
		added = append(added, title)
		if round%5 == 0 {
			jobSpool(t, bin, b, envs[1], "sync")
			jobSpool(t, bin, b, envs[1], "next") // a claim that contends, acknowledged
		}
		verb := []string{"sync"}
		if round%2 == 1 {
			verb = []string{"next"}
		}
		killMidway(t, bin, a, envs[0], 60*time.Millisecond, killGroupButRemote, verb...)
		if out, err := jobSpoolErr(bin, a, envs[0], "verify"); err != nil {
			fsck, _ := exec.Command("git", "-C", a, "fsck", "--no-dangling").CombinedOutput()
			refs, _ := exec.Command("git", "-C", a, "for-each-ref").CombinedOutput()
			t.Fatalf("round %d (%s): spool verify: %v\n%s\ngit fsck:\n%s\nrefs:\n%s", round, verb[0], err, out, fsck, refs)
		}
		if got := jobSpool(t, bin, a, envs[0], "--json", "task", "list"); !containsEvery(got, added) {
			t.Fatalf("round %d (%s): the local log lost an acknowledged task", round, verb[0])
		}
		writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "writer")))))
		local := string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "events", writer+".jsonl"))))
		remote, _ := exec.Command("git", "--git-dir", r.Remote, "show", "spool-log:events/"+writer+".jsonl").Output()
		for _, id := range claimIDs(local) {
			if !strings.Contains(string(remote), id) {
				t.Fatalf("round %d (%s): claim %s is in the local log and not on the remote", round, verb[0], id)
			}
		}
	}
	log := mergedLog(t, bin, clones, envs)
	heldOnce(t, log, workqueue.TypeClaimed, workqueue.TypeSucceeded, workqueue.TypeFailed, workqueue.TypeReleased)
	if got := jobSpool(t, bin, b, envs[1], "--json", "task", "list"); !containsEvery(got, added) {
		t.Fatal("after the kills, the other clone lacks tasks")
	}
	sameProjections(t, bin, clones, envs)
}

func containsEvery(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// A claim's push that the remote takes after spool was killed: the client
// (spool and its git push) dies once the pack is sent, and the remote's
// receive-pack, held up here by a slow pre-receive hook as a busy server
// would be, updates the branch later. The next write must not take "the
// remote does not have the claim yet" for "it never will": had it appended
// as if the claim never happened, this clone's file would fork on the
// remote (two different lines after the same line) once the push lands.
func TestRemoteClaimLandsAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills spool next")
	}
	bin := spoolBinary(t)
	r, clones, envs := claimClones(t, bin, 2)
	a, env := clones[0], envs[0]
	jobSpool(t, bin, a, env, "task", "add", "first")
	jobSpool(t, bin, a, env, "sync")
	jobSpool(t, bin, a, env, "task", "add", "second")
	// The hook holds the first push it sees, once, for two seconds; its
	// sleep is named so that killGroupButRemote spares it with the
	// receive-pack it belongs to.
	marks := t.TempDir()
	started, held := filepath.Join(marks, "started"), filepath.Join(marks, "held")
	hook := filepath.Join(r.Remote, "hooks", "pre-receive")
	script := fmt.Sprintf("#!/bin/bash\ncat >/dev/null\nmkdir %q 2>/dev/null || exit 0\n"+
		"exec -a receive-pack-held bash -c 'touch \"$1\"; exec -a receive-pack-held sleep 2' - %q\n", held, started)
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	before := r.Git(a, "--git-dir", r.Remote, "rev-parse", "spool-log")
	cmd := spoolCmd(bin, a, env, "next")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim's push never reached the remote's hook")
		}
	}
	killGroupButRemote(cmd.Process.Pid)
	cmd.Wait()
	// The next write, while the remote still holds the push.
	jobSpool(t, bin, a, env, "task", "add", "third")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, err := exec.Command("pgrep", "-f", "receive-pack-held").Output(); err != nil || len(out) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held push never finished")
		}
	}
	after := r.Git(a, "--git-dir", r.Remote, "rev-parse", "spool-log")
	t.Logf("remote spool-log %.12s before the claim, %.12s after", before, after)
	jobSpool(t, bin, a, env, "sync")
	if out, err := jobSpoolErr(bin, a, env, "verify"); err != nil {
		t.Fatalf("spool verify: %v\n%s", err, out)
	}
	writer := strings.TrimSpace(string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "writer")))))
	local := string(must(os.ReadFile(filepath.Join(a, ".git", "spool", "events", writer+".jsonl"))))
	remote := r.Git(a, "--git-dir", r.Remote, "show", "spool-log:events/"+writer+".jsonl")
	if strings.TrimSpace(local) != strings.TrimSpace(remote) {
		t.Fatalf("this clone's file and the remote's copy differ after a sync:\nlocal:\n%s\nremote:\n%s", local, remote)
	}
	if !containsEvery(jobSpool(t, bin, a, env, "--json", "task", "list"), []string{"first", "second", "third"}) {
		t.Fatal("the local log lost an acknowledged task")
	}
}
