package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README's event catalogue lists every event type a domain declares
// (the string constants of internal/*/events.go), and none that is not.
func TestREADMEListsEveryEventType(t *testing.T) {
	t.Parallel()
	declared := map[string]string{}
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "*", "events.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events.go files: %v", err)
	}
	typeName := regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for _, v := range spec.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); typeName.MatchString(s) {
						declared[s] = path
					}
				}
			}
			return true
		})
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	if !strings.HasPrefix(section, "# Event catalogue") {
		t.Fatal("docs/events.md is not the event catalogue")
	}
	documented := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| ((?:`[a-z]+\\.[a-z_]+`(?:, )?)+) \\|")
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, name := range strings.Split(m[1], ", ") {
			documented[strings.Trim(name, "`")] = true
		}
	}
	for name, path := range declared {
		if !documented[name] {
			t.Errorf("%s (declared in %s) has no row in the README's event catalogue", name, path)
		}
	}
	for name := range documented {
		if _, ok := declared[name]; !ok {
			t.Errorf("the README's event catalogue lists %s, which no events.go declares", name)
		}
	}
	if len(declared) < 30 {
		t.Errorf("found only %d event types; is the parse right?", len(declared))
	}
}
