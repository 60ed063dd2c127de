package store

import (
	"errors"
	"fmt"
	"sync"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/proc"
)

// An agent (orchestrator.agent_command, orchestrator.planner_command) and
// everything it starts may read the repository spool runs it for, never
// change its log: every session that would append or receive events (Begin,
// TryBegin: the write path, sync, config set, replay) asks first, and a
// command under an agent's guard is refused before the lock is taken.
// Reads take no session and work as for anyone.

var (
	// ErrAgentMayNotWrite is a change an agent's command asked for.
	ErrAgentMayNotWrite = errors.New("an agent may not change the log")
	// CodeAgentMayNotWrite is its code (exit 3).
	CodeAgentMayNotWrite = fault.Register(fault.Rejected, "agent_may_not_write")
)

// agentGuard is the agent guard this process runs under for the
// repository whose private directory is dir: asked once per directory, as
// a process's ancestors do not change what they are.
var agentGuard = struct {
	sync.Mutex
	seen map[string]guardAnswer
}{seen: map[string]guardAnswer{}}

type guardAnswer struct {
	pid      int
	confined bool
}

func confined(dir string) (int, bool) {
	agentGuard.Lock()
	defer agentGuard.Unlock()
	a, ok := agentGuard.seen[dir]
	if !ok {
		a.pid, a.confined = proc.Confined(dir)
		agentGuard.seen[dir] = a
	}
	return a.pid, a.confined
}

// mayWrite refuses a session of the log in the private directory dir to
// a process under an agent's guard for it.
func mayWrite(dir string) error {
	pid, ok := confined(dir)
	if !ok {
		return nil
	}
	by := "its environment says so"
	if pid > 0 {
		by = fmt.Sprintf("process %d, its guard, is among its ancestors", pid)
	}
	return fault.New(CodeAgentMayNotWrite, ErrAgentMayNotWrite,
		fmt.Sprintf("spool does not change the log for an agent (%s): an agent reports by its exit status and output, and proposes work as the planner's JSON; see docs/orchestrator.md", by),
		"guard_pid", pid)
}
