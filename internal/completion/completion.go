// Package completion generates static shell completion scripts from a kong
// application model.
//
// Every shell uses the same strategy: the words typed so far (ignoring
// anything starting with "-") are matched against the known command paths,
// the deepest match wins, and that path's subcommands, flags and enum values
// are offered. Words that do not extend a known path (flag values, positional
// arguments) are skipped, so no per-flag arity knowledge is needed.
package completion

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/alecthomas/kong"
)

// Write writes a completion script for shell ("bash", "zsh" or "fish") for
// the kong application app.
func Write(w io.Writer, app *kong.Application, shell string) error {
	var gen func(io.Writer, string, []command) error
	switch shell {
	case "bash":
		gen = writeBash
	case "zsh":
		gen = writeZsh
	case "fish":
		gen = writeFish
	default:
		return fmt.Errorf("unsupported shell %q: must be one of bash, zsh, fish", shell)
	}
	if app == nil || app.Node == nil {
		return fmt.Errorf("completion: nil application")
	}
	cmds, err := collect(app.Node)
	if err != nil {
		return err
	}
	return gen(w, app.Name, cmds)
}

// command is one completable command path, e.g. "spool task add".
type command struct {
	path  string
	subs  []sub
	flags []flag
	// args names what its positional arguments are (a `complete:"task"`
	// tag): the script asks the program for them (see Values).
	args string
}

// ValuesCommand is the hidden command the scripts run to list the values
// of a kind: "spool __complete task" prints task ids, one a line.
const ValuesCommand = "__complete"

type sub struct {
	name, help string
}

type flag struct {
	names  []string // "--long", aliases, "--no-long", "-s"
	long   string   // primary long name, "--long"
	short  string   // "-s" or ""
	help   string
	value  bool     // takes a value (not bool/counter)
	enum   []string // allowed values, if any
	values string   // a kind of value the program lists (complete:"task")
}

// safeWord is what may appear unquoted-ish in generated scripts. Names come
// from the model, but rejecting anything else means no shell quoting rules
// (compgen -W re-expands its argument, zsh treats a leading "=" specially,
// ...) ever need to be reasoned about.
var safeWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.:+/@%,-]+$`) })

func check(kind, s string) error {
	if !safeWord().MatchString(s) {
		return fmt.Errorf("completion: %s %q contains characters unsafe for shell scripts", kind, s)
	}
	return nil
}

// collect walks the model depth-first in model order, so output is
// deterministic.
func collect(root *kong.Node) ([]command, error) {
	if err := check("application name", root.Name); err != nil {
		return nil, err
	}
	var out []command
	var walk func(n *kong.Node, path string) error
	walk = func(n *kong.Node, path string) error {
		c := command{path: path}
		var children []*kong.Node
		for _, ch := range n.Children {
			// Branching positional arguments (ArgumentNode) accept arbitrary
			// words, which the static path matching cannot follow.
			if ch.Hidden || ch.Type != kong.CommandNode {
				continue
			}
			if err := check("command", ch.Name); err != nil {
				return err
			}
			c.subs = append(c.subs, sub{name: ch.Name, help: ch.Help})
			children = append(children, ch)
		}
		flags, err := inheritedFlags(n)
		if err != nil {
			return err
		}
		c.flags = flags
		for _, a := range n.Positional {
			if kind := a.Tag.Get("complete"); kind != "" {
				if err := check("completion kind", kind); err != nil {
					return err
				}
				c.args = kind
				break
			}
		}
		out = append(out, c)
		for _, ch := range children {
			if err := walk(ch, path+" "+ch.Name); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, root.Name); err != nil {
		return nil, err
	}
	return out, nil
}

// inheritedFlags returns the visible flags of n and its ancestors, outermost
// first. kong's Node.AllFlags is not used because it mutates Flag.Active.
func inheritedFlags(n *kong.Node) ([]flag, error) {
	var chain []*kong.Node
	for p := n; p != nil; p = p.Parent {
		chain = append([]*kong.Node{p}, chain...)
	}
	var out []flag
	for _, node := range chain {
		for _, f := range node.Flags {
			if f.Hidden {
				continue
			}
			fl := flag{
				long:  "--" + f.Name,
				help:  f.Help,
				value: !f.IsBool() && !f.IsCounter(),
			}
			fl.names = append(fl.names, fl.long)
			for _, a := range f.Aliases {
				fl.names = append(fl.names, "--"+a)
			}
			switch neg := f.Tag.Negatable; neg {
			case "":
			case "_": // kong's marker for the default "--no-<name>"
				fl.names = append(fl.names, "--no-"+f.Name)
			default:
				fl.names = append(fl.names, "--"+neg)
			}
			if f.Short != 0 {
				fl.short = "-" + string(f.Short)
				fl.names = append(fl.names, fl.short)
			}
			fl.values = f.Tag.Get("complete")
			if f.Enum != "" {
				for _, v := range f.EnumSlice() {
					if v != "" {
						fl.enum = append(fl.enum, v)
					}
				}
			}
			for _, s := range append(append(fl.names, fl.enum...), fl.values) {
				if s == "" {
					continue
				}
				if err := check("flag or enum value", s); err != nil {
					return nil, err
				}
			}
			out = append(out, fl)
		}
	}
	return out, nil
}

// funcName turns the program name into a valid shell function name.
func funcName(name string) string {
	return "_" + strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name)
}

func subNames(c command) []string {
	var out []string
	for _, s := range c.subs {
		out = append(out, s.name)
	}
	return out
}

func flagNames(c command) []string {
	var out []string
	for _, f := range c.flags {
		out = append(out, f.names...)
	}
	return out
}

// pathPattern is a case pattern matching every non-root command path; the
// bash and zsh scripts use it to decide whether a word extends the path.
// It is empty when the application has no subcommands.
func pathPattern(cmds []command) string {
	var pats []string
	for _, c := range cmds[1:] {
		pats = append(pats, `"`+c.path+`"`)
	}
	return strings.Join(pats, "|")
}

// enumCases returns, per "path flag" key, the enum values to offer.
func enumCases(cmds []command) (keys []string, vals [][]string) {
	return flagCases(cmds, func(f flag) []string { return f.enum })
}

// valueCases returns, per "path flag" key, the kind of value the program lists.
func valueCases(cmds []command) (keys []string, kinds []string) {
	keys, vals := flagCases(cmds, func(f flag) []string {
		if f.values == "" {
			return nil
		}
		return []string{f.values}
	})
	for _, v := range vals {
		kinds = append(kinds, v[0])
	}
	return keys, kinds
}

func flagCases(cmds []command, of func(flag) []string) (keys []string, vals [][]string) {
	for _, c := range cmds {
		for _, f := range c.flags {
			v := of(f)
			if len(v) == 0 {
				continue
			}
			var ks []string
			for _, n := range f.names {
				ks = append(ks, `"`+c.path+" "+n+`"`)
			}
			keys = append(keys, strings.Join(ks, "|"))
			vals = append(vals, v)
		}
	}
	return keys, vals
}

func writeBash(w io.Writer, name string, cmds []command) error {
	fn := funcName(name)
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s. Generated; do not edit.\n\n", name)
	fmt.Fprintf(&b, "%s() {\n", fn)
	b.WriteString(`    local cur prev flag cmdpath w i
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev=""
    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"
