package proc

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/internals.md: child processes start through this package, or, for
// short git and jj calls, through internal/git. No other package of spool
// imports os/exec (cmd/spoolbench, the benchmark driver, runs spool itself
// as a user would; internal/beads only looks bd up on PATH).
func TestOnlyTheEdgesImportExec(t *testing.T) {
	allowed := []string{"internal/proc/", "internal/git/", "internal/beads/", "cmd/spoolbench/"}
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".wt" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, im := range f.Imports {
			if im.Path.Value != `"os/exec"` {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || strings.HasPrefix(rel, a)
			}
			if !ok {
				t.Errorf("%s imports os/exec: start processes through internal/proc (or internal/git for git)", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("read only %d files: the walk is broken", n)
	}
}
