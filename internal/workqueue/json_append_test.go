package workqueue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/jsonout"
	"github.com/spoolhq/spool/internal/jsonout/jsontest"
)

// appenders are the types that write themselves (not those that decline).
func appenders() []jsonout.Appender {
	return []jsonout.Appender{TaskJSON{}, DepJSON{}, CommentJSON{}, ListItemJSON{}, EntryJSON{}, BlockedJSON{}}
}

// Each type writes what encoding/json writes, for random values with
// every field filled through reflection (a field added to a type and not
// to its appender shows: the full values set them all), at any level and
// either escapeHTML; and declines where encoding/json fails.
func TestAppendersAsTheLibrary(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for _, a := range appenders() {
		typ := reflect.TypeOf(a)
		t.Run(typ.Name(), func(t *testing.T) {
			compared, full := 0, 0
			for i := range 3000 {
				p := reflect.New(typ)
				jsontest.Fill(r, p.Interface(), i%3 == 0)
				v := p.Elem().Interface().(jsonout.Appender)
				for _, escape := range []bool{true, false} {
					level := r.IntN(4)
					if !jsontest.Same(t, v, level, escape, func(dst []byte) ([]byte, bool) {
						return v.AppendJSON(dst, jsonout.Format{Level: level, EscapeHTML: escape})
					}) {
						continue
					}
					compared++
					if i%3 == 0 {
						full++
					}
				}
			}
			if full < 100 || compared < 1000 {
				t.Errorf("%d values compared, %d of them full: the times refused too many", compared, full)
			}
		})
	}
}

// writeList is what WriteList writes for v, and what a json.Encoder
// writes for the whole of it.
func writeList[T any](t *testing.T, v []T, escape bool) (got, want string) {
	t.Helper()
	var g, w bytes.Buffer
	enc := json.NewEncoder(&w)
	enc.SetEscapeHTML(escape)
	enc.SetIndent("", "  ")
	wantErr := enc.Encode(v)
	err := jsonout.WriteList(&g, len(v), func(i int) any { return v[i] }, escape)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("WriteList: %v, encoding/json: %v", err, wantErr)
	}
	if err != nil {
		return "", ""
	}
	return g.String(), w.String()
}

func randList[T any](r *rand.Rand) []T {
	v := make([]T, 1+r.IntN(3))
	for i := range v {
		jsontest.Fill(r, &v[i], false)
	}
	return v
}

// Lists through WriteList, as tasks.json, history.json and writeJSON
// write them; DetailJSON and RelatedJSON decline (else they would inherit
// TaskJSON's AppendJSON) and are written by encoding/json.
func TestWriteListTypes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 10))
	for range 300 {
		for _, escape := range []bool{true, false} {
			for _, f := range []func() (string, string){
				func() (string, string) { return writeList(t, randList[TaskJSON](r), escape) },
				func() (string, string) { return writeList(t, randList[ListItemJSON](r), escape) },
				func() (string, string) { return writeList(t, randList[EntryJSON](r), escape) },
				func() (string, string) { return writeList(t, randList[CommentJSON](r), escape) },
				func() (string, string) { return writeList(t, randList[DetailJSON](r), escape) },
				func() (string, string) { return writeList(t, randList[RelatedJSON](r), escape) },
			} {
				if got, want := f(); got != want {
					t.Fatalf("escapeHTML %v: got\n%s\nwant\n%s", escape, got, want)
				}
			}
		}
	}
}

func FuzzAppendTask(f *testing.F) {
	f.Add("sp-1", "<b>title</b> & more", "line\nline\u2028\xff", int64(2), int64(1767261600), int64(123456789), int64(3600))
	f.Add("", "", "", int64(-1), int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, id, title, text string, n, sec, nsec, zone int64) {
		at := time.Unix(sec, nsec).In(time.FixedZone("z", int(zone%(48*3600))))
		closed := at.Add(time.Duration(n))
		task := TaskJSON{ID: id, Title: title, Description: text, Notes: title + text, Status: id, Priority: int(n),
			IssueType: text, Assignee: title, Owner: id, CreatedAt: at, CreatedBy: text, UpdatedAt: closed,
			CloseReason: title, ExternalRef: text, Labels: strings.Split(text, ",")}
		if n%2 == 0 {
			task.ClosedAt = &closed
		}
		for i := range n % 4 {
			task.Dependencies = append(task.Dependencies, DepJSON{IssueID: id, DependsOnID: title, Type: text, CreatedAt: at, CreatedBy: title})
			task.Comments = append(task.Comments, CommentJSON{ID: n + i, IssueID: id, Author: title, Text: text, CreatedAt: closed})
		}
		item := ListItemJSON{TaskJSON: task, DependencyCount: int(sec), DependentCount: int(nsec)}
		entry := EntryJSON{ID: id, Status: title, Attempts: int(n), Failures: int(sec), LastAttempt: task.ClosedAt, LastEndedAt: task.ClosedAt,
			LastError: text, Worker: title, LeaseUntil: &at, BlockReason: text, PendingSync: task.Labels, SyncFailed: []string{title}, PendingHooks: task.Labels}
		for _, v := range []jsonout.Appender{task, item, entry} {
			for _, escape := range []bool{true, false} {
				jsontest.Same(t, v, 1, escape, func(dst []byte) ([]byte, bool) {
					return v.AppendJSON(dst, jsonout.Format{Level: 1, EscapeHTML: escape})
				})
			}
		}
	})
}

