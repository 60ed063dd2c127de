// Package hooks installs thin git-hook shims that exec `spool hook <name>`.
//
// A shim is a static POSIX sh script; the only varying part is the hook name.
// A pre-existing hook is moved aside to <name>.spool-orig and chained by the
// shim, so installing spool never silently disables a user's hook.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
)

// Names are the hooks spool installs, in this order.
var Names = []string{"post-commit", "post-merge", "post-checkout", "post-rewrite", "pre-push"}

// State describes what occupies a hook's path.
type State string

const (
	Installed State = "installed" // our shim, with or without a chained original
	Missing   State = "missing"   // no hook file
	Foreign   State = "foreign"   // a hook file that is not ours
)

// Status reports one hook.
type Status struct {
	Name    string `json:"name"`
	State   State  `json:"state"`
	Chained bool   `json:"chained"` // an original hook is kept and chained
	Path    string `json:"path"`
}

// origSuffix marks a user's original hook that our shim chains.
const origSuffix = ".spool-orig"

// marker identifies our shims; the version lets a later release recognise
// and rewrite older shims.
const marker = "# spool-hook-shim v1"

// markerPrefix is version-independent, so any spool shim counts as ours.
const markerPrefix = "# spool-hook-shim "

// shimTemplate is the whole shim; @NAME@ is replaced by a hook name from Names
// and nothing else is ever interpolated. The original hook runs first (only if
// executable, as git would) and its failure wins. Hooks that get data on stdin
// have it captured once so both the original and spool see it. A missing spool
// binary must never cost the user a commit or push, so it only warns.
const shimTemplate = `#!/bin/sh
` + marker + `
# Installed by spool: runs any original hook (@NAME@` + origSuffix + `), then
# "spool hook @NAME@". Remove with: spool hooks uninstall (it restores the original).
hook='@NAME@'
spool=${SPOOL_BIN:-spool}
orig=$0` + origSuffix + `
stdin_file=

if [ -x "$orig" ]; then
	case $hook in
	pre-push | post-rewrite)
		stdin_file=$(mktemp) || exit 1
		trap 'rm -f "$stdin_file"' EXIT
		trap 'exit 1' HUP INT TERM
		cat >"$stdin_file" || exit 1
		"$orig" "$@" <"$stdin_file" || exit $?
		;;
	*)
		"$orig" "$@" || exit $?
		;;
	esac
fi

found=
if command -v "$spool" >/dev/null 2>&1; then
	found=1
	# dash's command -v accepts any existing path, executable or not.
	case $spool in */*) [ -f "$spool" ] && [ -x "$spool" ] || found= ;; esac
fi
if [ -z "$found" ]; then
	echo "spool: not found on PATH; $hook hook skipped (install spool or set SPOOL_BIN)" >&2
	exit 0
fi

if [ -n "$stdin_file" ]; then
	# Not exec: the EXIT trap must still remove the temp file.
	"$spool" hook "$hook" "$@" <"$stdin_file"
	exit $?
fi
exec "$spool" hook "$hook" "$@"
`

// shim returns the exact shim content for a hook name.
func shim(name string) []byte {
	return []byte(strings.ReplaceAll(shimTemplate, "@NAME@", name))
}

// Dir returns the absolute hooks directory of the repository containing dir.
// git resolves core.hooksPath (and worktrees) for --git-path hooks; a relative
// answer is relative to dir because of -C.
func Dir(ctx context.Context, dir string) (string, error) {
	out, err := git.Run(ctx, dir, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	p := strings.TrimRight(out, "\r\n")
	if p == "" {
		return "", fmt.Errorf("git rev-parse --git-path hooks in %s: empty output", dir)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Abs(p)
}

// ErrBackupExists is a foreign hook that cannot be moved aside because its
// backup path is taken.
var ErrBackupExists = fault.Sentinel(fault.Register(fault.Environment, "hook_backup_exists"), errors.New("hook backup already exists"))

// Install puts a shim at every hook in Names, moving a foreign hook aside to
// <name>.spool-orig first. It is idempotent: rerunning rewrites identical
// shims and never backs up a shim. It checks every hook before changing any,
// so a refusal leaves the directory as it was.
func Install(hooksDir string) ([]Status, error) {
	if err := os.MkdirAll(hooksDir, 0o755); err != nil {
		return nil, err
	}
	foreign := map[string]bool{}
	for _, name := range Names {
		path := filepath.Join(hooksDir, name)
		state, err := stateOf(path)
		if err != nil {
			return nil, err
		}
		if state != Foreign {
			continue
		}
		orig := path + origSuffix
		if exists, err := lexists(orig); err != nil {
			return nil, err
		} else if exists {
			// Renaming would overwrite the earlier backup: refuse rather than lose a hook.
			return nil, fmt.Errorf("%w: %s is not a spool shim and %s already exists; move one aside and retry", ErrBackupExists, path, orig)
		}
		foreign[name] = true
	}
	for _, name := range Names {
		path := filepath.Join(hooksDir, name)
		if foreign[name] {
			// Rename keeps content, mode and even symlinks exactly.
			if err := os.Rename(path, path+origSuffix); err != nil {
				return nil, err
			}
		}
		if err := writeAtomic(path, shim(name)); err != nil {
			return nil, err
		}
	}
	return Inspect(hooksDir)
}

// Uninstall removes our shims and puts any chained original back in place.
// Foreign hooks are left alone and missing hooks stay missing.
func Uninstall(hooksDir string) ([]Status, error) {
	for _, name := range Names {
		path := filepath.Join(hooksDir, name)
		state, err := stateOf(path)
		if err != nil {
			return nil, err
		}
		if state != Installed {
			continue
		}
		orig := path + origSuffix
		exists, err := lexists(orig)
		if err != nil {
			return nil, err
		}
		if exists {
			// Rename over the shim: the hook path is never briefly empty.
			err = os.Rename(orig, path)
		} else {
			err = os.Remove(path)
		}
		if err != nil {
			return nil, err
		}
	}
	return Inspect(hooksDir)
}

// Inspect reports the state of every hook in Names without changing anything.
func Inspect(hooksDir string) ([]Status, error) {
	out := make([]Status, 0, len(Names))
	for _, name := range Names {
		path := filepath.Join(hooksDir, name)
		state, err := stateOf(path)
		if err != nil {
			return nil, err
		}
		st := Status{Name: name, State: state, Path: path}
		if state == Installed {
			if st.Chained, err = lexists(path + origSuffix); err != nil {
				return nil, err
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// stateOf classifies the file at path by looking for our marker line.
func stateOf(path string) (State, error) {
	if exists, err := lexists(path); err != nil || !exists {
		return Missing, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Foreign, nil // a dangling symlink is still someone's hook
	}
	if err != nil {
		return "", err
	}
	if bytes.Contains(data, []byte("\n"+markerPrefix)) {
		return Installed, nil
	}
	return Foreign, nil
}

// lexists reports whether path exists, without following a final symlink.
func lexists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// writeAtomic writes data as an executable file, in full before git can
// run it (internal/durable).
func writeAtomic(path string, data []byte) error {
	return durable.WriteFile(path, data, 0o755)
}
