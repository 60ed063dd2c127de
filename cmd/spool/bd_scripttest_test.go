package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsc.io/script"
	"rsc.io/script/scripttest"
)

// TestBeadsScripttests runs beads v0.49.1's own CLI scripttests
// (testdata/beads/scripttest, copied unmodified; see the README there)
// against spool installed as bd, the way beads' cmd/bd/scripttest_test.go
// runs them against bd: rsc.io/script's default commands plus bd, in an
// empty directory (no git repository), with PATH alone in the environment.
//
// The scripts are beads', so they check only what bd's own tests check. What
// they check of bd's own storage (its database file and the lines of its
// .gitignore that name that storage) spool does not have: those commands
// are listed in bdStorageChecks and skipped, nothing else.
//
// SPOOL_BD_REAL=/path/to/bd runs the same scripts against a real bd (how
// the README's list of what bd 0.49.1 passes was made), without skipping.
func TestBeadsScripttests(t *testing.T) {
	t.Parallel()
	binDir := t.TempDir()
	bd := filepath.Join(binDir, "bd")
	real := os.Getenv("SPOOL_BD_REAL")
	target := real
	if target == "" {
		target = spoolBinary(t)
	}
	if err := os.Symlink(target, bd); err != nil {
		t.Fatal(err)
	}
	engine := script.NewEngine()
	// No kill delay that a slow machine could turn into a failure: a
	// command that hangs is cut off by the test's own deadline.
	engine.Cmds["bd"] = script.Program(bd, nil, 0)
	engine.Quiet = true
	if real == "" {
		for _, name := range []string{"exists", "grep"} {
			engine.Cmds[name] = skipStorage(engine.Cmds[name], name)
		}
	}
	env := []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		// As beads' harness, but for this: a temporary directory inside
		// some git repository must not make bd init find that one.
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(t.TempDir()),
	}
	scripttest.Test(t, context.Background(), engine, env, filepath.Join("..", "..", "testdata", "beads", "scripttest", "*.txt"))
}

// bdStorageChecks are the scripts' commands that look at bd's storage: the
// SQLite database and the .gitignore lines for its files (database,
// journal, daemon, socket), which spool, keeping its log in .git/spool, does
// not write. Each is "command args" as the script has it.
var bdStorageChecks = loadStorageChecks()

func loadStorageChecks() map[string]bool {
	f, err := os.Open(filepath.Join("..", "..", "testdata", "beads", "scripttest", "storage-checks"))
	if err != nil {
		return nil // the test that needs them fails on the first one
	}
	defer f.Close()
	checks := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			checks[line] = true
		}
	}
	return checks
}

// skipStorage wraps a default command: a check of bd's storage passes with
// a note in the log; any other runs as it would.
func skipStorage(cmd script.Cmd, name string) script.Cmd {
	return script.Command(*cmd.Usage(), func(s *script.State, args ...string) (script.WaitFunc, error) {
		if bdStorageChecks[name+" "+strings.Join(args, " ")] {
			s.Logf("skipped (bd's own storage; see testdata/beads/scripttest/storage-checks)\n")
			return nil, nil
		}
		return cmd.Run(s, args...)
	})
}
