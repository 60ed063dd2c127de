// Package kongtree parses a kong command line through a tree of the one
// command it runs: spool's command tree and bd's (internal/bdcli).
package kongtree

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
)

// Tree is a kong command tree's top-level fields, for parsing one
// command line through a tree of the command it runs alone. kong reads the
// tags of every field of the tree it is given at each run: about 10,000
// allocations and 2 ms for bd's tree, more for spool's 110 commands, in a
// process that lives for milliseconds. Target makes, at run time, a struct
// of the tree's global flags and the one command args name, tags and all;
// help, completion, an unknown command and no command get the whole tree
// (they print or match against every command).
type Tree struct {
	global     []reflect.StructField          // the global flags (an embedded struct of them included)
	commands   map[string]reflect.StructField // the commands by name and alias
	valueFlags map[string]bool                // the global flags that take a value: --name, -s
	whole      map[string]bool                // commands that need the whole tree (completion)
}

// New reads T's fields; whole names the commands that are
// parsed with T itself.
func New[T any](whole ...string) *Tree {
	t := &Tree{commands: map[string]reflect.StructField{}, valueFlags: map[string]bool{}, whole: map[string]bool{}}
	for _, w := range whole {
		t.whole[w] = true
	}
	var flag func(f reflect.StructField)
	flag = func(f reflect.StructField) {
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct: // kong's embedded flags
			for i := range f.Type.NumField() {
				flag(f.Type.Field(i))
			}
		case f.Type.Kind() != reflect.Bool:
			t.valueFlags["--"+cmp.Or(f.Tag.Get("name"), strings.ToLower(f.Name))] = true
			if s := f.Tag.Get("short"); s != "" {
				t.valueFlags["-"+s] = true
			}
		}
	}
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); !isCmd {
			flag(f)
			t.global = append(t.global, f)
			continue
		}
		for _, n := range append([]string{cmp.Or(f.Tag.Get("name"), strings.ToLower(f.Name))}, strings.Split(f.Tag.Get("aliases"), ",")...) {
			if n != "" {
				t.commands[n] = f
			}
		}
	}
	return t
}

// Target is what kong parses args into: cli itself, or a struct of the
// global flags and the command args name; fill then copies the global
// flags into cli (the command's own values stay in the target, where its
// Run is called).
func (t *Tree) Target(cli any, args []string) (target any, fill func()) {
	cmd, ok := t.CommandField(args)
	if !ok {
		return cli, func() {}
	}
	v := reflect.New(reflect.StructOf(append(slices.Clip(t.global), cmd)))
	return v.Interface(), func() {
		into := reflect.ValueOf(cli).Elem()
		for _, f := range t.global {
			into.FieldByIndex(f.Index).Set(v.Elem().FieldByName(f.Name))
		}
	}
}

// CommandField is the field of the command args name, if that is clear
// without kong: the first argument that is no flag nor a global flag's
// value, and not help nor a command that needs the whole tree.
func (t *Tree) CommandField(args []string) (reflect.StructField, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-h" || a == "--help" || a == "help":
			return reflect.StructField{}, false
		case strings.HasPrefix(a, "-"):
			if t.valueFlags[a] {
				i++ // its value
			}
		default:
			f, ok := t.commands[a]
			if ok && (t.whole[a] || slices.ContainsFunc(args[i+1:], func(a string) bool { return a == "-h" || a == "--help" })) {
				ok = false // help for a command: kong's, with the whole tree
			}
			return f, ok
		}
	}
	return reflect.StructField{}, false
}

// Commands are the tree's commands by name and alias.
func (t *Tree) Commands() map[string]reflect.StructField { return t.commands }
