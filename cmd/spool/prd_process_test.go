package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prdRepo makes a repository with spool's PRD queue over the fake bd: one
// feature run of n approved PRDs, submitted. It returns the repository and
// the environment its commands need (the fake's store is STORE in it).
func prdRepo(t *testing.T, bin string, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	fake, err := filepath.Abs(filepath.Join("..", "..", "testdata", "fakebd", "bd"))
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready.json")
	os.WriteFile(ready, []byte("[]"), 0o644)
	env := []string{"SPOOL_ACTOR=ada@example.com", "SPOOL_FAKEBD_READY=" + ready, "SPOOL_FAKEBD_STORE=" + filepath.Join(dir, "store")}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if args[0] == "spool" {
			cmd = spoolCmd(bin, repo, env, args[1:]...)
		} else {
			cmd.Dir = repo
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	os.MkdirAll(filepath.Join(repo, "docs", "prd"), 0o755)
	run("git", "init", "-q", "-b", "main")
	run("spool", "init")
	run("spool", "config", "set", "workqueue.source", "bd")
	run("spool", "config", "set", "workqueue.source_bin", fake)
	run("spool", "prd", "start", "feat")
	for i := range n {
		slug := fmt.Sprintf("prd-%02d", i)
		os.WriteFile(filepath.Join(repo, "docs", "prd", slug+".md"), []byte("---\nprd_approval: approved\nbeads_approval: approved\n---\n# "+slug+"\n"), 0o644)
		run("spool", "prd", "add", "feat", slug)
		run("spool", "prd", "submit", slug)
	}
	return repo, env
}

// storeOf is the fake bd's store: the issues it created, and its counters.
func storeOf(t *testing.T, env []string) (string, []map[string]any) {
	path := strings.TrimPrefix(env[2], "SPOOL_FAKEBD_STORE=")
	b, _ := os.ReadFile(path)
	var issues []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("store line %q: %v", line, err)
		}
		issues = append(issues, m)
	}
	return path, issues
}

// Twenty runnable PRDs, two workers: never more than two bd creates at a
// time (the fake bd counts them), two at a time indeed, and the log the
// same, event for event, however the workers were timed, over ten runs.
func TestPromoteWorkerCapAndOrder(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs ten promotions of twenty PRDs")
	}
	bin := spoolBinary(t)
	repo, env := prdRepo(t, bin, 20)
	base := filepath.Dir(repo)
	epicID := regexp.MustCompile(`"epic_id":"bd-[0-9]+"`)
	var first string
	for run := range 10 {
		// Each run promotes a copy of the same repository.
		dir := filepath.Join(base, fmt.Sprintf("run%d", run))
		if out, err := exec.Command("cp", "-a", repo, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		store := filepath.Join(base, fmt.Sprintf("store%d", run))
		runEnv := append(append([]string{}, env[:2]...), "SPOOL_FAKEBD_STORE="+store, "SPOOL_FAKEBD_DELAY=0.02")
		if out, err := spoolCmd(bin, dir, runEnv, "prd", "promote").CombinedOutput(); err != nil {
			t.Fatalf("promote: %v\n%s", err, out)
		}
		max, _ := os.ReadFile(store + ".maxinflight")
		creates, _ := os.ReadFile(store + ".creates")
		if strings.TrimSpace(string(max)) != "2" || strings.TrimSpace(string(creates)) != "20" {
			t.Fatalf("run %d: %s creates, at most %s at a time; want 20, 2", run, creates, max)
		}
		out, err := spoolCmd(bin, dir, nil, "log", "--json").Output()
		if err != nil {
			t.Fatal(err)
		}
		var seq []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var e struct {
				Type, Subject string
				Data          json.RawMessage
			}
			json.Unmarshal([]byte(line), &e)
			seq = append(seq, e.Type+" "+e.Subject+" "+epicID.ReplaceAllString(string(e.Data), `"epic_id":"bd-?"`))
		}
		got := strings.Join(seq, "\n")
		if run == 0 {
			first = got
			if !strings.Contains(got, "prd.enqueued prd/prd-19") {
				t.Fatalf("no enqueue recorded:\n%s", got)
			}
			continue
		}
		if got != first {
			t.Fatalf("run %d appended another sequence:\n%s\nfirst run:\n%s", run, got, first)
		}
	}
}

// spool killed in the middle of a promotion: the next promote records the
// epics the killed one made and makes the others, one epic per PRD.
func TestPromoteKilledMidwayMakesOneEpicPerPRD(t *testing.T) {
	t.Parallel()
	bin := spoolBinary(t)
	const n = 6
	repo, env := prdRepo(t, bin, n)
	promote := spoolCmd(bin, repo, append(env, "SPOOL_FAKEBD_DELAY=0.4"), "prd", "promote")
	promote.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := promote.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, issues := storeOf(t, env); len(issues) >= 2 {
			break // two epics made, their outcomes not yet recorded
		}
		if time.Now().After(deadline) {
			syscall.Kill(-promote.Process.Pid, syscall.SIGKILL)
			t.Fatal("the promotion made no epic")
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(-promote.Process.Pid, syscall.SIGKILL)
	promote.Wait()
	time.Sleep(500 * time.Millisecond) // the fake bd's own sleep ends

	out, err := spoolCmd(bin, repo, env, "--json", "prd", "report").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"queued": 0`)) {
		t.Logf("some outcomes were recorded before the kill:\n%s", out)
	}
	if out, err := spoolCmd(bin, repo, env, "prd", "promote").CombinedOutput(); err != nil {
		t.Fatalf("promote after the kill: %v\n%s", err, out)
	}
	_, issues := storeOf(t, env)
	refs := map[string]string{}
	for _, is := range issues {
		ref, id := is["external_ref"].(string), is["id"].(string)
		if prev, dup := refs[ref]; dup {
			t.Fatalf("two epics for %s: %s and %s", ref, prev, id)
		}
		refs[ref] = id
	}
	if len(refs) != n {
		t.Fatalf("%d epics for %d PRDs: %v", len(refs), n, refs)
	}
	out, err = spoolCmd(bin, repo, env, "--json", "prd", "report").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows []struct {
			PRD   string `json:"prd_slug"`
			State string `json:"state"`
			Epic  string `json:"epic_id"`
		}
	}
	json.Unmarshal(out, &rep)
	for _, r := range rep.Rows {
		if r.State != "queued" || refs["spool:"+r.PRD+":1"] != r.Epic {
			t.Fatalf("%s: %s with %s; the fake made %s", r.PRD, r.State, r.Epic, refs["spool:"+r.PRD+":1"])
		}
	}
	if out, err := spoolCmd(bin, repo, env, "verify").CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}
