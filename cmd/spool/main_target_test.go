package main

import (
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Each command line parsed through spoolTree's one-command tree does what
// the whole tree does: the same command selected (every command and
// subcommand, with global flags before and after it), the same error, the
// global flags copied back into CLI.
func TestSpoolTargetParsesAsTheWholeTree(t *testing.T) {
	t.Parallel()
	opts := []kong.Option{kong.Name("spool"), kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) { panic("exit") })}
	whole, err := kong.New(&CLI{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		for _, c := range n.Children {
			if c.Type != kong.CommandNode {
				continue
			}
			p := append(slices.Clip(path), c.Name)
			paths = append(paths, p)
			walk(c, p)
		}
	}
	walk(whole.Model.Node, nil)
	if len(paths) < 100 {
		t.Fatalf("%d commands", len(paths))
	}
	for _, path := range paths {
		between := []string{path[0]} // global flags between the command's words
		for _, w := range path[1:] {
			between = append(between, "-C", "d", w)
		}
		for _, args := range [][]string{
			append(append([]string{"--actor", "a", "-C", "d"}, path...), "--json"),
			append(append([]string{"--json"}, path...), "--offline", "--directory=d", "x"),
			append(between, "--actor", "a", "--directory", "d"),
		} {
			var cli CLI
			target, fill := spoolTree.Target(&cli, args)
			if path[0] == "completion" {
				if target != &cli {
					t.Errorf("%q: want the whole tree", args)
				}
				continue
			}
			if target == &cli {
				t.Fatalf("%q: the whole tree, not the command's", args)
			}
			p, err := kong.New(target, opts...)
			if err != nil {
				t.Fatalf("%q: %v", args, err)
			}
			kctx, err := p.Parse(args)
			var w CLI
			wp, _ := kong.New(&w, opts...)
			wctx, werr := wp.Parse(args)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
				t.Fatalf("%q: %v, the whole tree %v", args, err, werr)
			}
			if err != nil {
				continue
			}
			fill()
			passthrough := path[0] == "bd" || slices.Equal(path, []string{"job", "submit"}) // what follows is the command's argv
			if cli.Globals != w.Globals || cli.Dir != "d" && !passthrough {
				t.Errorf("%q: global flags %+v, the whole tree %+v", args, cli.Globals, w.Globals)
			}
			if kctx.Command() != wctx.Command() {
				t.Errorf("%q: command %q, the whole tree %q", args, kctx.Command(), wctx.Command())
			}
		}
	}
	// A group's other subcommands are cut too: kong reads no tags of theirs.
	for _, args := range [][]string{{"job", "claim"}, {"-C", "job", "task", "--json", "add", "t"}, {"job", "quota", "set"}} {
		var cli CLI
		target, _ := spoolTree.Target(&cli, args)
		typ := reflect.TypeOf(target).Elem()
		for _, w := range args {
			f, ok := typ.FieldByName(strings.ToUpper(w[:1]) + w[1:])
			if !ok || w == "job" && args[0] == "-C" {
				continue
			}
			typ = f.Type
			if n := commandFields(typ); n > 1 {
				t.Errorf("%q: %s keeps %d subcommands", args, w, n)
			}
		}
	}
	for _, args := range [][]string{nil, {"--json"}, {"nope"}, {"task", "--help"}, {"-h"}, {"completion", "bash"}, {"--", "ready"}, {"tsak", "add"}} {
		var cli CLI
		if target, _ := spoolTree.Target(&cli, args); target != &cli {
			t.Errorf("%q: want the whole tree", args)
		}
	}
	// A global flag's value is not the command.
	if f, ok := spoolTree.CommandField([]string{"-C", "ready", "--actor", "next", "task", "list"}); !ok || f.Name != "Task" {
		t.Errorf("-C ready --actor next task list: got %s", f.Name)
	}
}

// commandFields counts typ's subcommands.
func commandFields(typ reflect.Type) int {
	n := 0
	for i := range typ.NumField() {
		if _, ok := typ.Field(i).Tag.Lookup("cmd"); ok {
			n++
		}
	}
	return n
}
