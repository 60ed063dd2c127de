package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

// The guard's variable (guardEnv) is "v1:<grace in ms>:<parent pid>". The
// guard removes it from the command's environment, and a stray copy of it
// (another parent pid) is ignored. A confined command's guard (Cmd.Confine)
// is started as agentGuardName + ":" + the repository it guards.

// The guard's argv[0], for ps.
const guardName = "spool-proc-guard"

// init turns any binary that links this package (spool, and the test
// binaries of packages that start commands) into the guard when Start asked
// for one, before anything else runs: an explicit call from main would leave
// a test binary started as a guard running its tests again.
func init() {
	v, ok := os.LookupEnv(guardEnv)
	if !ok {
		return
	}
	grace, parent, ok := parseGuardEnv(v)
	if !ok {
		return
	}
	if os.Getppid() != parent {
		os.Exit(1) // spool died before the guard began: start nothing
	}
	runtime.LockOSThread() // the command's parent-death signal follows the thread that forks it
	scope, confined := strings.CutPrefix(os.Args[0], agentGuardName+":")
	if confined {
		if err := confine(); err != nil {
			os.Exit(1) // no confinement, no agent
		}
	}
	os.Exit(guard(os.Args[1:], grace, scope, confined))
}

func parseGuardEnv(v string) (grace time.Duration, parent int, ok bool) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 || parts[0] != "v1" {
		return 0, 0, false
	}
	ms, err1 := strconv.Atoi(parts[1])
	pid, err2 := strconv.Atoi(parts[2])
	return time.Duration(ms) * time.Millisecond, pid, err1 == nil && err2 == nil && ms >= 0 && pid > 0
}

// stopSignal tells the guard to end its group: the parent-death signal, and
// what Start sends when the context ends. Not SIGTERM, which the command may
// send to its own group (kill 0) without meaning the guard.
const stopSignal = syscall.SIGUSR1

// guard runs argv in its own process group (which it leads) and reports
// how it ended on fd 3. When spool dies or cancels (stopSignal), it ends the
// group: SIGTERM, grace, SIGKILL. When the command exits, it kills what the
// command left running in the group, itself included, after the report.
// SIGTERM, SIGINT and SIGHUP are for the command: the guard ignores them.
func guard(argv []string, grace time.Duration, scope string, confined bool) int {
	status := os.NewFile(3, "status")
	syscall.CloseOnExec(3)
	// Handled, not ignored: an ignored signal would stay ignored in the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	group := syscall.Getpgrp()
	if len(argv) == 0 {
		fmt.Fprint(status, "error no command")
		return 1
	}
	env := append(environ(Cmd{}), markEnv+"="+identify(os.Getpid()).mark())
	if confined {
		env = append(env, AgentEnv+"="+scope)
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		fmt.Fprint(status, "error ", err)
		return 1
	}
	var state *os.ProcessState
	done := make(chan struct{})
	fault.Go(func() {
		cmd.Wait()
		state = cmd.ProcessState
		close(done)
	})
	var orphans chan os.Signal // a confined guard reaps what is reparented to it
	if confined {
		orphans = make(chan os.Signal, 1)
		signal.Notify(orphans, syscall.SIGCHLD)
	}
	var expired <-chan time.Time
wait:
	for {
		select {
		case <-done:
			break wait
		case <-expired:
			break wait
		case <-orphans:
			reapOrphans(cmd.Process.Pid)
		case sig := <-sigs:
			if sig == stopSignal && expired == nil {
				syscall.Kill(-group, syscall.SIGTERM) // the command and whatever it started
				expired = time.After(grace)
			}
		}
	}
	select {
	case <-done:
		ws := state.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			fmt.Fprintf(status, "signal %d", int(ws.Signal()))
		} else {
			fmt.Fprintf(status, "exit %d", ws.ExitStatus())
		}
	default:
		fmt.Fprintf(status, "signal %d", int(syscall.SIGKILL))
	}
	status.Close()
	if confined {
		killDescendants(group) // what left the group (setsid) and stayed among ours
	}
	syscall.Kill(-group, syscall.SIGKILL) // what is left, this guard included
	return 1
}

// launch is a guard about to be started, and how to read its report.
type launch struct {
	cmd    *exec.Cmd
	report *os.File // read end of the guard's fd 3
	write  *os.File
}

func newLaunch(c Cmd, path string, grace time.Duration) (*launch, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	env := append(environ(c), fmt.Sprintf("%s=v1:%d:%d", guardEnv, grace.Milliseconds(), os.Getpid()))
	name := guardName
	if c.Confine != "" {
		name = agentGuardName + ":" + c.Confine
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{name, path}, c.Argv[1:]...), Dir: c.Dir, Env: env,
		Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, ExtraFiles: []*os.File{w},
		// The guard gets stopSignal when this process dies.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: stopSignal},
		// A process that left the group (setsid) may hold stdout open.
		WaitDelay: 5 * time.Second}
	return &launch{cmd: cmd, report: r, write: w}, nil
}

// abort closes the pipe of a guard that never started.
func (l *launch) abort() {
	l.report.Close()
	l.write.Close()
}