// A struct embedding one of the appenders inherits its AppendJSON, which
// would write it without its own fields: every such struct in the module
// declares its own (if only to decline), and none is anonymous (which
// cannot).
func TestEmbeddersDeclareAppendJSON(t *testing.T) {
	t.Parallel()
	const wq = "github.com/spoolhq/spool/internal/workqueue"
	names := map[string]bool{}
	for _, a := range appenders() {
		names[reflect.TypeOf(a).Name()] = true
	}
	declared := map[string]bool{} // dir + " " + type name
	type embedder struct{ dir, name, pos string }
	var found []embedder
	fset := token.NewFileSet()
	root := filepath.Join("..", "..")
	here := filepath.Join(root, "internal", "workqueue")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		inWQ := filepath.Clean(dir) == here
		wqName := "" // what this file calls the workqueue package
		for _, imp := range file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == wq {
				wqName = "workqueue"
				if imp.Name != nil {
					wqName = imp.Name.Name
				}
			}
		}
		named := map[*ast.StructType]string{}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					named[st] = n.Name.Name
				}
			case *ast.FuncDecl:
				if n.Name.Name == "AppendJSON" && n.Recv != nil {
					recv := n.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						declared[dir+" "+id.Name] = true
					}
				}
			case *ast.StructType:
				for _, field := range n.Fields.List {
					if len(field.Names) > 0 {
						continue
					}
					typ := field.Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					embeds := false
					switch typ := typ.(type) {
					case *ast.Ident:
						embeds = inWQ && names[typ.Name]
					case *ast.SelectorExpr:
						x, ok := typ.X.(*ast.Ident)
						embeds = ok && wqName != "" && x.Name == wqName && names[typ.Sel.Name]
					}
					if embeds {
						found = append(found, embedder{dir, named[n], fset.Position(field.Pos()).String()})
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range found {
		switch {
		case e.name == "":
			t.Errorf("%s: an anonymous struct embeds an appender and would be written by its AppendJSON; name the type and declare AppendJSON", e.pos)
		case !declared[e.dir+" "+e.name]:
			t.Errorf("%s: %s embeds an appender but declares no AppendJSON of its own (return dst, false to have encoding/json write it)", e.pos, e.name)
		}
		seen = append(seen, e.name)
	}
	if got := fmt.Sprint(seen); !strings.Contains(got, "ListItemJSON") || !strings.Contains(got, "Claimed") {
		t.Errorf("found the embedders %s, want ListItemJSON and service's Claimed among them", got)
	}
}

// tasks.json reuses one record's lists for the next: a task with fewer
// dependencies and comments than the one before must not show the
// other's. Each record must be what Record gives, encoded by the library.
func TestTasksJSONRecordsShareNothing(t *testing.T) {
	t.Parallel()
	s := NewState()
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	apply := func(typ, id string, data any) {
		at = at.Add(time.Minute)
		e, err := eventlog.Draft{Type: typ, Subject: id, Data: data}.Event("ada@example.com", at)
		if err != nil {
			t.Fatal(err)
		}
		s.Apply(e)
	}
	apply(TypeCreated, "sp-a", CreatedData{Title: "first", IssueType: "task", Labels: []string{"x", "y"}})
	apply(TypeCreated, "sp-b", CreatedData{Title: "second", IssueType: "task", Deps: []string{"sp-a"}, Parent: "sp-a"})
	apply(TypeCommented, "sp-b", CommentData{Text: "one"})
	apply(TypeCommented, "sp-b", CommentData{Text: "two"})
	apply(TypeCreated, "sp-c", CreatedData{Title: "third", IssueType: "bug"})
	apply(TypeCreated, "sp-d", CreatedData{Title: "fourth", IssueType: "bug", Deps: []string{"sp-c"}})
	var got bytes.Buffer
	err := NewTasksProjection(s).WriteFiles(func(_ string, _ bool, write func(io.Writer) error) error { return write(&got) })
	if err != nil {
		t.Fatal(err)
	}
	var recs []TaskJSON
	for _, id := range s.SortedIDs() {
		recs = append(recs, s.trk.m[id].Record())
	}
	want, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want)+"\n" {
		t.Fatalf("tasks.json:\n%s\nwant\n%s", got.String(), want)
	}
}
