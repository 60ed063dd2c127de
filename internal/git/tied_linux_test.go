package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/proc/proctest"
)

// A git RunTied started dies when spool is killed with SIGKILL, and runs
// in spool's own process group (it may ask the terminal). The "spool" is
// this test binary again (TestRunTiedHelper); its git runs an alias that
// writes git's pid and sleeps.
func TestRunTiedDiesWithSpool(t *testing.T) {
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestRunTiedHelper$")
	parent.Env = append(os.Environ(), "GIT_TIED_TEST_HELPER="+dir)
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a shell gives spool
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	gitPID := proctest.ReadPID(t, filepath.Join(dir, "git"))
	sleeper := proctest.ReadPID(t, filepath.Join(dir, "sleeper"))
	t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	if pgid, _ := syscall.Getpgid(gitPID); pgid != parent.Process.Pid {
		t.Fatalf("git is in group %d, spool's is %d", pgid, parent.Process.Pid)
	}
	parent.Process.Kill()
	parent.Wait()
	proctest.WaitExited(t, gitPID)
}

func TestRunTiedHelper(t *testing.T) {
	dir := os.Getenv("GIT_TIED_TEST_HELPER")
	if dir == "" {
		t.Skip("run by TestRunTiedDiesWithSpool")
	}
	alias := "!echo $PPID > git.tmp; mv git.tmp git; sleep 300 & echo $! > sleeper.tmp; mv sleeper.tmp sleeper; wait"
	RunTied(context.Background(), dir, "-c", "alias.hang="+alias, "hang")
}

// LockFile names the lock file git found in its way, and nothing else.
func TestLockFile(t *testing.T) {
	for _, c := range []struct{ stderr, want string }{
		{"fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'HEAD': Unable to create '/r/.git/HEAD.lock': File exists.\n\nAnother git process seems to be running",
			"/r/.git/HEAD.lock"},
		{"fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': Unable to create '/r/.git/refs/heads/main.lock': File exists.",
			"/r/.git/refs/heads/main.lock"},
		{"remote: error: cannot lock ref 'refs/heads/main': Unable to create '/it's/remote.git/refs/heads/main.lock': File exists.",
			"/it's/remote.git/refs/heads/main.lock"},
		{"fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': is at 1234 but expected 5678", ""},
		{"! [rejected]        main -> main (fetch first)", ""},
	} {
		if got := LockFile(&GitError{Stderr: c.stderr, Err: errors.New("exit status 128")}); got != c.want {
			t.Errorf("LockFile(%q) = %q, want %q", c.stderr, got, c.want)
		}
	}
}

// A git command run Unattended is in a session of its own (no terminal
// to ask on, GIT_TERMINAL_PROMPT=0), and when its context ends Run
// returns with everything git started killed, although that still held
// git's output. git runs an alias that records its session and sleeps.
func TestUnattendedEndsWhole(t *testing.T) {
	dir := t.TempDir()
	alias := `!read _ _ _ _ _ sid _ < /proc/$$/stat; echo "$sid $GIT_TERMINAL_PROMPT" > sid.tmp; mv sid.tmp sid; sleep 300 & echo $! > sleeper.tmp; mv sleeper.tmp sleeper; wait`
	ctx, cancel := context.WithCancel(Unattended(context.Background()))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, dir, "-c", "alias.hang="+alias, "hang")
		done <- err
	}()
	sleeper := proctest.ReadPID(t, filepath.Join(dir, "sleeper"))
	t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) })
	var sid int
	var prompt string
	if _, err := fmt.Sscan(proctest.WaitFile(t, filepath.Join(dir, "sid")), &sid, &prompt); err != nil {
		t.Fatal(err)
	}
	own, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if sid == int(own) || prompt != "0" {
		t.Fatalf("git ran in session %d (spool's is %d) with GIT_TERMINAL_PROMPT=%q", sid, own, prompt)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a git command killed midway succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return in 10s once its context ended")
	}
	proctest.WaitExited(t, sleeper)
}

// A git command run Unattended that exits 0 but leaves a process holding
// its output (a detached background job) succeeds, with what it printed.
func TestUnattendedSucceedsPastALingeringChild(t *testing.T) {
	dir := t.TempDir()
	alias := `!echo answer; setsid sleep 300 & echo $! > sleeper.tmp; mv sleeper.tmp sleeper`
	out, err := Run(Unattended(context.Background()), dir, "-c", "alias.linger="+alias, "linger")
	sleeper := proctest.ReadPID(t, filepath.Join(dir, "sleeper"))
	syscall.Kill(sleeper, syscall.SIGKILL)
	if err != nil || out != "answer\n" {
		t.Fatalf("got %q, %v", out, err)
	}
}
