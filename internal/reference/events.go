package reference

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// eventType is one declared event type: a string constant of a domain's
// events.go and its line comment, which names the data's Go type.
type eventType struct {
	name, pkg, comment string
	data               string   // the data's Go type, when the comment names it
	fields             []string // the data's JSON fields, "?" after optional ones
}

var (
	typeName = regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)
	dataType = regexp.MustCompile(`^([A-Z][A-Za-z]*Data)\b[:;]?\s*`)
)

// Events is events.md: every event type the domains declare (the string
// constants of internal/*/events.go, as the catalogue test of docs/events.md
// finds them), with its data's fields where the comment names its Go type.
// internal is the repository's internal/ directory.
func Events(internal string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(internal, "*", "events.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no events.go under %s", internal)
	}
	sort.Strings(files)
	var types []eventType
	for _, path := range files {
		pkg := filepath.Base(filepath.Dir(path))
		structs, err := packageStructs(filepath.Dir(path))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					s, _ := strconv.Unquote(lit.Value)
					if !typeName.MatchString(s) {
						continue
					}
					t := eventType{name: s, pkg: pkg}
					if vs.Comment != nil {
						t.comment = strings.TrimSpace(vs.Comment.Text())
					}
					if m := dataType.FindStringSubmatch(t.comment); m != nil {
						if st, ok := structs[m[1]]; ok {
							t.data, t.fields = m[1], jsonFields(st, structs)
							t.comment = strings.TrimSpace(strings.TrimPrefix(t.comment, m[0]))
						}
					}
					t.comment = strings.TrimPrefix(t.comment, "{}: ")
					if t.comment == "{}" {
						t.comment = ""
					}
					types = append(types, t)
				}
			}
		}
	}
	var b bytes.Buffer
	header(&b, "Event types", "the event type constants of internal/*/events.go and their data structs")
	b.WriteString("Every line of the log is one event: an envelope (`v`, `id`, `writer`, `seq`, `prev`, `lc`, `at`, `actor`, `type`, `subject`, `idem`, `data`, `more`, `sig`) " +
		"whose `data` depends on its `type`. `spool log --json` prints them. A field marked `?` is left out when empty. " +
		"Types other than these (`spool append` writes any) are kept and shown, and skipped by the queues.\n\n")
	// A data type many event types share (the merge queue's EntryData) is
	// listed once, after its package's table.
	uses := map[string]int{}
	for _, t := range types {
		uses[t.pkg+"."+t.data]++
	}
	shared := func(t eventType) bool { return t.data != "" && uses[t.pkg+"."+t.data] >= 3 }
	for i, t := range types {
		if i == 0 || t.pkg != types[i-1].pkg {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "## %s\n\n| type | data | what it records |\n| --- | --- | --- |\n", t.pkg)
		}
		data := ""
		switch {
		case shared(t):
			data = "`" + t.data + "` (below)"
		case len(t.fields) > 0:
			data = "`" + strings.Join(t.fields, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", t.name, data, cell(t.comment))
		if i+1 == len(types) || types[i+1].pkg != t.pkg {
			listed := map[string]bool{}
			for _, u := range types {
				if u.pkg == t.pkg && shared(u) && !listed[u.data] {
					listed[u.data] = true
					fmt.Fprintf(&b, "\n`%s`, which each of those types fills as far as it concerns it: `%s`.\n", u.data, strings.Join(u.fields, "`, `"))
				}
			}
		}
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// packageStructs parses the non-test files of dir and returns its struct types.
func packageStructs(dir string) (map[string]*ast.StructType, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]*ast.StructType{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok {
					out[ts.Name.Name] = st
				}
			}
		}
	}
	return out, nil
}

// jsonFields lists a struct's JSON names, an embedded struct's of the same
// package inline, "?" after those tagged omitempty.
func jsonFields(st *ast.StructType, structs map[string]*ast.StructType) []string {
	var out []string
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			s, _ := strconv.Unquote(f.Tag.Value)
			tag = reflect.StructTag(s).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		if len(f.Names) == 0 { // embedded
			if id, ok := f.Type.(*ast.Ident); ok && name == "" {
				if inner, ok := structs[id.Name]; ok {
					out = append(out, jsonFields(inner, structs)...)
				}
				continue
			}
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			field := name
			if field == "" {
				field = n.Name
			}
			if strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") {
				field += "?"
			}
			out = append(out, field)
		}
	}
	return out
}
