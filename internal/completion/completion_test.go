package completion

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

type testCLI struct {
	JSON    bool   `help:"Emit JSON."`
	Dir     string `short:"C" help:"Run in 'dir'."`
	Secret  bool   `hidden:""`
	Verbose int    `type:"counter" short:"v"`

	Task struct {
		Add struct {
			Format string `enum:"a,b" default:"a" short:"f" help:"Output format."`
			Parent string `complete:"task" help:"Parent task."`
			Title  string `arg:"" optional:""`
		} `cmd:"" help:"Add a task."`
		Show struct {
			IDs []string `arg:"" complete:"task"`
		} `cmd:"" help:"Show tasks."`
		List struct {
			All bool `negatable:""`
		} `cmd:"" help:"List tasks."`
	} `cmd:"" help:"Manage tasks."`

	Hidden struct{} `cmd:"" hidden:""`
}

func testApp(t *testing.T) *kong.Application {
	t.Helper()
	parser, err := kong.New(&testCLI{}, kong.Name("spool"))
	if err != nil {
		t.Fatal(err)
	}
	return parser.Model
}

func script(t *testing.T, shell string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, testApp(t), shell); err != nil {
		t.Fatalf("Write(%s): %v", shell, err)
	}
	return buf.String()
}

func TestScriptsContent(t *testing.T) {
	want := map[string][]string{
		"bash": {"complete -o default -F _spool spool", `"spool task add"`, "add show list", "spool __complete task", "--json", "-C", "--format", "-v", "--no-all", "--help", `"a b"`},
		"zsh":  {"#compdef spool", "compadd", `"spool task add"`, "subs=(add show list)", "__complete", "--json", "-C", "--format", "--no-all", "vals=(a b)"},
		"fish": {"complete -c spool", "-a task", "-a add", "-a list", "-l json", "-l dir -s C -r", "-l format -s f -x -a 'a b'", "-l parent -x -a '(spool __complete task 2>/dev/null)'", "-l all -l no-all", "'spool task add'", `'Run in \'dir\'.'`},
	}
	for shell, needles := range want {
		t.Run(shell, func(t *testing.T) {
			s := script(t, shell)
			for _, n := range needles {
				if !strings.Contains(s, n) {
					t.Errorf("script lacks %q:\n%s", n, s)
				}
			}
			for _, n := range []string{"hidden", "secret"} {
				if strings.Contains(s, n) {
					t.Errorf("script contains hidden %q:\n%s", n, s)
				}
			}
			if s != script(t, shell) {
				t.Error("output is not deterministic")
			}
		})
	}
}

