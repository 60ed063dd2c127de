// Package reference writes docs/reference/ from the code: the command line
// from kong's model, the configuration keys from the config registry, the
// event types from the domains' events.go, and the error codes from the
// fault registry. cmd/spool's TestReferenceDocs regenerates the files into
// memory and fails when the checked-in ones differ (go generate ./cmd/spool
// rewrites them).
package reference

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/spoolhq/spool/internal/config"
	"github.com/spoolhq/spool/internal/fault"
)

// header starts every generated file.
func header(b *bytes.Buffer, title, source string) {
	fmt.Fprintf(b, "# %s\n\n", title)
	fmt.Fprintf(b, "<!-- Generated from %s by go generate ./cmd/spool; do not edit. -->\n\n", source)
}

// cell makes text fit in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// CLI is cli.md: every visible command with its arguments and flags, the
// global flags once, from the application kong built.
func CLI(app *kong.Application) []byte {
	var b bytes.Buffer
	header(&b, "Command line", "the kong model of cmd/spool (the CLI struct and each command's struct)")
	b.WriteString("Every command takes the global flags below. `spool --help` lists the commands, `spool COMMAND --help` one command's flags.\n\n")
	return commands(&b, app, "spool")
}

// BD is bd.md: spool's beads front end (spool bd, or spool run as bd or
// br), from the application kong built of its command tree.
func BD(app *kong.Application) []byte {
	var b bytes.Buffer
	header(&b, "The bd front end", "the kong model of cmd/spool's bd commands (bdCLI)")
	b.WriteString("`spool bd ARGS` runs beads' commands over spool's tracker, with bd 0.49's flags, JSON and exit status; " +
		"spool run as `bd` or `br` (a symlink) takes the same ARGS. [The beads guide](../beads.md) says what differs from beads. " +
		"`spool bd help` lists the commands, `spool bd COMMAND --help` one command's flags.\n\n")
	return commands(&b, app, "spool bd")
}

