package mergequeue

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The domain is pure (docs/internals.md): it reaches no edge, however
// indirectly, and its own files touch no process, file or network. Read
// from the sources (every non-test file, whatever its build tags), the
// module's packages followed transitively, as `go list -deps` would.
func TestDomainImportsNoEdge(t *testing.T) {
	edges := []string{"internal/git", "internal/beads", "internal/proc"}
	root, module := moduleRoot(t)
	own := packageImports(t, ".")
	for _, p := range own {
		if slices.Contains([]string{"os", "os/exec", "net", "net/http", "syscall"}, p) {
			t.Errorf("the domain imports %s", p)
		}
	}
	// breadth first over the module's packages; via records the path to each
	via := map[string]string{".": ""}
	queue := []string{"."}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		imports := own
		if dir != "." {
			imports = packageImports(t, filepath.Join(root, filepath.FromSlash(dir)))
		}
		for _, p := range imports {
			rel, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			if _, seen := via[rel]; seen {
				continue
			}
			via[rel] = dir
			if slices.Contains(edges, rel) {
				chain := rel
				for d := dir; d != "."; d = via[d] {
					chain = d + " → " + chain
				}
				t.Errorf("internal/mergequeue reaches the edge %s: mergequeue → %s", rel, chain)
				continue
			}
			queue = append(queue, rel)
		}
	}
	if len(via) < 4 {
		t.Fatalf("followed only %v: the walk is broken", via)
	}
}

// moduleRoot finds go.mod above the working directory.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			return dir, strings.TrimSpace(strings.TrimPrefix(first, "module"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}

// packageImports lists the imports of dir's non-test Go files.
func packageImports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
