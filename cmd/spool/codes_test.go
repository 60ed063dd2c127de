package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
)

// The error tables of docs/errors.md list every code spool can produce,
// with its exit status, and no code it cannot: codes are registered where
// they arise (fault.Register), so the registry is what spool can produce.
func TestREADMEListsEveryErrorCode(t *testing.T) {
	t.Parallel()
	documented := readmeCodes(t, filepath.Join("..", "..", "docs", "errors.md"))
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
		if strings.HasPrefix(line, "# ") {
			in = line == "# Exit codes and errors"
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
// code outside its declaration: a declared code that nothing produces would
// be documented for nothing. (Codes registered inline, with fault.Sentinel,
// are produced by the sentinel.) Uses are read from the syntax trees, so a
// code named only in a comment or a string does not count.
func TestEveryDeclaredCodeIsProduced(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	files := map[string]string{} // path relative to root → source
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
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
			rel, _ := filepath.Rel(root, path)
			files[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	declared, unused, err := unproducedCodes(module, files)
	if err != nil {
		t.Fatal(err)
	}
	if declared < 40 {
		t.Fatalf("found %d declared codes; the walk missed the sources", declared)
	}
	for _, c := range unused {
		t.Errorf("%s is declared but nothing produces it", c)
	}
}

// unproducedCodes parses Go files (path relative to the module's root →
// source) and returns how many codes are declared (a package-level
// variable whose value is fault.Register(…), or Register(…) in package
// fault) and those that no identifier uses outside their declaration: in
// their own package by name, elsewhere as pkg.Name through an import of
// their package.
func unproducedCodes(module string, files map[string]string) (int, []string, error) {
	type code struct{ dir, name string }
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	decls := map[code]*ast.ValueSpec{}
	for path, src := range files {
		f, err := parser.ParseFile(fset, path, src, 0) // resolved: a local of the same name is not the code
		if err != nil {
			return 0, nil, err
		}
		parsed[path] = f
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok || i >= len(vs.Names) {
						continue
					}
					switch fn := call.Fun.(type) {
					case *ast.SelectorExpr:
						if x, ok := fn.X.(*ast.Ident); !ok || x.Name != "fault" || fn.Sel.Name != "Register" {
							continue
						}
					case *ast.Ident:
						if f.Name.Name != "fault" || fn.Name != "Register" {
							continue
						}
					default:
						continue
					}
					decls[code{pathpkg.Dir(path), vs.Names[i].Name}] = vs
				}
			}
		}
	}
	used := map[code]bool{}
	for path, f := range parsed {
		dir := pathpkg.Dir(path)
		imports := map[string]string{} // name in this file → package dir
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			rel, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			name := pathpkg.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = rel
		}
		// Names that declare something else (fields, parameters, locals,
		// functions, types) are not uses, even when spelled like a code.
		declaring := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				for _, id := range n.Names {
					declaring[id] = true
				}
			case *ast.ValueSpec:
				for _, id := range n.Names {
					declaring[id] = true
				}
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					for _, e := range n.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							declaring[id] = true
						}
					}
				}
			case *ast.FuncDecl:
				declaring[n.Name] = true
			case *ast.TypeSpec:
				declaring[n.Name] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					if pkg, ok := imports[x.Name]; ok {
						used[code{pkg, n.Sel.Name}] = true
						return false
					}
				}
				ast.Inspect(n.X, func(m ast.Node) bool { // a field or method: only X can use a code
					if id, ok := m.(*ast.Ident); ok {
						if c := (code{dir, id.Name}); refersTo(id, decls[c]) && !declaring[id] {
							used[c] = true
						}
					}
					return true
				})
				return false
			case *ast.Ident:
				if c := (code{dir, n.Name}); refersTo(n, decls[c]) && !declaring[n] {
					used[c] = true
				}
			}
			return true
		})
	}
	var unused []string
	for c := range decls {
		if !used[c] {
			unused = append(unused, c.dir+"."+c.name)
		}
	}
	sort.Strings(unused)
	return len(decls), unused, nil
}

// refersTo reports whether id, spelled as the package-level variable that
// spec declares, is that variable: the parser resolves names declared in
// the same file (a parameter or local of the same name shadows it) and
// leaves names of other files unresolved.
func refersTo(id *ast.Ident, spec *ast.ValueSpec) bool {
	// ast.Object is deprecated for go/types, which would have to load the
	// module's dependencies; the parser's resolution is enough here.
	return spec != nil && (id.Obj == nil || id.Obj.Decl == spec)
}

// The check reads code, not text: a code named only in a comment, in a
// string or as another package's field is not produced; one used by name in
// its package, or through an import (renamed too), is.
func TestUnproducedCodesReadsSyntax(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"internal/fault/fault.go": `package fault
func Register(k int, name string) int { return 0 }
var (
	CodeShared = Register(1, "shared")  // used by a
	CodeIdle   = Register(1, "idle")    // used by nobody
)`,
		"internal/a/errors.go": `package a
import "github.com/x/m/internal/fault"
var (
	CodeUsed      = fault.Register(3, "used")
	CodeCommented = fault.Register(3, "commented")
	CodeQuoted    = fault.Register(3, "quoted")
	CodeField     = fault.Register(3, "field")
	CodeElsewhere = fault.Register(3, "elsewhere")
	CodeParam     = fault.Register(3, "param")
)
func P(CodeParam int) int { CodeLocal := CodeParam; return CodeLocal }
// CodeCommented is produced by Nothing(): CodeCommented, CodeCommented.
func Used() int { return CodeUsed + fault.CodeShared }
func Nothing() string { return "CodeQuoted" }
type T struct{ CodeField int }
func (t T) F() int { return t.CodeField }`,
		"internal/b/b.go": `package b
import errs "github.com/x/m/internal/a"
func B() int { return errs.CodeElsewhere }`,
	}
	n, unused, err := unproducedCodes("github.com/x/m", files)
	if err != nil {
		t.Fatal(err)
	}
	want := "internal/a.CodeCommented internal/a.CodeField internal/a.CodeParam internal/a.CodeQuoted internal/fault.CodeIdle"
	if n != 8 || strings.Join(unused, " ") != want {
		t.Fatalf("%d declared; unused %v, want %s", n, unused, want)
	}
}
