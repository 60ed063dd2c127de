package git

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// emailWorld is a clone and a home directory whose config files a case
// writes, with git asked the same question as plainUserEmail.
type emailWorld struct {
	t                testing.TB
	repo, home, xdg  string
	local, global, x string // the three config files
}

func newEmailWorld(t testing.TB) *emailWorld {
	top := t.TempDir()
	w := &emailWorld{t: t, repo: filepath.Join(top, "repo"), home: filepath.Join(top, "home"), xdg: filepath.Join(top, "xdg")}
	os.MkdirAll(w.home, 0o755)
	os.MkdirAll(filepath.Join(w.xdg, "git"), 0o755)
	cmd := exec.Command("git", "init", "-q", w.repo)
	cmd.Env = w.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	w.local = filepath.Join(w.repo, ".git", "config")
	w.global = filepath.Join(w.home, ".gitconfig")
	w.x = filepath.Join(w.xdg, "git", "config")
	return w
}

func (w *emailWorld) env() []string {
	env := []string{"HOME=" + w.home, "XDG_CONFIG_HOME=" + w.xdg, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	return env
}

func (w *emailWorld) lookup(k string) (string, bool) {
	for _, kv := range w.env() {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// write sets the three files; "" removes one (the local one keeps what
// git init wrote, then the case's text).
func (w *emailWorld) write(local, global, xdg string) {
	init := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
	for path, text := range map[string]string{w.local: init + local, w.global: global, w.x: xdg} {
		os.Remove(path)
		if text != "" {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// git is what git config user.email prints, trimmed as UserEmail trims it.
func (w *emailWorld) git() string {
	cmd := exec.Command("git", "config", "user.email")
	cmd.Dir, cmd.Env = w.repo, w.env()
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// plainUserEmail answers as git config user.email does, and answers
// itself wherever the files say it plainly.
func TestPlainUserEmailAsGit(t *testing.T) {
	w := newEmailWorld(t)
	for _, tc := range []struct {
		name               string
		local, global, xdg string
		fast               bool // plainUserEmail must answer, not git
	}{
		{name: "local", local: "[user]\n\temail = l@x\n", fast: true},
		{name: "global", global: "[user]\n\temail = g@x\n", fast: true},
		{name: "xdg", xdg: "[user]\n\temail = x@x\n", fast: true},
		{name: "local over both", local: "[user]\n\temail = l@x\n", global: "[user]\n\temail = g@x\n", xdg: "[user]\n\temail = x@x\n", fast: true},
		{name: "global over xdg", global: "[user]\n\temail = g@x\n", xdg: "[user]\n\temail = x@x\n", fast: true},
		{name: "case", local: "[User]\n\tEMAIL = Mixed@X.org\n", fast: true},
		{name: "quoted", local: "[user]\n\temail = \"  spaced  @x \"\n", fast: true},
		{name: "comments", local: "[user]\n\temail = c@x # a comment\n; another\n", fast: true},
		{name: "semicolon", local: "[user]\n\temail = c@x ; a comment\n", fast: true},
		{name: "escapes", local: "[user]\n\temail = \"a\\\"b\\\\c@x\"\n", fast: true},
		{name: "continued", local: "[user]\n\temail = a\\\n@x\n"},
		{name: "last wins", local: "[user]\n\temail = one@x\n[core]\n\tx = 1\n[user]\n\temail = two@x\n", fast: true},
		{name: "subsection", local: "[user \"work\"]\n\temail = w@x\n", global: "[user]\n\temail = g@x\n", fast: true},
		{name: "same line", local: "[user] email = s@x\n"}, // go-git's decoder refuses it
		{name: "no spaces", local: "[user]\nemail=n@x\n", fast: true},
		{name: "equals in value", local: "[user]\n\temail = a=b@x\n", fast: true},
		{name: "inner spaces", local: "[user]\n\temail = a   b@x\n", fast: true},
		{name: "trailing spaces", local: "[user]\n\temail = t@x  \t\n", fast: true},
		{name: "crlf", local: "[user]\r\n\temail = r@x\r\n", fast: true},
		{name: "unicode", local: "[user]\n\temail = émile@x\n", fast: true},
		{name: "name only", local: "[user]\n\tname = Ada\n", global: "[user]\n\temail = g@x\n", fast: true},
		{name: "blank", local: "[user]\n\temail\n", global: "[user]\n\temail = g@x\n"},
		{name: "empty", local: "[user]\n\temail =\n", global: "[user]\n\temail = g@x\n"},
		{name: "include", local: "[include]\n\tpath = ../../home/.gitconfig\n", global: "[user]\n\temail = g@x\n"},
		{name: "include after", global: "[user]\n\temail = g@x\n[include]\n\tpath = other\n"},
		{name: "includeIf", global: "[includeIf \"gitdir:/\"]\n\tpath = other\n[user]\n\temail = g@x\n"},
		{name: "bad line", local: "[user\n\temail = b@x\n", global: "[user]\n\temail = g@x\n"},
		{name: "bad escape", local: "[user]\n\temail = \"a\\qb\"\n"},
		{name: "tab inside", local: "[user]\n\temail = a\tb@x\n"},
		{name: "lone CR", local: "[user]\n\temail = a\rb@x\n"},
		{name: "header with a space", local: "[user ]\n\temail = a@x\n"},
		{name: "header with a space before", local: "[ user]\n\temail = a@x\n"},
		{name: "subsection then a space", local: "[user \"a\" ]\n\temail = a@x\n", global: "[user]\n\temail = g@x\n"},
		{name: "deprecated subsection", local: "[user.work]\n\temail = w@x\n", global: "[user]\n\temail = g@x\n"},
		{name: "nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.write(tc.local, tc.global, tc.xdg)
			want := w.git()
			got, ok := plainUserEmail(filepath.Join(w.repo, ".git"), w.lookup)
			if ok && got != want {
				t.Errorf("plainUserEmail = %q, git says %q", got, want)
			}
			if ok != tc.fast {
				t.Errorf("plainUserEmail answered %v (%q), want %v; git says %q", ok, got, tc.fast, want)
			}
		})
	}
}

// A variable that adds or moves config files leaves the answer to git.
func TestPlainUserEmailLeavesVariablesToGit(t *testing.T) {
	w := newEmailWorld(t)
	w.write("[user]\n\temail = l@x\n", "", "")
	for _, v := range []string{"GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "HOME", "XDG_CONFIG_HOME"} {
		lookup := func(k string) (string, bool) {
			switch {
			case k != v:
				return w.lookup(k)
			case k == "XDG_CONFIG_HOME":
				return "relative/dir", true // git resolves it from the work tree
			}
			return "", true // set, even empty (HOME: empty)
		}
		if got, ok := plainUserEmail(filepath.Join(w.repo, ".git"), lookup); ok {
			t.Errorf("with %s set empty (XDG_CONFIG_HOME: relative), plainUserEmail answered %q", v, got)
		}
	}
}

// Whatever a clone's config holds, plainUserEmail either leaves it to git
// or answers as git does.
func FuzzPlainUserEmail(f *testing.F) {
	for _, s := range []string{"[user]\n\temail = l@x\n", "[user] email = \"a\\tb\"\n", "[user]\nemail = a\\\nb\n", "[User \"x\"]\n\temail = s@x\n", "[user]\n\temail = a ; b\n"} {
		f.Add(s)
	}
	w := newEmailWorld(f)
	f.Fuzz(func(t *testing.T, local string) {
		w.write(local, "", "")
		got, ok := plainUserEmail(filepath.Join(w.repo, ".git"), w.lookup)
		if !ok {
			return
		}
		if want := w.git(); got != want {
			t.Errorf("config %q: plainUserEmail = %q, git says %q", local, got, want)
		}
	})
}

// Config files put together from the pieces git's syntax allows, each
// answered as git answers it (600 of them, seeded).
func TestPlainUserEmailMixed(t *testing.T) {
	w := newEmailWorld(t)
	headers := []string{"[user]", "[User]", " [USER] ", "[user \"a\"]", "[core]", "[user.x]", "[user]\t# c", "[user ]", "[ user]", "[user  \"a\"]", "[user \"a\" ]"}
	keys := []string{"email", "Email", "name", "e-mail", "email2", " email"}
	seps := []string{" = ", "=", "\t=\t", " =  "}
	values := []string{"a@x", "\"q @x\"", "a  b", "a\\tb", "\"a\\\"b\"", "a#b", "a;b", "\"a#b\"", "", "a ", "\"\"", "a\\\\b", "\"a\"b\"c\"", "é@x", "a\tb", "\"a\tb\"", "a\rb", "a\vb"}
	tails := []string{"", " # c", " ; c", "\r"}
	r := rand.New(rand.NewPCG(3, 4))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	answered := 0
	for range 600 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(pick(headers) + "\n")
			for range r.IntN(3) {
				b.WriteString("\t" + pick(keys) + pick(seps) + pick(values) + pick(tails) + "\n")
			}
		}
		w.write(b.String(), "", "")
		got, ok := plainUserEmail(filepath.Join(w.repo, ".git"), w.lookup)
		if !ok {
			continue
		}
		answered++
		if want := w.git(); got != want {
			t.Errorf("config %q: plainUserEmail = %q, git says %q", b.String(), got, want)
		}
	}
	if answered < 20 {
		t.Errorf("plainUserEmail answered %d of 600 itself", answered)
	}
	t.Logf("answered %d of 600", answered)
}
