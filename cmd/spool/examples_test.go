package main

import (
	"io"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Every command a user sees has an example in its help, and the example is
// a command line spool parses (it is not run).
func TestEveryCommandHasAnExampleThatParses(t *testing.T) {
	t.Parallel()
	var cli CLI
	app, err := kong.New(&cli, kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if n.Hidden {
			return
		}
		if n.Type == kong.CommandNode && len(n.Children) == 0 {
			line, ok := strings.CutPrefix(n.Detail, "Example:\n  $ ")
			if !ok {
				t.Errorf("spool %s has no example in its help", n.Path())
				return
			}
			args := exampleArgs(line)
			if len(args) < 2 || args[0] != "spool" {
				t.Errorf("spool %s: the example %q is not a spool command", n.Path(), line)
				return
			}
			var fresh CLI
			p, _ := kong.New(&fresh, kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) {}))
			ctx, err := p.Parse(args[1:])
			if err != nil {
				t.Errorf("spool %s: the example %q does not parse: %v", n.Path(), line, err)
			} else if got := ctx.Selected().Path(); got != n.Path() {
				t.Errorf("spool %s: the example %q runs spool %s", n.Path(), line, got)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(app.Model.Node)
}

// exampleArgs splits an example as a shell would, enough for the examples:
// single and double quotes, a trailing # comment, the first command of an
// && list, and spool inside <( … ).
func exampleArgs(line string) []string {
	line, _, _ = strings.Cut(line, " && ")
	if i := strings.Index(line, "<("); i >= 0 {
		line = strings.TrimSuffix(line[i+2:], ")")
	}
	var args []string
	var cur strings.Builder
	in, quote, started := false, byte(0), false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, started = c, true
		case c == '#' && !in:
			i = len(line)
		case c == ' ':
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
			in = false
		default:
			cur.WriteByte(c)
			started, in = true, true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}
