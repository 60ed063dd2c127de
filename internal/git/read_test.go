package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// gitRevParse is what the git binary says rev resolves to ("" when it fails).
func gitRevParse(t *testing.T, dir, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// readFixture is a repository with a linked worktree on feat (one commit
// ahead of main), a side branch off main, an annotated tag, a ref to a
// tree, and a branch that exists only in packed-refs with its objects in a
// pack.
type readFixture struct {
	*gittest.Repo
	feat                           string // the linked worktree
	mainSHA, featSHA, sideSHA, old string
}

func newReadFixture(t *testing.T) *readFixture {
	f := &readFixture{Repo: gittest.New(t, map[string]string{"sub/file": "in a subdirectory\n"})}
	f.old = f.Git(f.Root, "rev-parse", "HEAD")
	f.Git(f.Root, "branch", "packed")
	f.Git(f.Root, "tag", "-a", "-m", "release", "v1")
	f.Git(f.Root, "pack-refs", "--all")
	f.Git(f.Root, "gc", "-q")
	f.mainSHA = f.Commit(f.Root, "main.txt", "main\n", "main moves on")
	f.feat = f.Worktree("feat", "feat.txt", "feat\n")
	f.featSHA = f.Git(f.feat, "rev-parse", "HEAD")
	f.Git(f.Root, "branch", "side", f.old)
	side := filepath.Join(filepath.Dir(f.Root), "side")
	f.Git(f.Root, "worktree", "add", "-q", side, "side")
	f.sideSHA = f.Commit(side, "side.txt", "side\n", "side")
	f.Git(f.Root, "update-ref", "refs/misc/tree", f.Git(f.Root, "rev-parse", "HEAD^{tree}"))
	return f
}

func TestRevParseGoGit(t *testing.T) {
	f := newReadFixture(t)
	if b, err := os.ReadFile(filepath.Join(f.Root, ".git", "packed-refs")); err != nil || !strings.Contains(string(b), "refs/heads/packed") {
		t.Fatalf("refs/heads/packed is not in packed-refs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.Root, ".git", "refs", "heads", "packed")); err == nil {
		t.Fatal("refs/heads/packed is loose too")
	}
	for _, tc := range []struct {
		name, dir, rev, want string // want "" is an error
	}{
		{"branch", f.Root, "refs/heads/main", f.mainSHA},
		{"HEAD of the primary worktree", f.Root, "HEAD", f.mainSHA},
		{"HEAD of a linked worktree", f.feat, "HEAD", f.featSHA},
		{"branch read from a linked worktree", f.feat, "refs/heads/side", f.sideSHA},
		{"subdirectory of a linked worktree", filepath.Join(f.feat, "sub"), "HEAD", f.featSHA},
		{"packed ref, packed objects", f.Root, "refs/heads/packed", f.old},
		{"packed ref from a linked worktree", f.feat, "refs/heads/packed", f.old},
		{"annotated tag peels to its commit", f.Root, "refs/tags/v1", f.old},
		{"full commit id", f.feat, f.old, f.old},
		{"unknown ref", f.Root, "refs/heads/nope", ""},
		{"unknown commit id", f.Root, strings.Repeat("ab", 20), ""},
		{"a tree is not a commit", f.Root, "refs/misc/tree", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RevParse(context.Background(), tc.dir, tc.rev)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("RevParse(%s) = %s, want an error", tc.rev, got)
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("RevParse(%s) = %q, %v; want %s", tc.rev, got, err, tc.want)
			}
			if bin := gitRevParse(t, tc.dir, tc.rev); bin != tc.want {
				t.Fatalf("git rev-parse %s = %q, the table says %q", tc.rev, bin, tc.want)
			}
		})
	}
	if _, err := RevParse(context.Background(), t.TempDir(), "HEAD"); err == nil {
		t.Fatal("revParse outside a repository succeeded")
	}
}

// The object database is kept for the process; a commit git packs after
// go-git loaded the pack indexes is still found.
func TestGoGitSeesNewPacks(t *testing.T) {
	f := newReadFixture(t)
	if got, err := RevParse(context.Background(), f.Root, "refs/heads/packed"); err != nil || got != f.old {
		t.Fatalf("packed: %s, %v", got, err) // loads the pack indexes
	}
	sha := f.Commit(f.Root, "new.txt", "new\n", "new")
	f.Git(f.Root, "repack", "-q", "-d")
	f.Git(f.Root, "prune-packed")
	if _, err := os.Stat(filepath.Join(f.Root, ".git", "objects", sha[:2], sha[2:])); err == nil {
		t.Fatal("the new commit is still loose")
	}
	for _, dir := range []string{f.Root, f.feat} {
		if got, err := RevParse(context.Background(), dir, sha); err != nil || got != sha {
			t.Fatalf("RevParse(%s) in %s = %s, %v", sha, dir, got, err)
		}
	}
	if ok, err := Contains(context.Background(), f.feat, "refs/heads/main", f.old); err != nil || !ok {
		t.Fatalf("contains through the new pack = %v, %v", ok, err)
	}
}

