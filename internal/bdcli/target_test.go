package bdcli

import (
	"io"
	"slices"
	"testing"

	"github.com/alecthomas/kong"
)

// Each command parsed through bdTree().target's one-command tree sets what the
// whole tree sets: the global flags wherever they stand, the command.
func TestBDTargetParsesAsTheWholeTree(t *testing.T) {
	t.Parallel()
	for name := range bdTree().Commands() {
		if name == "help" {
			continue // the whole tree, below
		}
		args := []string{"--actor", "a", name, "--json", "--readonly"}
		var cli bdCLI
		target, fill := bdTree().Target(&cli, args)
		if _, ok := target.(*bdCLI); ok {
			t.Fatalf("%s: the whole tree, not the command's", name)
		}
		p, err := kong.New(target, kong.Name("bd"), kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) {}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kctx, err := p.Parse(args)
		var whole bdCLI
		wp, werr := kong.New(&whole, kong.Name("bd"), kong.Writers(io.Discard, io.Discard), kong.Exit(func(int) {}))
		if werr != nil {
			t.Fatal(werr)
		}
		if _, werr = wp.Parse(args); (err == nil) != (werr == nil) {
			t.Fatalf("%s: %v, the whole tree %v", name, err, werr)
		}
		if err != nil {
			continue // a command that needs arguments
		}
		fill()
		if cli.Actor != "a" || !cli.JSON || !cli.Readonly {
			t.Errorf("%s: global flags %+v", name, cli)
		}
		if got := kctx.Selected(); got == nil || got.Name != bdTree().Commands()[name].Tag.Get("name") && got.Name != name && !slices.Contains(got.Aliases, name) {
			t.Errorf("%s: selected %v", name, got)
		}
	}
	for _, args := range [][]string{nil, {"help"}, {"ready", "--help"}, {"nope"}, {"--json"}, {"--", "ready"}} {
		var cli bdCLI
		if target, _ := bdTree().Target(&cli, args); target != &cli {
			t.Errorf("%q: want the whole tree", args)
		}
	}
	// A global flag's value is not the command.
	var cli bdCLI
	if target, _ := bdTree().Target(&cli, []string{"--actor", "ready", "list"}); target == &cli {
		t.Errorf("--actor ready list: want list's tree")
	} else if f, _ := bdTree().CommandField([]string{"--actor", "ready", "list"}); f.Name != "List" {
		t.Errorf("--actor ready list: got %s", f.Name)
	}
}
