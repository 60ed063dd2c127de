package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"spool": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScript runs testdata/script/*.txtar: the CLI as a user types it.
func TestScript(t *testing.T) {
	testscript.Run(t, scriptParams(t, filepath.Join("..", "..", "testdata", "script")))
}

func scriptParams(t *testing.T, dir string) testscript.Params {
	return testscript.Params{
		Dir:  dir,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exit": cmdExit, "grab": cmdGrab},
		Setup: func(env *testscript.Env) error {
			testdata, err := filepath.Abs(filepath.Join("..", "..", "testdata"))
			if err != nil {
				return err
			}
			env.Setenv("TESTDATA", testdata) // fixtures such as the fake bd
			home := filepath.Join(env.WorkDir, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			for k, v := range map[string]string{
				"HOME":                home,
				"GIT_CONFIG_NOSYSTEM": "1",
				"GIT_AUTHOR_NAME":     "Ada",
				"GIT_AUTHOR_EMAIL":    "ada@example.com",
				"GIT_COMMITTER_NAME":  "Ada",
				"GIT_COMMITTER_EMAIL": "ada@example.com",
				"SPOOL_ACTOR":         "",
				"SPOOL_NOW":           "",
				"NO_COLOR":            "1",
			} {
				env.Setenv(k, v)
			}
			return nil
		},
	}
}

// cmdExit runs a program and checks its exact exit code:
//
//	exit 3 spool task show nope
//
// stdout and stderr are kept for the stdout/stderr assertions that follow.
// The program sees PATH, HOME and the GIT_*, SPOOL_* and NO_COLOR variables
// of the script.
func cmdExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exit CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	err = cmd.Run()
	got := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		got = exitErr.ExitCode()
	} else if err != nil {
		ts.Fatalf("run %s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdGrab sets an environment variable from the last command's stdout:
//
//	grab ID 'created (sp-[0-9a-z]+)'
//
// sets $ID to the first group of the first match (ids are hashes, so
// scripts capture them rather than spell them out).
func cmdGrab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: grab VAR REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("grab: %q does not match stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

func scriptEnv(ts *testscript.TestScript) []string {
	names := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "WORK": true, "NO_COLOR": true}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "SPOOL_") {
			names[k] = true
		}
	}
	for _, k := range []string{"GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
		"GIT_COMMITTER_EMAIL", "SPOOL_ACTOR", "SPOOL_NOW", "SPOOL_BIN",
		"SPOOL_FAKEBD_LOG", "SPOOL_FAKEBD_READY", "SPOOL_FAKEBD_FAIL"} {
		names[k] = true
	}
	var env []string
	for k := range names {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}