func TestUnknownShell(t *testing.T) {
	err := Write(&bytes.Buffer{}, testApp(t), "powershell")
	if err == nil {
		t.Fatal("expected error")
	}
	for _, s := range []string{"bash", "zsh", "fish"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

func TestUnsafeName(t *testing.T) {
	var cli struct {
		Mode string `enum:"a,$(rm -rf ~)" default:"a"`
	}
	parser, err := kong.New(&cli, kong.Name("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&bytes.Buffer{}, parser.Model, "bash"); err == nil {
		t.Fatal("expected error for unsafe enum value")
	}
}

func writeScript(t *testing.T, shell string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spool."+shell)
	if err := os.WriteFile(p, []byte(script(t, shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBashCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	p := writeScript(t, "bash")
	cases := []struct {
		words []string // the last word is the one being completed
		want  string
	}{
		{[]string{"spool", ""}, "task"},
		{[]string{"spool", "ta"}, "task"},
		{[]string{"spool", "task", ""}, "add show list"},
		{[]string{"spool", "--json", "task", ""}, "add show list"},
		{[]string{"spool", "-C", "dir", "task", "li"}, "list"},
		{[]string{"spool", "task", "add", "--format", ""}, "a b"},
		{[]string{"spool", "task", "add", "--format", "=", "b"}, "b"},
		{[]string{"spool", "task", "add", "--format", "="}, "a b"},
		{[]string{"spool", "--json", "task", "add", "-f", "a"}, "a"},
		{[]string{"spool", "task", "add", "--f"}, "--format"},
		{[]string{"spool", "task", "list", "--"}, "--help --json --dir --verbose --all --no-all"},
		{[]string{"spool", "hid"}, ""},
		{[]string{"spool", "task", "--format", ""}, "add show list"}, // --format (and its enum) belongs to "task add" only
		// Values the program lists (a fake spool on PATH answers __complete).
		{[]string{"spool", "task", "show", ""}, "sp-a1 sp-b2"},
		{[]string{"spool", "task", "show", "sp-a1", "sp-b"}, "sp-b2"},
		{[]string{"spool", "task", "add", "--parent", "sp-a"}, "sp-a1"},
	}
	bin := t.TempDir()
	fake := "#!/bin/sh\n[ \"$1 $2\" = '__complete task' ] && printf 'sp-a1\\nsp-b2\\n'\n"
	if err := os.WriteFile(filepath.Join(bin, "spool"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, c := range cases {
		t.Run(strings.Join(c.words, " "), func(t *testing.T) {
			var quoted []string
			for _, w := range c.words {
				quoted = append(quoted, "'"+w+"'")
			}
			prog := `source "$1"
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMPREPLY=()
_spool
echo "${COMPREPLY[*]}"`
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog, "bash", p)
			cmd.Env = append(os.Environ(), "PATH="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != c.want {
				t.Errorf("COMPREPLY = %q, want %q", got, c.want)
			}
		})
	}
}

func TestSyntax(t *testing.T) {
	for _, c := range []struct{ shell, flag string }{{"bash", "-n"}, {"zsh", "-n"}, {"fish", "--no-execute"}} {
		t.Run(c.shell, func(t *testing.T) {
			bin, err := exec.LookPath(c.shell)
			if err != nil {
				t.Skipf("%s not installed", c.shell)
			}
			if out, err := exec.Command(bin, c.flag, writeScript(t, c.shell)).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", c.shell, c.flag, err, out)
			}
		})
	}
}

func TestFishCompletes(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not installed")
	}
	p := writeScript(t, "fish")
	cases := map[string]string{
		"spool task ":               "add list",
		"spool ta":                  "task",
		"spool -C dir task l":       "list",
		"spool task add --format ":  "a b",
		"spool task add --format=":  "--format=a --format=b",
		"spool task list --no":      "--no-all",
		"spool task add --format a": "a", // enum values filtered by prefix
	}
	for line, want := range cases {
		t.Run(line, func(t *testing.T) {
			out, err := exec.Command(fish, "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, p, line).CombinedOutput()
			if err != nil {
				t.Fatalf("fish: %v\n%s", err, out)
			}
			var got []string
			for l := range strings.Lines(string(out)) {
				name, _, _ := strings.Cut(strings.TrimSpace(l), "\t")
				got = append(got, name)
			}
			if strings.Join(got, " ") != want {
				t.Errorf("completions = %q, want %q", got, want)
			}
		})
	}
}

// TestZshCompletes runs the completion function outside the completion
// system, with compadd stubbed to print its candidates.
func TestZshCompletes(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed")
	}
	p := writeScript(t, "zsh")
	cases := []struct {
		words string // zsh array literal; the last word is being completed
		want  string
	}{
		{`spool ""`, "task"},
		{`spool task ""`, "add list"},
		{`spool --json task l`, "add list"}, // compadd, not the script, filters by prefix
		{`spool task add --format ""`, "a b"},
		{`spool task add -f ""`, "a b"},
		{`spool task add --format=`, "a b"},
		{`spool task list -`, "--help -h --json --dir -C --verbose -v --all --no-all"},
		{`spool task add x`, "FILES"},
	}
	for _, c := range cases {
		t.Run(c.words, func(t *testing.T) {
			prog := `compdef() {}; compset() {}; _files() { print FILES }
compadd() { [[ $1 == -- ]] && shift; print -r -- "$@" }
source $1
words=(` + c.words + `); CURRENT=${#words}
_spool`
			out, err := exec.Command(zsh, "-f", "-c", prog, "zsh", p).CombinedOutput()
			if err != nil {
				t.Fatalf("zsh: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != c.want {
				t.Errorf("candidates = %q, want %q", got, c.want)
			}
		})
	}
}