func TestContainsGoGit(t *testing.T) {
	f := newReadFixture(t)
	for _, tc := range []struct {
		name, dir, ref, commit string
		want, wantErr          bool
	}{
		{"ancestor", f.Root, "refs/heads/main", f.old, true, false},
		{"the tip itself", f.Root, "refs/heads/main", f.mainSHA, true, false},
		{"descendant is not an ancestor", f.Root, "refs/heads/main", f.featSHA, false, false},
		{"sibling branch", f.Root, "refs/heads/main", f.sideSHA, false, false},
		{"read from a linked worktree", f.feat, "refs/heads/feat", f.mainSHA, true, false},
		{"across a packed ref", f.feat, "refs/heads/side", f.old, true, false},
		{"unknown commit", f.Root, "refs/heads/main", strings.Repeat("ab", 20), false, true},
		{"unknown ref", f.Root, "refs/heads/nope", f.old, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Contains(context.Background(), tc.dir, tc.ref, tc.commit)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("contains(%s, %s) = %v, %v; want %v (error %v)", tc.ref, tc.commit, got, err, tc.want, tc.wantErr)
			}
			// The git binary agrees: exit 0 yes, 1 no, anything else an error.
			err = exec.Command("git", "-C", tc.dir, "merge-base", "--is-ancestor", tc.commit, tc.ref).Run()
			code := 0
			if e, ok := err.(*exec.ExitError); ok {
				code = e.ExitCode()
			}
			if wantCode := map[bool]int{true: 0, false: 1}[tc.want]; !tc.wantErr && code != wantCode || tc.wantErr && code < 2 {
				t.Fatalf("git merge-base --is-ancestor exited %d", code)
			}
		})
	}
}

// trailerCases are commit messages whose Change-Id trailers git and
// trailerValues must find alike; want is what git finds.
var trailerCases = []struct {
	msg  string
	want []string
}{
	{"title\n\nChange-Id: Iabc\n", []string{"Iabc"}},
	{"title\n\nChange-Id: Iabc", []string{"Iabc"}},
	{"title\n\nbody\n\nChange-Id: Iabc\nSigned-off-by: A <a@x>\n", []string{"Iabc"}},
	{"title\n\nChange-Id: Iabc\n\nbody after\n", nil},
	{"Change-Id: Iabc\n", nil},
	{"Change-Id: Iabc\n\nChange-Id: Idef\n", []string{"Idef"}},
	{"title\n\nChange-Id : Ispaced\n", []string{"Ispaced"}},
	{"title\n\nChange-Id:Inospace\n", []string{"Inospace"}},
	{"title\n\nChange-Id:   Ipadded \t \n", []string{"Ipadded"}},
	{"title\n\n Change-Id: Iindented\n", nil},
	{"title\n\nChange-Id: Iabc\n continued\n", []string{"Iabc\n continued"}},
	{"title\n\nChange-Id: Iabc\nprose\n", nil},
	{"title\n\nChange-Id: Iabc\nprose\nSigned-off-by: A <a@x>\n", []string{"Iabc"}},
	{"title\n\nx\ny\nz\nw\nSigned-off-by: A <a@x>\nChange-Id: I2of6\n", []string{"I2of6"}},
	{"title\n\nx\ny\nz\nw\nv\nu\nt\nSigned-off-by: A <a@x>\nChange-Id: I2of9\n", nil},
	{"title\n\nx\ny\nz\nSigned-off-by: A <a@x>\nChange-Id: Ienough\n", []string{"Ienough"}},
	{"title\n\n(cherry picked from commit 0123)\nChange-Id: Icherry\nprose\n", []string{"Icherry"}},
	{"title\n\nChange-Id: Iabc\n# a comment\n", []string{"Iabc"}},
	{"title\n\nChange-Id: Iabc\n\n# a comment\n\n", []string{"Iabc"}},
	{"title\n\nChange-Id: Iabc\n# ------------------------ >8 ------------------------\nChange-Id: Icut\n", []string{"Iabc"}},
	{"title\n\nChange-Id: Iabc\nConflicts:\n\ta.txt\n", []string{"Iabc"}},
	{"title\n\nbody\n---\nChange-Id: Idivider\n", nil},
	{"title\n\n---\n\nChange-Id: Idivider\n", []string{"Idivider"}},
	{"title\n\nChange-Id: Ione\nchange-id: Itwo\nOther: x\n", []string{"Ione", "Itwo"}},
	{"title\n\nChange-Id:\nChange-Id: Ilast\n", []string{"", "Ilast"}},
	{"title\n\nChange-Ids: Inot\n", nil},
	{"title\n\nChange Id: Inot\n", nil},
	{"title\r\n\r\nChange-Id: Icrlf\r\n", []string{"Icrlf"}},
	{"title\n   \nChange-Id: Iblank\n", []string{"Iblank"}},
	{"# comment title\ntitle\n\nChange-Id: Iafter\n", []string{"Iafter"}},
	{"\nChange-Id: Iafterblank\n", nil},
	{" \t\r\n\ntitle\n\nChange-Id: Iafterblanks\n", []string{"Iafterblanks"}},
	{"", nil},
	{"\n\n\n", nil},
	{"title\n\nChange-Id: I\x00hidden\n", []string{"I"}}, // git refuses to write it; go-git reads it
}

