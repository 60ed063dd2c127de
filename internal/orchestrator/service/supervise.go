package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/orchestrator"
	"github.com/spoolhq/spool/internal/proc"
)

// Supervise is `spool __supervise`: it runs the agent of attempt n (argv in
// workdir) and keeps the records a later spool needs to learn how the agent
// ended when the spool watch that started it is gone: itself first
// (supervisor.json), the agent's output (the log, whose modification time
// is the last output), and the agent's end (exit.json). The agent runs in a
// group that dies with the supervisor; ctx ending (SIGTERM) ends the agent:
// SIGTERM, grace, SIGKILL. It runs confined to the repository whose private
// directory is confine (proc.Cmd.Confine): neither the agent nor anything
// it starts may change that repository's log, and what it leaves running
// ends with it.
func Supervise(ctx context.Context, dir string, n int, workdir, base, confine string, argv []string, grace time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(orchestrator.SupervisorPath(dir, n), supervisorFile{processOf(proc.Self()), base}); err != nil {
		return err
	}
	log, err := os.OpenFile(orchestrator.LogPath(dir, n), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	rec := orchestrator.ExitRecord{ExitCode: -1, StartedAt: time.Now().UTC()}
	p, err := proc.Start(ctx, proc.Cmd{Argv: argv, Dir: workdir, Stdout: log, Stderr: log, Grace: grace, Confine: confine})
	if err == nil {
		err = p.Wait()
	} else {
		fmt.Fprintf(log, "spool: could not start the agent: %v\n", err)
		rec.ExitCode = 127
	}
	var exit *proc.ExitError
	switch {
	case err == nil:
		rec.ExitCode = 0
	case errors.As(err, &exit):
		rec.ExitCode = exit.Code
		if exit.Code < 0 {
			rec.Signal = exit.Signal.String()
		}
	case rec.ExitCode != 127:
		// The guard could not start it (no such file, not executable): a
		// shell's "command not found", which the breaker reads.
		fmt.Fprintf(log, "spool: could not start the agent: %v\n", err)
		rec.ExitCode = 127
	}
	rec.EndedAt = time.Now().UTC()
	return writeJSON(orchestrator.ExitPath(dir, n), rec)
}

// supervisorFile is the supervisor's record of itself and where the attempt started.
type supervisorFile struct {
	orchestrator.Process
	Base string `json:"base"`
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'), 0o644)
}

func processOf(r proc.Record) orchestrator.Process {
	return orchestrator.Process{PID: r.PID, PGID: r.PGID, Start: r.Start, Boot: r.Boot}
}

func recordOf(p orchestrator.Process) proc.Record {
	return proc.Record{PID: p.PID, PGID: p.PGID, Start: p.Start, Boot: p.Boot}
}

// observe reads what the run directory dir and the process table say about
// a's agent, and once it ended, whether its worktree is as it started.
func observe(ctx context.Context, a *orchestrator.Active, dir, worktree string) orchestrator.Observation {
	var o orchestrator.Observation
	if dir == "" {
		return o // no run directory (a task id none can have): nothing to read
	}
	if a.Phase == orchestrator.PhaseStarting {
		var f supervisorFile
		if readJSON(orchestrator.SupervisorPath(dir, a.Attempt), &f) == nil && f.PID > 0 {
			o.Supervisor, o.Base = &f.Process, f.Base
		}
	} else {
		o.Supervisor = &a.Process
	}
	if o.Supervisor != nil {
		o.Alive = proc.Alive(recordOf(*o.Supervisor))
	}
	var x orchestrator.ExitRecord
	if readJSON(orchestrator.ExitPath(dir, a.Attempt), &x) == nil {
		o.Exit = &x
	}
	if st, err := os.Stat(orchestrator.LogPath(dir, a.Attempt)); err == nil && st.Size() > 0 {
		o.LastOutput = st.ModTime().UTC()
	}
	if o.Exit != nil || !o.Alive {
		o.Tail = Tail(orchestrator.LogPath(dir, a.Attempt), 20, 4096)
	}
	if o.Exit != nil && a.Phase == orchestrator.PhaseRunning {
		o.Untouched = untouched(ctx, worktree, a.Base)
	}
	return o
}

// untouched reports whether the worktree is at base with nothing changed
// (untracked files included); false when git cannot tell.
func untouched(ctx context.Context, worktree, base string) bool {
	if worktree == "" || base == "" {
		return false
	}
	head, err := git.Run(ctx, worktree, "rev-parse", "--verify", "HEAD")
	if err != nil || strings.TrimSpace(head) != base {
		return false
	}
	status, err := git.Run(ctx, worktree, "status", "--porcelain", "--untracked-files=all")
	return err == nil && strings.TrimSpace(status) == ""
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Tail is the last lines of a file (an agent's output), at most max bytes;
// "" when it cannot be read.
func Tail(path string, lines, max int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - int64(max)
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	b = bytes.TrimRight(b, "\n")
	parts := strings.Split(string(b), "\n")
	if off > 0 && len(parts) > 1 {
		parts = parts[1:] // the first line is cut
	}
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
