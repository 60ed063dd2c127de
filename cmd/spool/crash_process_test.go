package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A runtime crash (here out of memory) is not one of spool's exit codes:
// spool dies of SIGABRT with Go's "fatal error:" on stderr, never Go's
// exit 2, which means usage here. A GOTRACEBACK of the user's keeps Go's
// own behaviour.
func TestRuntimeCrashIsNotUsage(t *testing.T) {
	t.Parallel()
	if strconv.IntSize != 64 {
		t.Skip("SPOOL_TEST_PANIC=oom needs a 64-bit address space to overflow")
	}
	bin := spoolBinary(t)
	for _, tc := range []struct {
		traceback string
		signal    syscall.Signal // 0: an exit code
		code      int
	}{
		{"", syscall.SIGABRT, -1},
		{"single", 0, 2},
	} {
		t.Run("GOTRACEBACK="+tc.traceback, func(t *testing.T) {
			// No core file of the crash (ulimit -c 0).
			cmd := exec.Command("sh", "-c", `ulimit -c 0; exec "$0" version`, bin)
			cmd.Env = append(withoutVar(os.Environ(), "GOTRACEBACK"), "SPOOL_TEST_PANIC=oom", "GOTRACEBACK="+tc.traceback)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("spool ran out of memory and ended with %v", err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if tc.signal != 0 && (!ws.Signaled() || ws.Signal() != tc.signal) || ee.ExitCode() != tc.code {
				t.Fatalf("ended with %v (exit code %d), want %v", ee, ee.ExitCode(), tc.signal)
			}
			if !strings.Contains(stderr.String(), "fatal error: out of memory") {
				t.Fatalf("stderr does not say why:\n%.2000s", stderr.String())
			}
		})
	}
}

// withoutVar is env without name's entries.
func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
