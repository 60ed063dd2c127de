package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/proc/proctest"
)

func TestRunOutcome(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		argv []string
		want error
	}{
		{"success", []string{"true"}, nil},
		{"exit status", []string{"sh", "-c", "exit 3"}, &ExitError{Code: 3}},
		{"signal", []string{"sh", "-c", "kill -KILL $$"}, &ExitError{Code: -1, Signal: syscall.SIGKILL}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Run(context.Background(), Cmd{Argv: c.argv, Dir: dir})
			if c.want == nil && err != nil || c.want != nil && (err == nil || err.Error() != c.want.Error()) {
				t.Fatalf("%v, want %v", err, c.want)
			}
		})
	}
	if err := Run(context.Background(), Cmd{Argv: []string{"spool-no-such-program"}}); err == nil || errors.As(err, new(*ExitError)) {
		t.Fatalf("a missing program: %v", err)
	}
}

// The command sees its directory, its environment without the guard's
// variable, and writes where it was told.
func TestRunIO(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), Cmd{
		Argv: []string{"sh", "-c", `pwd; echo "x=$X guard=${SPOOL_PROC_GUARD-unset}"; echo oops >&2`},
		Dir:  dir, Env: append(os.Environ(), "X=1"), Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if want := real + "\nx=1 guard=unset\n"; stdout.String() != want || stderr.String() != "oops\n" {
		t.Fatalf("stdout %q, stderr %q; want %q", stdout.String(), stderr.String(), want)
	}
}

// What a command leaves running in its group ends with it.
func TestLeftoversEndWithTheCommand(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	if err := Run(context.Background(), Cmd{Argv: []string{"sh", "-c", "sleep 300 & echo $! > " + pidfile}}); err != nil {
		t.Fatal(err)
	}
	proctest.WaitExited(t, proctest.ReadPID(t, pidfile))
}

