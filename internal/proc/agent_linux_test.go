package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/proc/proctest"
)

// A confined command, what it starts, and what that starts after a double
// fork into a session of its own, its marker variable unset, all find the
// guard among their ancestors for the repository it guards, and only for
// that one. The one left running ends with the command.
func TestConfinedAcrossDoubleFork(t *testing.T) {
	scope, other, out := t.TempDir(), t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(scope, link); err != nil {
		t.Fatal(err)
	}
	helper := func(name string) string {
		return fmt.Sprintf(`PROC_TEST_CONFINED=%s/%s PROC_TEST_SCOPES=%s:%s:%s %q -test.run='^TestConfinedHelper$'`, out, name, scope, link, other, os.Args[0])
	}
	script := helper("child") + "\n" +
		"(unset " + AgentEnv + "; setsid sh -c '" + strings.ReplaceAll(helper("orphan"), "'", `'\''`) + "; exec sleep 300' & echo $! > " + out + "/daemon.tmp)\n" +
		"mv " + out + "/daemon.tmp " + out + "/daemon\n" +
		"while [ ! -f " + out + "/orphan ]; do sleep 0.02; done\n"
	if err := Run(context.Background(), Cmd{Argv: []string{"sh", "-c", script}, Confine: scope}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"child", "orphan"} {
		got := strings.TrimSpace(proctest.WaitFile(t, filepath.Join(out, name)))
		if want := "confined confined free"; got != want {
			t.Errorf("%s: %q, want %q (scope, its link, another repository)", name, got, want)
		}
	}
	// The daemon: the subshell's pid, whose setsid sh then exec'd sleep.
	proctest.WaitExited(t, proctest.ReadPID(t, filepath.Join(out, "daemon")))
	if _, ok := Confined(scope); ok {
		t.Error("the test itself is not confined")
	}
}

func TestConfinedHelper(t *testing.T) {
	path := os.Getenv("PROC_TEST_CONFINED")
	if path == "" {
		t.Skip("run by TestConfinedAcrossDoubleFork")
	}
	var words []string
	for _, dir := range strings.Split(os.Getenv("PROC_TEST_SCOPES"), ":") {
		if _, ok := Confined(dir); ok {
			words = append(words, "confined")
		} else {
			words = append(words, "free")
		}
	}
	os.WriteFile(path+".tmp", []byte(strings.Join(words, " ")+"\n"), 0o644)
	os.Rename(path+".tmp", path)
}

// The walk a writing command makes when no agent is among its ancestors:
// docs/orchestrator.md quotes its cost.
func BenchmarkConfinedWalk(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, ok := Confined(dir); ok {
			b.Fatal("confined")
		}
	}
}