// wait reaps the guard and returns the command's outcome from its report.
func (l *launch) wait() error {
	l.write.Close() // the guard has its own copy; EOF comes when it is gone
	waitErr := l.cmd.Wait()
	report, _ := io.ReadAll(l.report)
	l.report.Close()
	kind, arg, _ := strings.Cut(string(report), " ")
	n, convErr := strconv.Atoi(arg)
	switch {
	case kind == "exit" && convErr == nil && n == 0:
		return nil
	case kind == "exit" && convErr == nil:
		return &ExitError{Code: n}
	case kind == "signal" && convErr == nil:
		return &ExitError{Code: -1, Signal: syscall.Signal(n)}
	case kind == "error":
		return errors.New(arg)
	}
	// No report: the guard itself was killed (SIGKILL after the grace).
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &ExitError{Code: -1, Signal: ws.Signal()}
		}
	}
	if waitErr == nil {
		waitErr = errors.New("the process guard ended without a report")
	}
	return waitErr
}

// stop asks the guard to end the group.
func stop(r Record) { syscall.Kill(r.PID, stopSignal) }

var bootID = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(b))
})

// pidNS names this process's pid namespace ("pid:[4026531836]"): the
// processes spool starts are in it too.
var pidNS = sync.OnceValue(func() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
})

// identify reads pid's record from /proc.
func identify(pid int) Record {
	r := Record{PID: pid, PGID: pid, Boot: bootID(), NS: pidNS()}
	if st, ok := readStat(pid); ok {
		r.PGID, r.Start = st.pgid, st.start
	}
	return r
}

// Alive reports whether r's group still exists and is still ours: its
// leader is the process r recorded (same boot, start time and group; running
// or not yet reaped), or, the leader gone, a member of the group carries the
// leader's mark in its environment. The group's number cannot be given to
// another group while any member lives, so a marked member proves it ours.
func Alive(r Record) bool {
	if !killable(r) || r.Start == 0 || r.Boot == "" || r.Boot != bootID() || r.NS != "" && r.NS != pidNS() {
		return false
	}
	if st, ok := readStat(r.PID); ok && st.start == r.Start {
		return st.pgid == r.PGID
	}
	return markedMember(r)
}

// killable refuses a record no group spool started can have, whatever the
// log says: kill(-1) signals every process the user may signal, kill(0)
// spool's own group, and init (pid 1) is never spool's. spool's own group
// is never one it started either (each child gets a group of its own), so
// a record naming it (its shell's job, say) is refused too. The record
// comes from the log, which anyone who can push writes.
func killable(r Record) bool {
	return r.PID > 1 && r.PGID > 1 && r.PGID != syscall.Getpgrp()
}

// Gone reports whether the process r recorded has certainly ended: r was
// recorded on this boot of this machine, in this pid namespace, and no
// process has its pid with its start time any more (it exited, or the pid
// now belongs to another process), or it is a zombie. Unknown is not gone:
// a record of another machine, boot or pid namespace (a container sharing
// the repository), one without a start time or namespace (an older
// spool's), or a pid that exists but whose start time cannot be read
// (another user's, under hidepid) is left to its lease. Unlike Alive it
// asks about the process, not its group.
func Gone(r Record) bool {
	if r.PID <= 0 || r.Start == 0 || r.Boot == "" || r.Boot != bootID() || r.NS == "" || r.NS != pidNS() {
		return false
	}
	if err := syscall.Kill(r.PID, 0); errors.Is(err, syscall.ESRCH) {
		return true // no process has the pid
	}
	st, ok := readStat(r.PID)
	return ok && (st.start != r.Start || st.state == 'Z')
}

// mark is the value of markEnv for the group r leads.
func (r Record) mark() string { return fmt.Sprintf("%s:%d:%d", r.Boot, r.PID, r.Start) }

// markedMember looks through /proc for a process in r's group whose
// environment (as it was at exec) has r's mark. Only recovery asks, and
// only when the leader is gone.
func markedMember(r Record) bool {
	if err := syscall.Kill(-r.PGID, 0); errors.Is(err, syscall.ESRCH) {
		return false // no such group
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	want := []byte(markEnv + "=" + r.mark())
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); !ok || st.pgid != r.PGID {
			continue
		}
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil {
			continue // another user's process, or gone
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				return true
			}
		}
	}
	return false
}

type stat struct {
	state byte // field 3: R, S, D, Z (zombie) …
	pgid  int
	start uint64
}

// readStat reads the process group (field 5) and start time (field 22) of
// /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	fields := strings.Fields(string(b[i+1:])) // from field 3 on
	if len(fields) < 20 {
		return stat{}, false
	}
	pgid, err1 := strconv.Atoi(fields[5-3])
	start, err2 := strconv.ParseUint(fields[22-3], 10, 64)
	return stat{state: fields[0][0], pgid: pgid, start: start}, err1 == nil && err2 == nil
}

// StartDetached starts c as a daemon does: in a session of its own (no
// terminal signal, no process group of spool's reaches it) and without a
// parent-death signal, so that it outlives this process. Only spool's agent
// supervisor is started so: it ends its agent itself and records how the
// agent ended, for whichever spool looks next. While this process lives it
// reaps the child.
func StartDetached(c Cmd) (Record, error) {
	if len(c.Argv) == 0 {
		return Record{}, errors.New("no command")
	}
	cmd := &exec.Cmd{Path: c.Argv[0], Args: c.Argv, Dir: c.Dir, Env: environ(c), Stdout: c.Stdout, Stderr: c.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return Record{}, err
	}
	rec := identify(cmd.Process.Pid)
	fault.Go(func() { cmd.Wait() })
	return rec, nil
}

// Signal sends sig to r's leader if the group is still alive and ours.
func Signal(r Record, sig syscall.Signal) bool {
	return Alive(r) && syscall.Kill(r.PID, sig) == nil
}
