package sign

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/git/gittest"
)

// commitAt is the clock of hand-made commits: one minute apart.
var commitAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// commit commits the index of dir on top of parents (HEAD when none),
// signed by key as git commit -S with gpg.format ssh signs (nil: unsigned),
// and moves the branch to it.
func commit(t *testing.T, r *gittest.Repo, dir string, key *testKey, msg string, parents ...string) string {
	t.Helper()
	if len(parents) == 0 {
		parents = []string{r.Git(dir, "rev-parse", "HEAD")}
	}
	commitAt = commitAt.Add(time.Minute)
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "tree %s\n", r.Git(dir, "write-tree"))
	for _, p := range parents {
		fmt.Fprintf(&hdr, "parent %s\n", p)
	}
	who := fmt.Sprintf("Ada <ada@example.com> %d +0000\n", commitAt.Unix())
	hdr.WriteString("author " + who + "committer " + who)
	body := "\n" + msg + "\n"
	raw := hdr.String() + body
	if key != nil {
		blob, err := Sign(key.signer, NamespaceGit, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		armored := strings.TrimSuffix(Armor(blob), "\n")
		raw = hdr.String() + "gpgsig " + strings.ReplaceAll(armored, "\n", "\n ") + "\n" + body
	}
	cmd := exec.Command("git", "hash-object", "-t", "commit", "-w", "--stdin")
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hash-object: %v", err)
	}
	id := strings.TrimSpace(string(out))
	r.Git(dir, "update-ref", "HEAD", id)
	return id
}

// change writes files in dir (content "" removes one), stages them and
// commits as commit does.
func change(t *testing.T, r *gittest.Repo, dir string, key *testKey, files map[string]string, parents ...string) string {
	t.Helper()
	for name, content := range files {
		if content == "" {
			r.Git(dir, "rm", "-q", name)
			continue
		}
		r.Write(dir, name, content)
		r.Git(dir, "add", name)
	}
	return commit(t, r, dir, key, "change", parents...)
}

