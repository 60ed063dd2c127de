// Package kongtree parses a kong command line through a tree of the one
// command it runs: spool's command tree and bd's (internal/bdcli).
package kongtree

import (
	"cmp"
	"maps"
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
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); !isCmd {
			t.flag(f)
			t.global = append(t.global, f)
			continue
		}
		t.addCommand(f)
	}
	return t
}

// flag notes f, a flag, in valueFlags when it takes a value.
func (t *Tree) flag(f reflect.StructField) {
	switch {
	case f.Anonymous && f.Type.Kind() == reflect.Struct: // kong's embedded flags
		for i := range f.Type.NumField() {
			t.flag(f.Type.Field(i))
		}
	case f.Type.Kind() != reflect.Bool:
		t.valueFlags["--"+cmp.Or(f.Tag.Get("name"), strings.ToLower(f.Name))] = true
		if s := f.Tag.Get("short"); s != "" {
			t.valueFlags["-"+s] = true
		}
	}
}

// addCommand notes f, a command, under its name and aliases.
func (t *Tree) addCommand(f reflect.StructField) {
	for _, n := range append([]string{cmp.Or(f.Tag.Get("name"), strings.ToLower(f.Name))}, strings.Split(f.Tag.Get("aliases"), ",")...) {
		if n != "" {
			t.commands[n] = f
		}
	}
}

// Target is what kong parses args into: cli itself, or a struct of the
// global flags and the command args name; fill then copies the global
// flags into cli (the command's own values stay in the target, where its
// Run is called).
func (t *Tree) Target(cli any, args []string) (target any, fill func()) {
	cmd, i, ok := t.commandAt(args)
	if !ok {
		return cli, func() {}
	}
	cmd = narrow(cmd, args[i+1:], t.valueFlags)
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
	f, _, ok := t.commandAt(args)
	return f, ok
}

// commandAt is CommandField and where in args the command is named.
func (t *Tree) commandAt(args []string) (reflect.StructField, int, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-h" || a == "--help" || a == "help":
			return reflect.StructField{}, 0, false
		case strings.HasPrefix(a, "-"):
			if t.valueFlags[a] {
				i++ // its value
			}
		default:
			f, ok := t.commands[a]
			if ok && (t.whole[a] || slices.ContainsFunc(args[i+1:], func(a string) bool { return a == "-h" || a == "--help" })) {
				ok = false // help for a command: kong's, with the whole tree
			}
			return f, i, ok
		}
	}
	return reflect.StructField{}, 0, false
}

// narrow cuts a command's subcommands down to the one rest names, and
// that one's in turn, as Target cuts the tree's commands: a group such as
// spool job has 18, whose tags kong read at every run (0.7 ms). A command
// stays whole unless it is a plain group: no methods (kong's hooks would be
// lost with its type), no embedded field, no positional argument, and
// rest's first word that is no flag nor a flag's value (valueFlags, this
// command's own added) names one of its subcommands.
func narrow(f reflect.StructField, rest []string, valueFlags map[string]bool) reflect.StructField {
	typ := f.Type
	if typ.Kind() != reflect.Struct || reflect.PointerTo(typ).NumMethod() > 0 {
		return f
	}
	sub := &Tree{commands: map[string]reflect.StructField{}, valueFlags: maps.Clone(valueFlags)}
	for i := range typ.NumField() {
		g := typ.Field(i)
		_, isArg := g.Tag.Lookup("arg")
		if g.Anonymous || isArg || !g.IsExported() {
			return f
		}
		if _, isCmd := g.Tag.Lookup("cmd"); !isCmd {
			sub.flag(g)
			sub.global = append(sub.global, g)
			continue
		}
		sub.addCommand(g)
	}
	if len(sub.commands) == 0 {
		return f
	}
	g, i, ok := sub.commandAt(rest)
	if !ok {
		return f
	}
	g = narrow(g, rest[i+1:], sub.valueFlags)
	f.Type = reflect.StructOf(append(sub.global, g))
	return f
}

// Commands are the tree's commands by name and alias.
func (t *Tree) Commands() map[string]reflect.StructField { return t.commands }
