package proc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// Agents (Cmd.Confine). An agent must not change the repository spool runs
// it for, whatever it starts and however it starts it: spool's writing
// commands ask Confined first, which looks for the agent's guard among the
// process's ancestors. The guard is a child subreaper, so what the agent
// starts stays among its descendants even after a double fork (an orphan
// is reparented to the guard, not to init), and it kills whatever is left
// of them when the agent ends. The mark the walk looks for is the guard's
// own: its name (comm, which only a process sets for itself) and its argv
// (which names the repository); an agent cannot change either in its
// ancestor's /proc entry. The environment variable AgentEnv says the same
// for a process whose ancestors cannot be seen (another pid namespace).

const (
	// agentGuardName is a confined command's guard's argv[0], before ":"
	// and the private directory of the repository it guards.
	agentGuardName = "spool-agent-guard"
	// agentComm is the guard's comm (prctl PR_SET_NAME, 15 bytes at most):
	// what the walk reads first, from /proc/<pid>/stat.
	agentComm = "spool-agent"
	// AgentEnv holds, in the agent's environment, the private directory
	// of the repository it may not change.
	AgentEnv = "SPOOL_AGENT_OF"
	// maxAncestors bounds the walk: a process tree is rarely 20 deep.
	maxAncestors = 64
)

const (
	prSetName           = 15
	prSetChildSubreaper = 36
)

// confine makes this process (a confined command's guard, before it starts
// the command) a child subreaper with the guard's name.
func confine() error {
	name := []byte(agentComm + "\x00")
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(&name[0])), 0); e != 0 {
		return e
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return e
	}
	return nil
}

// Confined reports whether this process may not change the repository
// whose private directory is dir because it is an agent or runs under one:
// AgentEnv names dir, or an ancestor is the guard of a command confined to
// dir (guard, its pid). dir is compared as given and with its links
// resolved.
func Confined(dir string) (guard int, confined bool) {
	same := func(scope string) bool { return scope != "" && sameDir(scope, dir) }
	if v, ok := os.LookupEnv(AgentEnv); ok && same(v) {
		return 0, true
	}
	pid := os.Getppid()
	for range maxAncestors {
		if pid <= 1 {
			return 0, false
		}
		comm, ppid, ok := commAndParent(pid)
		if !ok {
			return 0, false // gone, or not ours to read (another user's, hidepid)
		}
		if comm == agentComm {
			if scope, ok := guardScope(pid); ok && same(scope) {
				return pid, true
			}
		}
		pid = ppid
	}
	return 0, false
}

// sameDir compares two paths of directories, as given and then resolved.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// commAndParent reads the command name (field 2) and the parent (field 4)
// of /proc/<pid>/stat: one read a step of the walk.
func commAndParent(pid int) (comm string, ppid int, ok bool) {
	var buf [512]byte
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	n, _ := f.Read(buf[:])
	f.Close()
	b := buf[:n]
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+4 > len(b) {
		return "", 0, false
	}
	rest := b[end+2:] // "S 1234 ..."
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		return "", 0, false
	}
	rest = rest[sp+1:]
	if sp = bytes.IndexByte(rest, ' '); sp < 0 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(string(rest[:sp]))
	return string(b[open+1 : end]), ppid, err == nil
}

// guardScope reads a confined guard's scope from its argv[0].
func guardScope(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", false
	}
	arg0, _, _ := bytes.Cut(b, []byte{0})
	scope, ok := bytes.CutPrefix(arg0, []byte(agentGuardName+":"))
	return string(scope), ok
}

// children lists the processes whose parent is this one, zombies apart or
// only them.
func children(zombies bool) []int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		_, ppid, ok := commAndParent(pid)
		if !ok || ppid != self {
			continue
		}
		if st, ok := readStat(pid); ok && (st.state == 'Z') == zombies {
			out = append(out, pid)
		}
	}
	return out
}

// reapOrphans reaps the zombies reparented to this guard, never the
// command itself (exec.Cmd.Wait reaps that one).
func reapOrphans(command int) {
	for _, pid := range children(true) {
		if pid != command {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// killDescendants kills what the command left among this guard's children
// outside its group (group's members die with the group), with their
// groups, until none is left: each one killed hands its own children to
// this guard. Bounded: 100 rounds, 2 s.
func killDescendants(group int) {
	deadline := time.Now().Add(2 * time.Second)
	for range 100 {
		left := children(false)
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range left {
			if st, ok := readStat(pid); ok && st.pgid > 1 && st.pgid != group {
				syscall.Kill(-st.pgid, syscall.SIGKILL)
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
		reapOrphans(0)
	}
}
