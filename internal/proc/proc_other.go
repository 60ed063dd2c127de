//go:build !linux

package proc

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Without Linux's parent-death signal and /proc there is no guard: the
// command runs in its own process group, which a cancelled context ends,
// but nothing ends it when spool dies, and a Record cannot tell a reused
// pid from ours, so recovery never kills one (Alive is false).

type launch struct{ cmd *exec.Cmd }

func newLaunch(c Cmd, path string, grace time.Duration) (*launch, error) {
	cmd := &exec.Cmd{Path: path, Args: c.Argv, Dir: c.Dir, Env: environ(c), Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}, WaitDelay: 5 * time.Second}
	return &launch{cmd: cmd}, nil
}

func (l *launch) abort() {}

func (l *launch) wait() error {
	err := l.cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &ExitError{Code: -1, Signal: ws.Signal()}
		}
		return &ExitError{Code: exitErr.ExitCode()}
	}
	return err
}

// stop ends the group gently (terminate kills it after the grace period).
func stop(r Record) { syscall.Kill(-r.PGID, syscall.SIGTERM) }

func identify(pid int) Record { return Record{PID: pid, PGID: pid} }

// Alive is false: without a start time a reused pid cannot be told apart.
func Alive(r Record) bool { return false }

// Gone is false: without a start time a reused pid cannot be told apart,
// so only a lease tells that a process is gone.
func Gone(r Record) bool { return false }

// StartDetached is not supported without Linux's /proc: a later spool
// could not tell the daemon from a reused pid.
func StartDetached(c Cmd) (Record, error) {
	return Record{}, errors.New("detached processes need Linux")
}

// Signal never signals: Alive is false without Linux.
func Signal(r Record, sig syscall.Signal) bool { return false }
