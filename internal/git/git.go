// Package repo finds the git repository spool works in and the paths it uses there.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/proc"
)

// ErrNotGitRepo is returned when the directory is not inside a git work tree.
var ErrNotGitRepo = fault.Sentinel(fault.Register(fault.Environment, "not_a_git_repository"), errors.New("not a git repository"))

// CodeGitFailed is a git command that failed (a GitError).
var CodeGitFailed = fault.Register(fault.Environment, "git_failed")

// Repo holds the paths of one clone. Every worktree of a clone resolves to the
// same Root and CommonDir, so they share one log and one lock.
type Repo struct {
	Root      string // top level of the primary worktree, where .spool/ lives
	WorkTree  string // top level of the worktree the command runs in
	GitDir    string // git dir of that worktree
	CommonDir string // git dir shared by all worktrees
}

// RemoveRefLock removes ref's lock file, which a git killed while writing
// the ref leaves behind: git then refuses every later update of it. Only a
// caller that knows nothing else writes the ref now may call it.
func (r *Repo) RemoveRefLock(ref string) {
	os.Remove(filepath.Join(r.CommonDir, filepath.FromSlash(ref)+".lock"))
}

// absPath is dir made absolute for a message ("." says nothing).
func absPath(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// Discover resolves the repository containing dir.
func Discover(ctx context.Context, dir string) (*Repo, error) {
	if r, ok := discoverPlain(dir); ok {
		return r, nil
	}
	out, err := Run(ctx, dir, "rev-parse", "--path-format=absolute",
		"--is-bare-repository", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		var gerr *GitError
		if errors.As(err, &gerr) && strings.Contains(gerr.Stderr, "not a git repository") {
			return nil, fmt.Errorf("%s is %w (nor inside one): run spool in a clone, give -C DIR, or git init there first", absPath(dir), ErrNotGitRepo)
		}
		// --show-toplevel fails (before anything is printed) in a bare
		// repository and inside a .git directory.
		if errors.As(err, &gerr) && strings.Contains(gerr.Stderr, "must be run in a work tree") {
			return nil, fmt.Errorf("%s has no work tree (a bare repository or a .git directory); spool needs one: %w", dir, ErrNotGitRepo)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 0 && lines[0] == "true" {
		return nil, fmt.Errorf("%s is a bare repository; spool needs a work tree: %w", dir, ErrNotGitRepo)
	}
	if len(lines) > 4 {
		// A path with a newline in it: git prints each path on a line, so
		// the lines cannot say where one ends. Asked alone, a path is all
		// of the output but its last newline.
		lines = lines[:1]
		for _, ask := range []string{"--show-toplevel", "--git-dir", "--git-common-dir"} {
			out, err := Run(ctx, dir, "rev-parse", "--path-format=absolute", ask)
			if err != nil {
				return nil, err
			}
			lines = append(lines, strings.TrimSuffix(out, "\n"))
		}
	}
	if len(lines) != 4 || lines[1] == "" {
		return nil, fmt.Errorf("%s is not inside a work tree: %w", dir, ErrNotGitRepo)
	}
	r := &Repo{WorkTree: lines[1], GitDir: lines[2], CommonDir: lines[3]}
	r.Root, err = primaryWorktree(ctx, r)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// primaryWorktree finds the main worktree: the parent of a ".git" common dir,
// or the first entry of `git worktree list` for separated git dirs.
func primaryWorktree(ctx context.Context, r *Repo) (string, error) {
	if filepath.Base(r.CommonDir) == ".git" {
		return filepath.Dir(r.CommonDir), nil
	}
	if r.GitDir == r.CommonDir {
		return r.WorkTree, nil
	}
	list, err := ListWorktrees(ctx, r.WorkTree) // -z: a path may hold a newline
	if err != nil {
		return "", err
	}
	if len(list) > 0 && list[0].Path != "" {
		return list[0].Path, nil
	}
	return "", fmt.Errorf("cannot find the primary worktree of %s", r.WorkTree)
}

// SpoolDir is the .spool directory of the primary worktree.
func (r *Repo) SpoolDir() string { return filepath.Join(r.Root, ".spool") }

// PrivateDir holds per-clone files git never tracks: lock, writer id, backups.
func (r *Repo) PrivateDir() string { return filepath.Join(r.CommonDir, "spool") }

// GitError is a failed git command with its stderr.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// FaultCode is git_failed.
func (e *GitError) FaultCode() fault.Code { return CodeGitFailed }

// Run runs git with argv in dir and returns its stdout. git runs as spool's
// own child, in spool's process group: a command that may ask for
// credentials on the terminal (push) must stay in the terminal's
// foreground group, or reading it would stop git (SIGTTIN), and most git
// commands are too short for a guard process (see RunGroup) to pay off.
func Run(ctx context.Context, dir string, args ...string) (string, error) {
	return RunInput(ctx, dir, nil, args...)
}

// RunInput is Run with input on git's stdin (nil: none).
func RunInput(ctx context.Context, dir string, input []byte, args ...string) (string, error) {
	return RunEnv(ctx, dir, nil, input, args...)
}

// RunEnv is RunInput with variables added to spool's environment (a
// temporary index: GIT_INDEX_FILE).
func RunEnv(ctx context.Context, dir string, env []string, input []byte, args ...string) (string, error) {
	return run(ctx, dir, env, input, nil, args...)
}

func run(ctx context.Context, dir string, env []string, input []byte, attr *syscall.SysProcAttr, args ...string) (string, error) {
	if ctx.Value(unattendedKey{}) != nil && attr == nil {
		return runUnattended(ctx, dir, env, input, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = attr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if input != nil {
		cmd.Stdin = bytes.NewReader(input)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

type unattendedKey struct{}

// Unattended marks ctx for git commands that must end with ctx, whole:
// those a claim runs against the remote while it holds the log's lock,
// under a deadline. Run with such a context, git runs in a session of its
// own, with no terminal (it cannot ask for a password or passphrase,
// which nobody could answer in time: GIT_TERMINAL_PROMPT=0 too), and
// when ctx ends the whole session is killed (git and whatever it started:
// ssh, a local remote's upload-pack) and Run returns at once, whatever
// still holds git's output. git is also killed when spool dies (Linux's
// parent-death signal, as RunTied).
func Unattended(ctx context.Context) context.Context {
	return context.WithValue(ctx, unattendedKey{}, true)
}

// unattendedWait is how long Run waits for git's output to close once git
// exited or ctx ended (and the session was killed): a process git left in
// the background, outside its session, may hold it.
const unattendedWait = time.Second

func runUnattended(ctx context.Context, dir string, env []string, input []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = unattendedAttr()
	cmd.Env = append(append(os.Environ(), env...), "GIT_TERMINAL_PROMPT=0")
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = unattendedWait
	if input != nil {
		cmd.Stdin = bytes.NewReader(input)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	fault.Go(func() {
		// The parent-death signal is tied to the thread that forked (see
		// RunTied).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- cmd.Run()
	})
	err := <-done
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil && cmd.ProcessState.Success() {
		// git exited 0 and said all it had to; what still held its output
		// (a process it left in the background) is not its answer.
		err = nil
	}
	if err != nil {
		return stdout.String(), &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// RunTied is Run for a git command that must not outlive spool: the merge
// train's push of the target, which a killed train must not leave to land
// behind recovery's back. It stays spool's child in spool's process group,
// so it can still ask for credentials on the terminal, but the kernel
// kills it (SIGKILL) when spool dies, even by SIGKILL (Linux's
// parent-death signal; elsewhere it is Run). What git itself started (ssh,
// a local remote's receive-pack) is not killed with it: it sees its pipe
// to git close.
func RunTied(ctx context.Context, dir string, args ...string) (string, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	fault.Go(func() {
		// The parent-death signal is tied to the thread that forked, not to
		// the process (see internal/proc): keep this goroutine on its
		// thread until git is reaped, so Go cannot end the thread first.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		out, err := run(ctx, dir, nil, nil, tiedAttr(), args...)
		done <- result{out, err}
	})
	r := <-done
	return r.out, r.err
}

// LockFile is the lock file whose existence made a git command fail
// ("Unable to create '<path>.lock': File exists": another git command
// holds it, or one that crashed left it), or "" when that is not why.
func LockFile(err error) string {
	if err == nil {
		return ""
	}
	msg := stderrOf(err)
	const before, after = "Unable to create '", ".lock': File exists"
	i := strings.Index(msg, after)
	if i < 0 {
		return ""
	}
	j := strings.LastIndex(msg[:i], before)
	if j < 0 {
		return ""
	}
	return filepath.Clean(msg[j+len(before) : i+len(".lock")]) // git may print "repo.git/./refs/…"
}

// RunGroup is Run through internal/proc, for the merge train's long,
// unattended commands (the scratch worktree's checkout, the rebase): git
// and whatever it starts (hooks) run in a process group of their own that
// ends with spool, even when spool is killed, so a crashed train leaves no
// git behind to race recovery. Cancelling ctx ends the group (SIGTERM, a
// grace period, SIGKILL). Its stdin is /dev/null; it never asks the terminal.
func RunGroup(ctx context.Context, dir string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	err := proc.Run(ctx, proc.Cmd{Argv: append([]string{"git"}, args...), Dir: dir, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// discoverPlain finds the common case without running git, which costs a
// process per command: dir inside an ordinary clone, a .git directory at its
// top, owned by us, with no setting that moves the work tree. Anything else
// (worktrees, submodules, GIT_* variables, bare or relocated repositories)
// reports false and Discover asks git.
func discoverPlain(dir string) (*Repo, bool) {
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"} {
		if os.Getenv(v) != "" {
			return nil, false
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, false
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, false
	}
	for p := abs; ; p = filepath.Dir(p) {
		gitDir := filepath.Join(p, ".git")
		st, err := os.Lstat(gitDir)
		switch {
		case err == nil && st.IsDir():
			if !plainGitDir(gitDir, st) {
				return nil, false
			}
			return &Repo{Root: p, WorkTree: p, GitDir: gitDir, CommonDir: gitDir}, true
		case err == nil || !errors.Is(err, fs.ErrNotExist):
			return nil, false // a .git file (worktree, submodule) or an error: ask git
		}
		if _, err := os.Stat(filepath.Join(p, "HEAD")); err == nil {
			return nil, false // maybe a bare repository or a git dir itself
		}
		if filepath.Dir(p) == p {
			return nil, false
		}
	}
}

// plainGitDir checks that gitDir is an ordinary repository of ours.
func plainGitDir(gitDir string, st fs.FileInfo) bool {
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
		return false // git's safe.directory rules decide
	}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(gitDir, "commondir")); err == nil {
		return false
	}
	cfg, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		return false
	}
	// core.worktree and core.bare move or remove the work tree.
	lower := bytes.ToLower(cfg)
	return !bytes.Contains(lower, []byte("worktree")) && !bytes.Contains(lower, []byte("bare = true")) &&
		!bytes.Contains(lower, []byte("bare=true"))
}

// MergeDriver is the git config value of spool's merge driver for writer
// files (of the old layout, which committed them). Without spool on PATH it
// never keeps one side only: it writes both sides' lines into %A (git
// merge-file --union) and reports a conflict, so the merge stops loudly,
// nothing is lost, and spool doctor --repair puts the lines in order later.
const MergeDriver = `sh -c 'command -v spool >/dev/null 2>&1 && exec spool merge-driver "$0" "$1" "$2"; ` +
	`echo "spool merge driver: spool is not on PATH: $3 keeps both sides, in conflict; install spool, resolve the conflict as it is, then run spool doctor --repair" >&2; ` +
	`git merge-file --union "$1" "$0" "$2"; exit 1' %O %A %B %P`

// EnsureMergeDriver registers spool's merge driver in the clone's config
// unless its section is there already. A fresh clone of a repository that
// uses spool has .spool/ and .gitattributes but not the driver (git config
// is not cloned); without it, a writer file changed on two branches merges
// as text. It reads one small file in the common case.
func EnsureMergeDriver(ctx context.Context, r *Repo) (registered bool, err error) {
	for try := 0; ; try++ {
		if configuredDriver(r.Root) == MergeDriver {
			return registered, nil
		}
		_, err = Run(ctx, r.Root, "config", "merge.spool.name", "spool event log union")
		if err == nil {
			_, err = Run(ctx, r.Root, "config", "merge.spool.driver", MergeDriver)
		}
		if err == nil {
			return true, nil
		}
		// Another process writing .git/config (spool commands starting
		// together in a fresh clone): wait for it and look again.
		var gerr *GitError
		if try >= 40 || !errors.As(err, &gerr) || !strings.Contains(gerr.Stderr, "could not lock config file") {
			return false, err
		}
		time.Sleep(time.Duration(5+try) * time.Millisecond)
	}
}

// configuredDriver is merge.spool.driver as the repository's own config
// file has it, read in process ("" when it has none).
func configuredDriver(dir string) string {
	r, err := openRepo(dir)
	if err != nil {
		return ""
	}
	cfg, err := r.refs.Config()
	if err != nil {
		return ""
	}
	return cfg.Raw.Section("merge").Subsection("spool").Option("driver")
}
