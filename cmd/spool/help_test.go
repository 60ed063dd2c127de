package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (testdata/help, docs/reference) from the code")

// The help a person reads is checked in: spool --help (commands in groups,
// plumbing last), bare spool (a short usage), and a command's help (its
// own flags before the global ones). go test ./cmd/spool -run TestHelpGolden
// -update rewrites testdata/help after a change to the command tree.
func TestHelpGolden(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	for _, c := range []struct {
		file string
		args []string
	}{
		{"bare.txt", nil},
		{"spool.txt", []string{"--help"}},
		{"next.txt", []string{"next", "--help"}},
		{"task-add.txt", []string{"task", "add", "--help"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(c.args, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
				t.Fatalf("spool %s: exit %d, stderr %q", strings.Join(c.args, " "), code, stderr.String())
			}
			golden(t, filepath.Join("..", "..", "testdata", "help", c.file), stdout.Bytes(),
				"go test ./cmd/spool -run TestHelpGolden -update")
		})
	}
}

// The help lists every visible command under a group, and no flag the
// command cannot use: --offline only where a claim can go through the
// remote.
func TestHelpGroupsAndFlags(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	var stdout, stderr bytes.Buffer
	run([]string{"--help"}, &stdout, &stderr)
	out := stdout.String()
	if strings.Contains(out, "\nCommands:") {
		t.Errorf("spool --help has commands outside a group:\n%s", out)
	}
	if i, j := strings.Index(out, "\nDaily work:"), strings.Index(out, "\nPlumbing:"); i < 0 || j < i || !strings.Contains(out[j:], "  append ") {
		t.Errorf("spool --help does not start with daily work and end with plumbing (append):\n%s", out)
	}
	for _, jargon := range []string{"seed ", "§", "HIL", "pending_feedback_categorizations", "build.status"} {
		if strings.Contains(out, jargon) {
			t.Errorf("spool --help says %q", jargon)
		}
	}
	for _, c := range []struct {
		args    []string
		offline bool
	}{
		{[]string{"next"}, true}, {[]string{"done"}, true}, {[]string{"merge", "run"}, true},
		{[]string{"job", "worker"}, true}, {[]string{"prd", "promote"}, true}, {[]string{"watch"}, true},
		{[]string{"merge", "list"}, true}, {[]string{"serve"}, true}, {[]string{"mcp", "serve"}, true},
		{[]string{"task", "add"}, false}, {[]string{"status"}, false}, {[]string{"log"}, false}, {[]string{"config", "set"}, false},
	} {
		stdout.Reset()
		run(append(c.args, "--help"), &stdout, &stderr)
		out := stdout.String()
		if got := strings.Contains(out, "--offline"); got != c.offline {
			t.Errorf("spool %s --help lists --offline: %v, want %v", strings.Join(c.args, " "), got, c.offline)
		}
		if i, j := strings.Index(out, "\nFlags:"), strings.Index(out, "\nGlobal flags:"); i < 0 || j < i {
			t.Errorf("spool %s --help: its flags do not come before the global flags:\n%s", strings.Join(c.args, " "), out)
		}
	}
}

// golden compares got with the file at path, or with -update writes it.
func golden(t *testing.T, path string, got []byte, regenerate string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; %s writes it", err, regenerate)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; run %s and review the diff:\n%s", path, regenerate, lineDiff(string(want), string(got)))
	}
}
