package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
)

// The README's error tables list every code spool can produce, with its
// exit status, and no code it cannot: codes are registered where they arise
// (fault.Register), so the registry is what spool can produce.
func TestREADMEListsEveryErrorCode(t *testing.T) {
	documented := readmeCodes(t, filepath.Join("..", "..", "README.md"))
	registered := map[string]fault.Kind{}
	for _, c := range fault.Codes() {
		registered[c.Name] = c.Kind
	}
	for name, kind := range registered {
		exit, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("code %s (exit %d) is not in the README's error tables", name, kind)
		case exit != int(kind):
			t.Errorf("README says %s exits %d; it exits %d", name, exit, kind)
		}
	}
	for name := range documented {
		if _, ok := registered[name]; !ok {
			t.Errorf("README lists %s, which spool never produces", name)
		}
	}
}

// readmeCodes reads the code tables of "Exit codes and errors": rows whose
// first cell holds `code` (one or more) and whose second is the exit status.
func readmeCodes(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| ((?:`[a-z_]+`(?:, )?)+) \\| ([0-9]) \\|")
	code := regexp.MustCompile("`([a-z_]+)`")
	out := map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Exit codes and errors"
			continue
		}
		m := row.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		exit, _ := strconv.Atoi(m[2])
		for _, c := range code.FindAllStringSubmatch(m[1], -1) {
			if _, dup := out[c[1]]; dup {
				t.Errorf("README lists %s twice", c[1])
			}
			out[c[1]] = exit
		}
	}
	if len(out) == 0 {
		t.Fatal("no error tables found in the README")
	}
	return out
}

// Every code declared with fault.Register in a variable is used by some
// constructor outside its declaration: a declared code that nothing
// produces would be documented for nothing. (Codes registered inline, with
// fault.Sentinel, are produced by the sentinel.)
func TestEveryDeclaredCodeIsProduced(t *testing.T) {
	var sources []string
	filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".wt" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, string(b))
		}
		return nil
	})
	decl := regexp.MustCompile(`(?m)^\s*(Code\w+)\s*=\s*fault\.Register\(`)
	all := strings.Join(sources, "\n")
	for _, m := range decl.FindAllStringSubmatch(all, -1) {
		uses := regexp.MustCompile(`\b`+m[1]+`\b`).FindAllStringIndex(all, -1)
		if len(uses) < 2 {
			t.Errorf("%s is declared but nothing produces it", m[1])
		}
	}
}