func signersFile(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func adminsJSON(names ...string) string {
	return `{"admins":["` + strings.Join(names, `","`) + `"],"lock.timeout":"10s"}` + "\n"
}

func checkHistory(t *testing.T, dir string, tips ...string) *Report {
	t.Helper()
	rep := &Report{}
	err := git.ReadHistory(context.Background(), dir, func(h *git.History) error {
		if len(tips) == 0 {
			head, err := h.Resolve("HEAD")
			if err != nil {
				return err
			}
			tips = []string{head}
		}
		return newTrust(h).checkHistory(tips, rep)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// wantProblems checks the commits refused, by id.
func wantProblems(t *testing.T, rep *Report, commits ...string) {
	t.Helper()
	got := map[string]string{}
	for _, p := range rep.Problems {
		if p.Code != "unsigned_trust_change" {
			t.Errorf("problem code %s", p.Code)
		}
		got[p.Commit] = p.Message
	}
	for _, c := range commits {
		if _, ok := got[c]; !ok {
			t.Errorf("commit %s not refused; problems: %v", c, rep.Problems)
		}
		delete(got, c)
	}
	for c, msg := range got {
		t.Errorf("commit %s refused: %s", c, msg)
	}
}

type team struct {
	r             *gittest.Repo
	ada, bob, eve testKey
	root          string // the commit that brought allowed_signers
}

// newTeam is a repository whose second commit, unsigned (trusted on first
// use), lists ada (an admin, every namespace) and bob (not an admin).
func newTeam(t *testing.T) *team {
	tm := &team{r: gittest.New(t, nil), ada: newKey(t, "ed25519"), bob: newKey(t, "ecdsa"), eve: newKey(t, "ed25519")}
	tm.root = change(t, tm.r, tm.r.Root, nil, map[string]string{
		AllowedSignersFile: signersFile("ada@example.com "+tm.ada.publicLine, "bob@example.com "+tm.bob.publicLine),
		configFile:         adminsJSON("ada@example.com"),
	})
	return tm
}

func TestCheckHistory(t *testing.T) {
	t.Run("first commit trusted, admin-signed changes pass, others refused", func(t *testing.T) {
		tm := newTeam(t)
		r, dir := tm.r, tm.r.Root
		ok1 := change(t, r, dir, &tm.ada, map[string]string{configFile: adminsJSON("ada@example.com", "bob@example.com")})
		bad1 := change(t, r, dir, nil, map[string]string{configFile: adminsJSON("ada@example.com", "bob@example.com", "joe@example.com")})
		// bob became an admin in ok1: from then on his signature will do.
		ok2 := change(t, r, dir, &tm.bob, map[string]string{AllowedSignersFile: signersFile(
			"ada@example.com "+tm.ada.publicLine, "bob@example.com "+tm.bob.publicLine, "eve@example.com "+tm.eve.publicLine)})
		bad2 := change(t, r, dir, &tm.eve, map[string]string{configFile: adminsJSON("eve@example.com")})
		// Another key of config.json needs no admin.
		change(t, r, dir, nil, map[string]string{configFile: strings.Replace(adminsJSON("eve@example.com"), "10s", "20s", 1)})
		rep := checkHistory(t, dir)
		wantProblems(t, rep, bad1, bad2)
		if rep.Commits != 4 {
			t.Errorf("%d commits checked, want 4 (%s %s %s %s)", rep.Commits, ok1, bad1, ok2, bad2)
		}
		for _, p := range rep.Problems {
			if p.Commit == bad1 && !strings.Contains(p.Message, "changes the admins in .spool/config.json from its parent") ||
				p.Commit == bad1 && !strings.Contains(p.Message, "the commit is not signed") {
				t.Errorf("bad1: %s", p.Message)
			}
			if p.Commit == bad2 && !strings.Contains(p.Message, "which the allowed signers before it do not list for an admin (ada@example.com, bob@example.com, joe@example.com)") {
				t.Errorf("bad2: %s", p.Message)
			}
		}
	})
	t.Run("a key listed only for namespace spool cannot sign commits", func(t *testing.T) {
		tm := newTeam(t)
		r, dir := tm.r, tm.r.Root
		change(t, r, dir, &tm.ada, map[string]string{AllowedSignersFile: signersFile(`ada@example.com namespaces="spool" ` + tm.ada.publicLine)})
		bad := change(t, r, dir, &tm.ada, map[string]string{configFile: adminsJSON("bob@example.com")})
		rep := checkHistory(t, dir)
		wantProblems(t, rep, bad)
	})
	t.Run("an expired admin key", func(t *testing.T) {
		tm := newTeam(t)
		r, dir := tm.r, tm.r.Root
		change(t, r, dir, &tm.ada, map[string]string{AllowedSignersFile: signersFile(`ada@example.com valid-before="20260101Z" ` + tm.ada.publicLine)})
		bad := change(t, r, dir, &tm.ada, map[string]string{configFile: adminsJSON("bob@example.com")})
		wantProblems(t, checkHistory(t, dir), bad)
	})
	t.Run("a merge carries a change signed on its branch", func(t *testing.T) {
		tm := newTeam(t)
		r, dir := tm.r, tm.r.Root
		r.Git(dir, "checkout", "-q", "-b", "keys")
		signed := change(t, r, dir, &tm.ada, map[string]string{AllowedSignersFile: signersFile(
			"ada@example.com "+tm.ada.publicLine, "eve@example.com "+tm.eve.publicLine)})
		r.Git(dir, "checkout", "-q", "main")
		moved := change(t, r, dir, nil, map[string]string{"other.txt": "main moved on\n"})
		r.Git(dir, "merge", "-q", "--no-commit", "keys")
		merge := commit(t, r, dir, nil, "merge keys", moved, signed)
		wantProblems(t, checkHistory(t, dir))
		_ = merge
	})
	t.Run("a merge may not undo a change its first side made", func(t *testing.T) {
		tm := newTeam(t)
		r, dir := tm.r, tm.r.Root
		r.Git(dir, "checkout", "-q", "-b", "old")
		old := change(t, r, dir, nil, map[string]string{"other.txt": "old branch\n"})
		r.Git(dir, "checkout", "-q", "main")
		newer := change(t, r, dir, &tm.ada, map[string]string{configFile: adminsJSON("ada@example.com", "bob@example.com")})
		// The merge takes old's admins back: main's state differs from
		// the merge base's, so the change is the merge's own.
		r.Git(dir, "merge", "-q", "--no-commit", "old")
		r.Write(dir, configFile, adminsJSON("ada@example.com"))
		r.Git(dir, "add", configFile)
		merge := commit(t, r, dir, nil, "merge old", newer, old)
		wantProblems(t, checkHistory(t, dir), merge)
	})
	t.Run("a branch that brings its own allowed signers", func(t *testing.T) {
		tm := newTeam(t)
		r, dir := tm.r, tm.r.Root
		first := r.Git(dir, "rev-list", "--max-parents=0", "HEAD")
		r.Git(dir, "checkout", "-q", "-b", "evil", first)
		evil := change(t, r, dir, nil, map[string]string{
			AllowedSignersFile: signersFile("eve@example.com " + tm.eve.publicLine),
			configFile:         adminsJSON("eve@example.com")})
		r.Git(dir, "checkout", "-q", "main")
		main := r.Git(dir, "rev-parse", "HEAD")
		r.Git(dir, "merge", "-q", "--no-commit", "-X", "theirs", "--allow-unrelated-histories", "evil")
		merge := commit(t, r, dir, nil, "merge evil", main, evil)
		// evil itself is trusted on first use (its parent had no file); the
		// merge that brings it over main's is not.
		wantProblems(t, checkHistory(t, dir), merge)
	})
	t.Run("no admins: any listed key may change them", func(t *testing.T) {
		r := gittest.New(t, nil)
		ada, eve := newKey(t, "ed25519"), newKey(t, "ed25519")
		dir := r.Root
		change(t, r, dir, nil, map[string]string{AllowedSignersFile: signersFile("ada@example.com " + ada.publicLine)})
		change(t, r, dir, &ada, map[string]string{configFile: adminsJSON("ada@example.com")})
		bad := change(t, r, dir, &eve, map[string]string{configFile: adminsJSON("eve@example.com")})
		wantProblems(t, checkHistory(t, dir), bad)
	})
	t.Run("removing the file is a change like any other", func(t *testing.T) {
		tm := newTeam(t)
		bad := change(t, tm.r, tm.r.Root, nil, map[string]string{AllowedSignersFile: ""})
		// After it, nothing is checked: the removal is where a check fails.
		change(t, tm.r, tm.r.Root, nil, map[string]string{configFile: adminsJSON("eve@example.com")})
		wantProblems(t, checkHistory(t, tm.r.Root), bad)
	})
}

// A commit git itself signs (gpg.format ssh, ssh-keygen -Y sign) passes,
// and git verify-commit accepts the commits the tests make by hand.
func TestCheckHistoryWithGitsSignatures(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("no ssh-keygen: git cannot make SSH signatures")
	}
	tm := newTeam(t)
	r, dir := tm.r, tm.r.Root
	r.Write(dir, configFile, adminsJSON("ada@example.com", "bob@example.com"))
	r.Git(dir, "add", configFile)
	r.Git(dir, "-c", "gpg.format=ssh", "-c", "user.signingkey="+tm.ada.private, "commit", "-q", "-S", "-m", "bob is an admin")
	gits := r.Git(dir, "rev-parse", "HEAD")
	ours := change(t, r, dir, &tm.bob, map[string]string{configFile: adminsJSON("bob@example.com")})
	wantProblems(t, checkHistory(t, dir))
	allowed := filepath.Join(t.TempDir(), "allowed")
	write(t, allowed, "ada@example.com "+tm.ada.publicLine+"\nbob@example.com "+tm.bob.publicLine+"\n")
	for _, c := range []string{gits, ours} {
		r.Git(dir, "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", c)
	}
}

func TestRootAndExempt(t *testing.T) {
	r := gittest.New(t, map[string]string{".spool/events/w1.jsonl": eventLine(t, "w1", 1) + eventLine(t, "w1", 2)})
	key := newKey(t, "ed25519")
	dir := r.Root
	root := change(t, r, dir, nil, map[string]string{AllowedSignersFile: signersFile("ada@example.com " + key.publicLine)})
	change(t, r, dir, nil, map[string]string{".spool/events/w1.jsonl": eventLine(t, "w1", 1) + eventLine(t, "w1", 2) + eventLine(t, "w1", 3)})
	err := git.ReadHistory(context.Background(), dir, func(h *git.History) error {
		head, _ := h.Resolve("HEAD")
		got, err := newTrust(h).root(head)
		if err != nil || got != root {
			t.Errorf("Root = %s, %v; want %s", got, err, root)
		}
		ids, err := Exempt(h, got)
		if err != nil || len(ids.ids) != 2 {
			t.Errorf("Exempt: %v %v", ids, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// eventLine is a valid log line of writer w at seq (lc = seq).
func eventLine(t *testing.T, w string, seq uint64) string {
	t.Helper()
	e := fmt.Sprintf(`{"v":1,"id":"","writer":%q,"seq":%d,"lc":%d,"at":"2026-01-01T00:00:00Z","actor":"ada@example.com","type":"test.done"}`, w, seq, seq)
	ev, err := decodeWithID(e)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := ev.Encode()
	return string(line)
}

func TestCheckWorkTree(t *testing.T) {
	tm := newTeam(t)
	dir := tm.r.Root
	head := tm.r.Git(dir, "rev-parse", "HEAD")
	check := func() *Report {
		rep := &Report{}
		if err := git.ReadHistory(context.Background(), dir, func(h *git.History) error { return newTrust(h).checkWorkTree(head, dir, rep) }); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := check(); len(rep.Problems) != 0 {
		t.Fatalf("clean work tree: %v", rep.Problems)
	}
	tm.r.Write(dir, configFile, strings.Replace(adminsJSON("ada@example.com"), "10s", "30s", 1))
	if rep := check(); len(rep.Problems) != 0 {
		t.Fatalf("another key changed: %v", rep.Problems)
	}
	tm.r.Write(dir, configFile, adminsJSON("eve@example.com"))
	rep := check()
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "the work tree changes the admins in .spool/config.json from HEAD") {
		t.Fatalf("got %v", rep.Problems)
	}
}

func TestShallowHistory(t *testing.T) {
	tm := newTeam(t)
	change(t, tm.r, tm.r.Root, &tm.ada, map[string]string{configFile: adminsJSON("bob@example.com")})
	tm.r.Git(tm.r.Root, "push", "-q", "origin", "main")
	shallow := filepath.Join(t.TempDir(), "shallow")
	tm.r.Git(tm.r.Root, "clone", "-q", "--depth", "1", "file://"+tm.r.Remote, shallow)
	if err := os.WriteFile(filepath.Join(shallow, AllowedSignersFile), []byte(signersFile("ada@example.com "+tm.ada.publicLine)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := VerifyRepository(context.Background(), shallow, nil, nil)
	if f := fault.Classify(err); f.Code != "history_incomplete" || !strings.Contains(f.Message, "git fetch --unshallow") {
		t.Fatalf("got %v", err)
	}
}