// commands writes the global flags, then a table of the commands and a
// section per command, each named prog and its path.
func commands(b *bytes.Buffer, app *kong.Application, prog string) []byte {
	b.WriteString("## Global flags\n\n")
	flagTable(b, visibleFlags(app.Node.Flags))
	var cmds []*kong.Node
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			if c.Hidden || c.Type != kong.CommandNode {
				continue
			}
			if len(c.Children) == 0 || c.DefaultCmd != nil {
				cmds = append(cmds, c)
			}
			walk(c)
		}
	}
	walk(app.Node)
	b.WriteString("## Commands\n\n")
	b.WriteString("| command | what it does |\n| --- | --- |\n")
	group := ""
	for _, c := range cmds {
		if g := groupTitle(c); g != group {
			group = g
			fmt.Fprintf(b, "| **%s** | |\n", strings.TrimSuffix(g, ":"))
		}
		fmt.Fprintf(b, "| [`%s %s`](#%s) | %s |\n", prog, c.Path(), anchor(prog+" "+c.Path()), cell(c.Help))
	}
	b.WriteString("\n")
	for _, c := range cmds {
		fmt.Fprintf(b, "## %s %s\n\n", prog, c.Path())
		fmt.Fprintf(b, "```\n%s %s\n```\n\n", prog, c.Summary())
		if c.Help != "" {
			b.WriteString(strings.TrimSpace(c.Help) + "\n\n")
		}
		if line, ok := strings.CutPrefix(c.Detail, "Example:\n  $ "); ok {
			fmt.Fprintf(b, "Example:\n\n```sh\n%s\n```\n\n", line)
		} else if c.Detail != "" {
			b.WriteString(strings.TrimSpace(c.Detail) + "\n\n")
		}
		if len(c.Positional) > 0 {
			b.WriteString("| argument | meaning |\n| --- | --- |\n")
			for _, p := range c.Positional {
				fmt.Fprintf(b, "| `%s` | %s |\n", p.Summary(), cell(p.Help))
			}
			b.WriteString("\n")
		}
		var own []*kong.Flag
		for n := c; n != nil && n != app.Node; n = n.Parent {
			own = append(visibleFlags(n.Flags), own...)
		}
		if len(own) > 0 {
			flagTable(b, own)
		}
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func visibleFlags(flags []*kong.Flag) []*kong.Flag {
	var out []*kong.Flag
	for _, f := range flags {
		if !f.Hidden {
			out = append(out, f)
		}
	}
	return out
}

func flagTable(b *bytes.Buffer, flags []*kong.Flag) {
	b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	for _, f := range flags {
		name := "--" + f.Name
		if !f.IsBool() {
			name += "=" + f.FormatPlaceHolder()
		}
		if f.Short != 0 {
			name = fmt.Sprintf("-%c, %s", f.Short, name)
		}
		def := ""
		if f.Default != "" && !f.IsBool() {
			def = "`" + f.Default + "`"
		}
		help := f.Help
		if len(f.Tag.Envs) > 0 {
			help += " Environment: `$" + strings.Join(f.Tag.Envs, "`, `$") + "`."
		}
		if len(f.EnumSlice()) > 0 && f.Enum != "" && !strings.Contains(help, f.EnumSlice()[0]) {
			help += " One of: " + strings.Join(f.EnumSlice(), ", ") + "."
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, def, cell(help))
	}
	b.WriteString("\n")
}

// groupTitle is the help group a command is listed under.
func groupTitle(n *kong.Node) string {
	if g := n.ClosestGroup(); g != nil {
		return g.Title
	}
	return ""
}

// anchor is the fragment GitHub gives a heading.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Config is config.md: every registered key with its kind, default, the
// values it takes and what it means.
func Config(keys []config.Key) []byte {
	var b bytes.Buffer
	header(&b, "Configuration keys", "the config registry (config.Register in internal/config and each capability's package)")
	b.WriteString("`.spool/config.json` holds flat dotted keys. `spool config set KEY VALUE` checks a value before it stores it, " +
		"and `spool config list` shows every key with its value. A key spool does not know stops every command but `config` and `doctor`; " +
		"keys of your own start with `x-`. Some values are also checked against other keys (such as `backoff.initial` ≤ `backoff.max`).\n\n")
	b.WriteString("| key | kind | default | accepted values | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, k := range keys {
		def := fmt.Sprintf("`%s`", display(k.Default))
		if k.Derived != nil {
			def += " (unset, it may follow other keys: see meaning)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Name, k.Kind, def, cell(accepted(k)), cell(k.Help))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func display(v any) string {
	switch x := config.Display(v).(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case []string:
		if len(x) == 0 {
			return "[]"
		}
		return `["` + strings.Join(x, `", "`) + `"]`
	default:
		return fmt.Sprint(x)
	}
}

// accepted says which values a key takes beyond its kind.
func accepted(k config.Key) string {
	var parts []string
	if len(k.Enum) > 0 {
		parts = append(parts, "one of "+strings.Join(k.Enum, ", "))
	}
	bound := func(v float64) string {
		if k.Kind == config.Duration {
			return time.Duration(v * float64(time.Second)).String()
		}
		return fmt.Sprint(v)
	}
	switch {
	case k.Min != nil && k.Max != nil:
		parts = append(parts, bound(*k.Min)+" to "+bound(*k.Max))
	case k.Min != nil:
		parts = append(parts, "at least "+bound(*k.Min))
	case k.Max != nil:
		parts = append(parts, "at most "+bound(*k.Max))
	}
	if k.Check != nil {
		parts = append(parts, "checked further (an invalid value is refused with invalid_config_value)")
	}
	if len(parts) == 0 {
		return "any " + string(k.Kind)
	}
	return strings.Join(parts, "; ")
}

// Errors is errors.md: every registered error code with its exit code.
func Errors(codes []fault.Code) []byte {
	var b bytes.Buffer
	header(&b, "Exit codes and error codes", "the fault registry (fault.Register where each code arises)")
	b.WriteString("The exit code says what kind of error it is; under `--json` the error is one object on stderr, " +
		"`{\"error\":{\"code\":…,\"message\":…}}`, with the code below and fields of its own.\n\n")
	b.WriteString("| exit | kind | meaning |\n| --- | --- | --- |\n")
	b.WriteString("| 0 | | ok |\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "| %d | %s | %s |\n", k.kind, k.name, k.meaning)
	}
	b.WriteString("\n| code | exit | kind |\n| --- | --- | --- |\n")
	sorted := append([]fault.Code(nil), codes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, c := range sorted {
		fmt.Fprintf(&b, "| `%s` | %d | %s |\n", c.Name, c.Kind, kindName(c.Kind))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

var kinds = []struct {
	kind    fault.Kind
	name    string
	meaning string
}{
	{fault.Unexpected, "unexpected", "a bug or an unforeseen failure (please report it)"},
	{fault.Usage, "usage", "bad flags, arguments, config keys or values"},
	{fault.Rejected, "rejected", "refused by a rule: not found, not allowed now, a conflict, not yours, over a quota, verify failed"},
	{fault.Environment, "environment", "the repository, storage, the lock, git or another tool"},
}

func kindName(k fault.Kind) string {
	for _, x := range kinds {
		if x.kind == k {
			return x.name
		}
	}
	return fmt.Sprint(int(k))
}