`)
	fmt.Fprintf(&b, "    cmdpath=%q\n", name)
	b.WriteString(`    for (( i = 1; i < COMP_CWORD; i++ )); do
        w="${COMP_WORDS[i]}"
        [[ $w == -* ]] && continue
        case "$cmdpath $w" in
`)
	if p := pathPattern(cmds); p != "" {
		fmt.Fprintf(&b, "            %s) cmdpath=\"$cmdpath $w\" ;;\n", p)
	}
	// COMP_WORDBREAKS usually contains "=", so "--flag=val" arrives as
	// "--flag" "=" "val".
	b.WriteString(`        esac
    done
    flag="$prev"
    if [[ $cur == "=" ]]; then
        cur=""
    elif [[ $prev == "=" ]] && (( COMP_CWORD > 1 )); then
        flag="${COMP_WORDS[COMP_CWORD-2]}"
    fi
    case "$cmdpath $flag" in
`)
	keys, vals := enumCases(cmds)
	for i := range keys {
		fmt.Fprintf(&b, "        %s)\n            COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", keys[i], strings.Join(vals[i], " "))
	}
	vkeys, kinds := valueCases(cmds)
	for i := range vkeys {
		fmt.Fprintf(&b, "        %s)\n            COMPREPLY=($(compgen -W \"$(%s %s %s 2>/dev/null)\" -- \"$cur\")); return ;;\n", vkeys[i], name, ValuesCommand, kinds[i])
	}
	b.WriteString(`    esac
    local subs="" flags="" args=""
    case "$cmdpath" in
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "        %q) subs=%q; flags=%q; args=%q ;;\n", c.path, strings.Join(subNames(c), " "), strings.Join(flagNames(c), " "), c.args)
	}
	fmt.Fprintf(&b, `    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    elif [[ -n $args ]]; then
        COMPREPLY=($(compgen -W "$(%s %s "$args" 2>/dev/null)" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    fi
}
`, name, ValuesCommand)
	// -o default: fall back to file names when nothing matched, e.g. for
	// positional arguments of leaf commands.
	fmt.Fprintf(&b, "\ncomplete -o default -F %s %s\n", fn, name)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZsh(w io.Writer, name string, cmds []command) error {
	fn := funcName(name)
	var b strings.Builder
	// The compdef line lets the file work both from $fpath (autoload) and
	// when sourced directly.
	fmt.Fprintf(&b, "#compdef %s\ncompdef %s %s\n\n# zsh completion for %s. Generated; do not edit.\n\n", name, fn, name, name)
	fmt.Fprintf(&b, "%s() {\n", fn)
	// Note: "path" is tied to $PATH in zsh, hence "cmdpath".
	b.WriteString(`    local cur prev flag cmdpath w i
    local -a subs flags vals
    cur="${words[CURRENT]}"
    prev="${words[CURRENT-1]}"
`)
	fmt.Fprintf(&b, "    cmdpath=%q\n", name)
	b.WriteString(`    for (( i = 2; i < CURRENT; i++ )); do
        w="${words[i]}"
        [[ $w == -* ]] && continue
        case "$cmdpath $w" in
`)
	if p := pathPattern(cmds); p != "" {
		fmt.Fprintf(&b, "            (%s) cmdpath=\"$cmdpath $w\" ;;\n", p)
	}
	b.WriteString(`        esac
    done
    flag="$prev"
    if [[ $cur == --*=* ]]; then
        flag="${cur%%=*}"
        compset -P '*='
    fi
    case "$cmdpath $flag" in
`)
	keys, vals := enumCases(cmds)
	for i := range keys {
		fmt.Fprintf(&b, "        (%s)\n            vals=(%s); compadd -- \"${vals[@]}\"; return ;;\n", keys[i], strings.Join(vals[i], " "))
	}
	vkeys, kinds := valueCases(cmds)
	for i := range vkeys {
		fmt.Fprintf(&b, "        (%s)\n            vals=(${(f)\"$(%s %s %s 2>/dev/null)\"}); compadd -- \"${vals[@]}\"; return ;;\n", vkeys[i], name, ValuesCommand, kinds[i])
	}
	b.WriteString(`    esac
    local args=""
    case "$cmdpath" in
`)
	for _, c := range cmds {
		fmt.Fprintf(&b, "        (%q) subs=(%s); flags=(%s); args=%q ;;\n", c.path, strings.Join(subNames(c), " "), strings.Join(flagNames(c), " "), c.args)
	}
	fmt.Fprintf(&b, `    esac
    if [[ $cur == -* ]]; then
        compadd -- "${flags[@]}"
    elif [[ -n $args ]]; then
        vals=(${(f)"$(%s %s $args 2>/dev/null)"}); compadd -- "${vals[@]}"
    elif (( ${#subs} )); then
        compadd -- "${subs[@]}"
    else
        _files
    fi
}

`, name, ValuesCommand)
	// Run the function only when autoloaded as a completion function, not
	// when the file is sourced.
	fmt.Fprintf(&b, "if [ \"$funcstack[1]\" = %q ]; then\n    %s \"$@\"\nfi\n", fn, fn)
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote single-quotes s for fish; only help texts need it.
func fishQuote(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
	return "'" + s + "'"
}

func writeFish(w io.Writer, name string, cmds []command) error {
	fn := strings.ReplaceAll(funcName(name), "_", "__")
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s. Generated; do not edit.\n\n", name)
	// A helper computes the deepest command path typed so far, so nested
	// commands are matched on their full path rather than on any single
	// word (which __fish_seen_subcommand_from would do).
	fmt.Fprintf(&b, "function %s_cmdpath\n", fn)
	b.WriteString("    set -l tokens (commandline -opc)\n    set -e tokens[1]\n")
	fmt.Fprintf(&b, "    set -l cmdpath %s\n", name)
	b.WriteString("    for w in $tokens\n        string match -q -- '-*' $w; and continue\n")
	var paths []string
	for _, c := range cmds[1:] {
		paths = append(paths, "'"+c.path+"'")
	}
	if len(paths) > 0 {
		fmt.Fprintf(&b, "        if contains -- \"$cmdpath $w\" %s\n            set cmdpath \"$cmdpath $w\"\n        end\n", strings.Join(paths, " "))
	}
	b.WriteString("    end\n    echo $cmdpath\nend\n\n")
	fmt.Fprintf(&b, "function %s_at\n    test (%s_cmdpath) = \"$argv\"\nend\n\n", fn, fn)

	for _, c := range cmds {
		cond := fmt.Sprintf("-n '%s_at %s'", fn, c.path)
		if c.args != "" {
			fmt.Fprintf(&b, "complete -c %s %s -f -a '(%s %s %s 2>/dev/null)'\n", name, cond, name, ValuesCommand, c.args)
		}
		for _, s := range c.subs {
			fmt.Fprintf(&b, "complete -c %s %s -f -a %s", name, cond, s.name)
			if s.help != "" {
				fmt.Fprintf(&b, " -d %s", fishQuote(s.help))
			}
			b.WriteString("\n")
		}
		for _, f := range c.flags {
			fmt.Fprintf(&b, "complete -c %s %s", name, cond)
			for _, n := range f.names {
				if strings.HasPrefix(n, "--") {
					fmt.Fprintf(&b, " -l %s", n[2:])
				} else {
					fmt.Fprintf(&b, " -s %s", n[1:])
				}
			}
			switch {
			case len(f.enum) > 0:
				fmt.Fprintf(&b, " -x -a '%s'", strings.Join(f.enum, " "))
			case f.values != "":
				fmt.Fprintf(&b, " -x -a '(%s %s %s 2>/dev/null)'", name, ValuesCommand, f.values)
			case f.value:
				b.WriteString(" -r")
			}
			if f.help != "" {
				fmt.Fprintf(&b, " -d %s", fishQuote(f.help))
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
