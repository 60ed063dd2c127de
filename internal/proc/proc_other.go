//go:build !linux

package proc

import (
	"errors"
	"os"
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

// AgentEnv holds, in an agent's environment, the private directory of the
// repository it may not change (see agent_linux.go).
const AgentEnv = "SPOOL_AGENT_OF"

// Confined knows only the environment without Linux's /proc: no agent runs
// there (StartDetached needs Linux), so nothing else can say otherwise.
func Confined(dir string) (guard int, confined bool) {
	v, ok := os.LookupEnv(AgentEnv)
	return 0, ok && v != "" && v == dir
}