// Cancelling ends the group: SIGTERM first (the shell's trap runs), and
// the grandchild too.
func TestCancelEndsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidfile, trapped := filepath.Join(dir, "pid"), filepath.Join(dir, "trapped")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, Cmd{Argv: []string{"sh", "-c",
		"trap 'echo term > " + trapped + "; exit 7' TERM; sleep 300 & echo $! > " + pidfile + "; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	sleeper := proctest.ReadPID(t, pidfile)
	cancel()
	if err := p.Wait(); err == nil || err.Error() != "exit status 7" {
		t.Fatalf("after cancel: %v, want exit status 7 from the trap", err)
	}
	if _, err := os.Stat(trapped); err != nil {
		t.Fatal("the command never saw SIGTERM")
	}
	proctest.WaitExited(t, sleeper, p.Record().PID)
}

// A command that ignores SIGTERM is killed after the grace period.
func TestCancelKillsAfterGrace(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, Cmd{Argv: []string{"sh", "-c", "trap '' TERM; echo $$ > " + pidfile + "; while :; do sleep 0.05; done"},
		Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	proctest.ReadPID(t, pidfile)
	cancel()
	var exitErr *ExitError
	if err := p.Wait(); !errors.As(err, &exitErr) || exitErr.Signal != syscall.SIGKILL {
		t.Fatalf("after cancel: %v, want killed", err)
	}
}

// A command may signal its own group (kill 0) to end its background jobs:
// the guard leads that group but does not take it as spool's stop.
func TestCommandSignalsItsOwnGroup(t *testing.T) {
	err := Run(context.Background(), Cmd{Argv: []string{"sh", "-c", `sleep 300 & trap "" TERM; kill 0; wait; sleep 0.3; exit 5`},
		Grace: 50 * time.Millisecond})
	if err == nil || err.Error() != "exit status 5" {
		t.Fatalf("%v, want exit status 5", err)
	}
}

// spool killed with SIGKILL: the command and what it started die with it.
// The parent is this test binary again (TestParentDeathHelper).
func TestParentDeath(t *testing.T) {
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestParentDeathHelper$")
	parent.Env = append(os.Environ(), "PROC_TEST_HELPER="+dir)
	var out bytes.Buffer
	parent.Stdout, parent.Stderr = &out, &out
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	sleeper, shell := proctest.ReadPID(t, filepath.Join(dir, "sleeper")), proctest.ReadPID(t, filepath.Join(dir, "shell"))
	var rec Record
	if err := json.Unmarshal([]byte(proctest.WaitFile(t, filepath.Join(dir, "record"))), &rec); err != nil {
		t.Fatal(err)
	}
	if !Alive(rec) {
		t.Fatalf("the recorded guard %+v is not alive", rec)
	}
	parent.Process.Kill()
	parent.Wait()
	proctest.WaitExited(t, sleeper, shell, rec.PID)
}

func TestParentDeathHelper(t *testing.T) {
	dir := os.Getenv("PROC_TEST_HELPER")
	if dir == "" {
		t.Skip("run by TestParentDeath")
	}
	p, err := Start(context.Background(), Cmd{Argv: []string{"sh", "-c",
		"sleep 300 & echo $! > sleeper.tmp; mv sleeper.tmp sleeper; echo $$ > shell.tmp; mv shell.tmp shell; wait"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p.Record())
	b = append(b, '\n')
	os.WriteFile(filepath.Join(dir, "record.tmp"), b, 0o644)
	os.Rename(filepath.Join(dir, "record.tmp"), filepath.Join(dir, "record"))
	time.Sleep(time.Minute) // killed long before
}

func TestAliveAndKillGroup(t *testing.T) {
	p, err := Start(context.Background(), Cmd{Argv: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := p.Record()
	if rec.PGID != rec.PID || rec.Start == 0 || rec.Boot == "" {
		t.Fatalf("record %+v", rec)
	}
	if !Alive(rec) {
		t.Fatal("not alive")
	}
	for _, other := range []Record{
		{PID: rec.PID, PGID: rec.PGID, Start: rec.Start + 1, Boot: rec.Boot}, // the pid reused
		{PID: rec.PID, PGID: rec.PGID, Start: rec.Start, Boot: "another-boot"},
		{PID: rec.PID, PGID: rec.PGID, Start: rec.Start, Boot: rec.Boot, NS: "pid:[1]"}, // another pid namespace
		{PID: rec.PID, PGID: rec.PGID + 1, Start: rec.Start, Boot: rec.Boot},
		{PID: rec.PID, PGID: rec.PGID},
		{},
	} {
		if Alive(other) {
			t.Errorf("%+v is alive", other)
		}
		if killed, err := KillGroup(other); killed || err != nil {
			t.Fatalf("KillGroup(%+v): %v %v", other, killed, err)
		}
	}
	if !Alive(rec) {
		t.Fatal("killed by a record that is not ours")
	}
	if killed, err := KillGroup(rec); !killed || err != nil {
		t.Fatalf("KillGroup: %v %v", killed, err)
	}
	var exitErr *ExitError
	if err := p.Wait(); !errors.As(err, &exitErr) || exitErr.Signal != syscall.SIGKILL {
		t.Fatalf("after KillGroup: %v", err)
	}
	// The guard that kept the group (it carries the mark) ends just after
	// the leader: allow it a moment, as recovery would.
	for deadline := time.Now().Add(2 * time.Second); Alive(rec); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still alive after it was reaped")
		}
	}
}

// The guard killed on its own: its command dies with it (parent-death
// signal), what the command started lives on in the group without a leader.
// The mark in those processes' environment still proves the group ours.
func TestAliveWithoutLeader(t *testing.T) {
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	p, err := Start(context.Background(), Cmd{Argv: []string{"sh", "-c", "sleep 300 & echo $! > " + pidfile + "; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := p.Record()
	sleeper := proctest.ReadPID(t, pidfile)
	t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	syscall.Kill(rec.PID, syscall.SIGKILL) // the guard
	p.Wait()                               // and reaped: the leader is gone
	if !proctest.Running(sleeper) {
		t.Fatal("set-up: the grandchild died with the guard")
	}
	other := rec
	other.Start++ // a record of another process that had the pid
	if Alive(other) {
		t.Fatal("a group with another leader's mark is alive")
	}
	if killed, _ := KillGroup(other); killed {
		t.Fatal("killed a group that is not ours")
	}
	if !Alive(rec) {
		t.Fatal("the leaderless group is not recognised")
	}
	if killed, err := KillGroup(rec); !killed || err != nil {
		t.Fatalf("KillGroup: %v %v", killed, err)
	}
	proctest.WaitExited(t, sleeper)
	if Alive(rec) {
		t.Fatal("alive after KillGroup")
	}
}

// Gone is certain death only: the process itself (not its group) exited or
// its pid went to another process, on this boot. What cannot be known (a
// record of another boot, one without a start time) is never gone, and
// neither is this process nor a live child.
func TestGone(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	live := identify(cmd.Process.Pid)
	reused := live
	reused.Start++
	otherBoot := live
	otherBoot.Boot = "another-boot"
	otherNS := reused
	otherNS.NS = "pid:[1]"
	noNS := reused
	noNS.NS = ""
	for _, c := range []struct {
		name string
		r    Record
		want bool
	}{
		{"this process", Self(), false},
		{"a live child", live, false},
		{"its pid with another start time (reused)", reused, true},
		{"another boot (another machine)", otherBoot, false},
		{"its pid reused, but in another pid namespace (a container)", otherNS, false},
		{"its pid reused, no namespace (an older record)", noNS, false},
		{"no start time", Record{PID: live.PID, Boot: live.Boot, NS: live.NS}, false},
		{"no boot", Record{PID: live.PID, Start: live.Start, NS: live.NS}, false},
		{"empty", Record{}, false},
	} {
		if got := Gone(c.r); got != c.want {
			t.Errorf("%s: Gone(%+v) = %v, want %v", c.name, c.r, got, c.want)
		}
	}
	// Killed, a zombie until reaped, then no process at all: gone both times.
	cmd.Process.Signal(syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); !Gone(live); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped child is not gone")
		}
	}
	cmd.Wait()
	if !Gone(live) {
		t.Fatal("a reaped child is not gone")
	}
	if Gone(otherBoot) || Gone(otherNS) {
		t.Fatal("a record of another boot or pid namespace is gone")
	}
}

// A record is read from the log, which anyone who can push writes: one
// that names init, group 0 or 1 (kill(-1) signals every process the user
// may signal) or spool's own group is never alive, so never signalled,
// whatever its start time and boot say. Only Alive is asked here: a
// failure must not kill the test's own processes.
func TestAliveRefusesRecordsNoChildHas(t *testing.T) {
	self := identify(os.Getpid())
	if self.Start == 0 || self.PGID != syscall.Getpgrp() {
		t.Fatalf("set-up: own record %+v", self)
	}
	init := identify(1)
	for _, r := range []Record{
		self, // this process, in its own group: matches on every field
		{PID: self.PID, PGID: 1, Start: self.Start, Boot: self.Boot, NS: self.NS},
		{PID: self.PID, PGID: 0, Start: self.Start, Boot: self.Boot, NS: self.NS},
		{PID: 1, PGID: 1, Start: init.Start, Boot: init.Boot, NS: init.NS},
		{PID: 1, PGID: init.PGID, Start: init.Start, Boot: init.Boot, NS: init.NS},
	} {
		if Alive(r) {
			t.Errorf("%+v is alive: a forged record would be signalled", r)
		}
	}
}