func TestTrailerValues(t *testing.T) {
	for _, tc := range trailerCases {
		if got := trailerValues(tc.msg, "Change-Id"); !slices.Equal(got, tc.want) {
			t.Errorf("trailerValues(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// gitTrailers writes a commit with message msg and asks the git binary for
// its Change-Id trailers, as spool once did. git commit-tree may
// change the message (invalid UTF-8 is taken as Latin-1), so compare
// against the commit it wrote, read with readChangeID.
func gitTrailers(t testing.TB, dir, msg string) (sha, trailers string) {
	cmd := exec.Command("git", "commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904") // the empty tree
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(msg)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git commit-tree: %v", err)
	}
	sha = strings.TrimSpace(string(out))
	out, err = exec.Command("git", "-C", dir, "log", "-1", "--format=%(trailers:key=Change-Id,valueonly,separator=%x00)", sha, "--").Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	return sha, strings.TrimSuffix(string(out), "\n")
}

// formatLikeGit joins values as git's separator option does: a separator
// only after something was written.
func formatLikeGit(values []string) string {
	var b strings.Builder
	for _, v := range values {
		if b.Len() > 0 {
			b.WriteByte(0)
		}
		b.WriteString(v)
	}
	return b.String()
}

func gitTrailerRepo(t testing.TB) string {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if _, err := exec.Command("git", "-C", dir, "hash-object", "-w", "-t", "tree", "/dev/null").Output(); err != nil {
		t.Fatalf("empty tree: %v", err)
	}
	return dir
}

// TestTrailerValuesMatchGit holds the table to the git binary.
func TestTrailerValuesMatchGit(t *testing.T) {
	dir := gitTrailerRepo(t)
	for _, tc := range trailerCases {
		if strings.Contains(tc.msg, "\x00") {
			continue // git commit-tree refuses a message with a NUL
		}
		sha, want := gitTrailers(t, dir, tc.msg)
		if got := formatLikeGit(tc.want); got != want {
			t.Errorf("git finds %q in %q; the table says %q", want, tc.msg, got)
		}
		if _, values, err := ReadChangeID(context.Background(), dir, sha); err != nil || formatLikeGit(values) != want {
			t.Errorf("readChangeID finds %q, %v in %q; git %q", values, err, tc.msg, want)
		}
	}
}

// FuzzTrailerValues is a differential test: a commit with any message,
// read with go-git, has the same Change-Id trailers as the git binary finds.
func FuzzTrailerValues(f *testing.F) {
	for _, tc := range trailerCases {
		f.Add(tc.msg)
	}
	dir := gitTrailerRepo(f)
	f.Fuzz(func(t *testing.T, msg string) {
		if strings.Contains(msg, "\x00") {
			t.Skip("git commit-tree refuses a message with a NUL")
		}
		sha, want := gitTrailers(t, dir, msg)
		head, values, err := ReadChangeID(context.Background(), dir, sha)
		if err != nil || head != sha {
			t.Fatalf("message %q: ReadChangeID(%s) = %s, %v", msg, sha, head, err)
		}
		if got := formatLikeGit(values); got != want {
			t.Fatalf("message %q: readChangeID finds %q, git %q", msg, got, want)
		}
	})
}

// The in-process reads against the git processes they replaced, in a
// linked worktree (timings are for reading, never a pass/fail test).
func BenchmarkGitReads(b *testing.B) {
	dir := b.TempDir()
	root, wt := filepath.Join(dir, "repo"), filepath.Join(dir, "wt")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_NOSYSTEM=1")
	for _, args := range [][]string{{"init", "-q", "-b", "main", root}, {"-C", root, "commit", "-q", "--allow-empty", "-m", "one"},
		{"-C", root, "commit", "-q", "--allow-empty", "-m", "two\n\nChange-Id: Iabc"}, {"-C", root, "worktree", "add", "-q", wt, "-b", "wt"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		read func() error
	}{
		{"rev-parse/go-git", func() error { _, err := RevParse(ctx, wt, "refs/heads/main"); return err }},
		{"rev-parse/binary", func() error {
			_, err := Run(ctx, wt, "rev-parse", "--verify", "--quiet", "refs/heads/main^{commit}")
			return err
		}},
		{"is-ancestor/go-git", func() error { _, err := Contains(ctx, wt, "refs/heads/main", "HEAD"); return err }},
		{"is-ancestor/binary", func() error {
			_, err := Run(ctx, wt, "merge-base", "--is-ancestor", "HEAD", "refs/heads/main")
			return err
		}},
		{"change-id/go-git", func() error { _, _, err := ReadChangeID(ctx, wt, "HEAD"); return err }},
		{"change-id/binary", func() error {
			_, err := Run(ctx, wt, "log", "-1", "--format=%H%x00%(trailers:key=Change-Id,valueonly,separator=%x00)", "HEAD", "--")
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
