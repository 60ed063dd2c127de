// Package proc starts the processes spool runs for someone (the merge
// train's test command, bd/br, and later agents and job segments) so that
// none of them outlives spool:
//
//   - Each runs in a process group of its own, so a terminal's Ctrl-C
//     reaches spool and spool decides, and the whole group (the command and
//     everything it started) can be signalled at once.
//   - On Linux a small guard leads the group: spool's own binary again
//     (/proc/self/exe), which starts the command and waits. The guard is
//     signalled when spool dies, even by SIGKILL (the parent-death signal),
//     and then ends the whole group: SIGTERM, a grace period, SIGKILL. The
//     parent-death signal alone would end only the direct child and leave
//     what it started (go test's test binaries, a shell's background jobs)
//     running. When the command exits, the guard kills what it left behind.
//   - Cancelling the context (a timeout, an interrupt) ends the group the
//     same way.
//   - Start returns a Record (pid, process group, start time, boot, pid
//     namespace) that callers put in the log, so that recovery after a
//     crash can kill a group that somehow survived (KillGroup), and only if
//     it is still ours: a pid reused by another process has another start
//     time, and when the leader is gone the group's members carry its
//     Record in their environment (SPOOL_PROC_GROUP). Self is such a record
//     of spool itself, which a lease's holder puts in the log so that
//     recovery on the same machine can tell it dead (Gone) before the lease
//     runs out.
//
// A command that must outlive spool (a daemon) has to leave the group
// itself, with setsid, as daemons do.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

// DefaultGrace is how long a command has between SIGTERM and SIGKILL.
const DefaultGrace = 2 * time.Second

// Record identifies a started process group for a later process, which may
// run after a crash: the group leader's pid, the group, the leader's start
// time in clock ticks since boot (/proc/<pid>/stat field 22), the boot's
// id (another machine or a reboot is never ours) and the pid namespace the
// pid is a number of (a container on the same machine shares its boot id,
// not its pids). Start is 0 where the start time cannot be read (not
// Linux); such a record is never Alive. NS is empty in older records.
type Record struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot,omitempty"`
	NS    string `json:"ns,omitempty"`
}

// Cmd is a command to start.
type Cmd struct {
	Argv           []string  // the program (looked up on PATH without a slash) and its arguments
	Dir            string    // working directory; "" is this process's
	Env            []string  // nil is this process's environment
	Stdin          io.Reader // nil is /dev/null
	Stdout, Stderr io.Writer // nil is /dev/null
	Grace          time.Duration
	// Confine, when set, runs an agent: the command and everything it
	// starts may not change the spool repository whose private directory
	// (.git/spool) this names, and end with it (see Confined; Linux only).
	Confine string
}

// ExitError is a command that did not exit 0.
type ExitError struct {
	Code   int            // the exit status, or -1 when a signal ended the command
	Signal syscall.Signal // the signal, when Code is -1
}

func (e *ExitError) Error() string {
	if e.Code < 0 {
		return "signal: " + e.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// ExitCode is the exit status, or -1 when a signal ended the command.
func (e *ExitError) ExitCode() int { return e.Code }

// Process is a started command.
type Process struct {
	rec    Record
	grace  time.Duration
	waited chan struct{} // closed when the group's leader has been reaped
	err    error         // the command's outcome, set before waited is closed
}

// Start starts c in a process group of its own (see the package comment).
// Ending ctx ends the group: SIGTERM, c.Grace, SIGKILL.
func Start(ctx context.Context, c Cmd) (*Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("no command")
	}
	path := c.Argv[0]
	if !strings.Contains(path, "/") {
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return nil, err
		}
	}
	p := &Process{grace: c.Grace, waited: make(chan struct{})}
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	l, err := newLaunch(c, path, p.grace)
	if err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	fault.Go(func() {
		// The parent-death signal is tied to the thread that forked, not to
		// the process: Go may end a thread a goroutine leaves locked, so
		// this goroutine keeps its own thread locked until the child is
		// reaped, and no other goroutine can end it meanwhile.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := l.cmd.Start(); err != nil {
			l.abort()
			started <- err
			return
		}
		started <- nil
		p.err = l.wait()
		close(p.waited)
	})
	if err := <-started; err != nil {
		return nil, err
	}
	p.rec = identify(l.cmd.Process.Pid)
	fault.Go(func() {
		select {
		case <-p.waited:
		case <-ctx.Done():
			p.terminate()
		}
	})
	return p, nil
}

// Run starts c and waits for it.
func Run(ctx context.Context, c Cmd) error {
	p, err := Start(ctx, c)
	if err != nil {
		return err
	}
	return p.Wait()
}

// Record identifies the process group for recovery.
func (p *Process) Record() Record { return p.rec }

// Wait waits for the command and returns nil, an *ExitError, or why it could
// not run.
func (p *Process) Wait() error {
	<-p.waited
	return p.err
}

// terminate ends the group: SIGTERM, the grace period (the guard's own, and
// a second more for it to act), SIGKILL.
func (p *Process) terminate() {
	stop(p.rec)
	t := time.NewTimer(p.grace + time.Second)
	defer t.Stop()
	select {
	case <-p.waited:
	case <-t.C:
		syscall.Kill(-p.rec.PGID, syscall.SIGKILL)
	}
}

// KillGroup kills the recorded group with SIGKILL if it is still alive and
// still ours (Alive), and reports whether it did.
func KillGroup(r Record) (bool, error) {
	if !Alive(r) {
		return false, nil
	}
	if err := syscall.Kill(-r.PGID, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("kill process group %d: %w", r.PGID, err)
	}
	return true, nil
}

const (
	// guardEnv tells spool's binary, started again by Start, to be the
	// guard (Linux).
	guardEnv = "SPOOL_PROC_GUARD"
	// markEnv marks every process of a group in its environment with the
	// group's Record (Linux), so that the group can be recognised after its
	// leader is gone.
	markEnv = "SPOOL_PROC_GROUP"
)

// environ is c's environment without spool's own process variables.
func environ(c Cmd) []string {
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, guardEnv+"=") && !strings.HasPrefix(kv, markEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Self is this process's record, for a process that leads its own group.
func Self() Record { return identify(os.Getpid()) }
