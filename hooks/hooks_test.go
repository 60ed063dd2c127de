package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// setupGit isolates git from the user's and system config and from any
// repository the test binary happens to run inside (e.g. from a git hook).
func setupGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "SPOOL_BIN"} {
		unsetenv(t, k)
	}
}

// unsetenv removes an env var for the test; t.Setenv first registers the restore.
func unsetenv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "")
	os.Unsetenv(k)
}

func tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := tryGit(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// newRepo makes a repo with one commit on main and returns its path.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	runGit(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

func hooksDir(t *testing.T, repo string) string {
	t.Helper()
	d, err := Dir(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeSpool writes a stand-in spool binary that appends its argv and stdin
// to the returned log file, then exits with code. SPOOL_BIN points at it.
func fakeSpool(t *testing.T, code int) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "spool.log")
	bin := filepath.Join(dir, "fake-spool")
	writeScript(t, bin, fmt.Sprintf("{ echo \"ARGS: $*\"; cat; } >>'%s'\nexit %d\n", log, code))
	t.Setenv("SPOOL_BIN", bin)
	return log
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func statusOf(t *testing.T, sts []Status, name string) Status {
	t.Helper()
	for _, s := range sts {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for %s in %+v", name, sts)
	return Status{}
}

func TestInstallFreshIdempotent(t *testing.T) {
	setupGit(t)
	repo := newRepo(t)
	dir := hooksDir(t, repo)
	if want := filepath.Join(repo, ".git", "hooks"); dir != want {
		t.Fatalf("Dir = %q, want %q", dir, want)
	}

	sts, err := Install(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != len(Names) {
		t.Fatalf("got %d statuses, want %d", len(sts), len(Names))
	}
	first := map[string][]byte{}
	for i, s := range sts {
		if s.Name != Names[i] || s.State != Installed || s.Chained || s.Path != filepath.Join(dir, s.Name) {
			t.Errorf("status %d = %+v", i, s)
		}
		fi, err := os.Stat(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("%s mode = %v, want 0755", s.Name, fi.Mode().Perm())
		}
		first[s.Name] = []byte(readFile(t, s.Path))
	}

	if _, err := Install(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range Names {
		if got := readFile(t, filepath.Join(dir, name)); got != string(first[name]) {
			t.Errorf("%s changed on second install", name)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*"+origSuffix))
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if len(leftovers)+len(tmps) > 0 {
		t.Errorf("unexpected files: %v %v", leftovers, tmps)
	}
	sts, err = Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.State != Installed || s.Chained {
			t.Errorf("Inspect: %+v", s)
		}
	}
}

func TestChainedPostCommitAndUninstall(t *testing.T) {
	setupGit(t)
	repo := newRepo(t)
	dir := hooksDir(t, repo)
	log := fakeSpool(t, 0)

	marks := filepath.Join(t.TempDir(), "orig.log")
	origPath := filepath.Join(dir, "post-commit")
	origBody := fmt.Sprintf("#!/bin/sh\necho \"original $#\" >>'%s'\n", marks)
	if err := os.WriteFile(origPath, []byte(origBody), 0o750); err != nil {
		t.Fatal(err)
	}

	for range 2 { // the second install must not back up our own shim
		sts, err := Install(dir)
		if err != nil {
			t.Fatal(err)
		}
		if s := statusOf(t, sts, "post-commit"); s.State != Installed || !s.Chained {
			t.Fatalf("post-commit status = %+v", s)
		}
		if s := statusOf(t, sts, "post-merge"); s.Chained {
			t.Fatalf("post-merge status = %+v", s)
		}
	}
	if got := readFile(t, origPath+origSuffix); got != origBody {
		t.Fatalf("backup = %q, want %q", got, origBody)
	}

	runGit(t, repo, "commit", "-q", "--allow-empty", "-m", "second")
	if got := readFile(t, marks); got != "original 0\n" {
		t.Errorf("original hook log = %q", got)
	}
	if got := readFile(t, log); got != "ARGS: hook post-commit\n" {
		t.Errorf("spool log = %q", got)
	}

	sts, err := Uninstall(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		want := Missing
		if s.Name == "post-commit" {
			want = Foreign
		}
		if s.State != want || s.Chained {
			t.Errorf("after uninstall: %+v, want %s", s, want)
		}
	}
	if got := readFile(t, origPath); got != origBody {
		t.Errorf("restored = %q, want %q", got, origBody)
	}
	fi, err := os.Stat(origPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Errorf("restored mode = %v, want 0750", fi.Mode().Perm())
	}
	if _, err := os.Lstat(origPath + origSuffix); !os.IsNotExist(err) {
		t.Errorf("backup still present: %v", err)
	}

	// Uninstall again is a no-op that leaves the foreign hook alone.
	if _, err := Uninstall(dir); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, origPath); got != origBody {
		t.Errorf("second uninstall touched foreign hook: %q", got)
	}
}

func TestHooksPathRelative(t *testing.T) {
	setupGit(t)
	repo := newRepo(t)
	runGit(t, repo, "config", "core.hooksPath", ".githooks")
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(repo, ".githooks")
	for _, from := range []string{repo, sub} {
		if got := hooksDir(t, from); got != want {
			t.Errorf("Dir(%s) = %q, want %q", from, got, want)
		}
	}

	if _, err := Install(want); err != nil { // creates the missing directory
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(want, "post-commit")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "post-commit")); err == nil {
		t.Error("shim written to .git/hooks despite core.hooksPath")
	}
	log := fakeSpool(t, 0)
	runGit(t, repo, "commit", "-q", "--allow-empty", "-m", "second")
	if got := readFile(t, log); got != "ARGS: hook post-commit\n" {
		t.Errorf("spool log = %q", got)
	}
}

// pathWithoutSpool returns PATH minus any directory holding a "spool".
func pathWithoutSpool() string {
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "spool")); err != nil {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

func TestSpoolMissing(t *testing.T) {
	for _, tc := range []struct {
		name, bin string
		chained   bool
	}{
		{name: "SPOOL_BIN nonexistent", bin: "/nonexistent/spool"},
		{name: "default not on PATH", bin: ""},
		{name: "chained", bin: "/nonexistent/spool", chained: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setupGit(t)
			repo := newRepo(t)
			dir := hooksDir(t, repo)
			t.Setenv("PATH", pathWithoutSpool())
			marks := filepath.Join(t.TempDir(), "orig.log")
			if tc.chained {
				writeScript(t, filepath.Join(dir, "post-commit"), fmt.Sprintf("echo ran >'%s'\n", marks))
			}
			if _, err := Install(dir); err != nil {
				t.Fatal(err)
			}
			t.Setenv("SPOOL_BIN", tc.bin)

			out, err := tryGit(repo, "commit", "--allow-empty", "-m", "second")
			if err != nil {
				t.Fatalf("commit failed: %v\n%s", err, out)
			}
			if !strings.Contains(out, "spool: not found on PATH; post-commit hook skipped") {
				t.Errorf("output lacks skip notice:\n%s", out)
			}
			if got := runGit(t, repo, "rev-list", "--count", "HEAD"); got != "2" {
				t.Errorf("commit count = %s, want 2", got)
			}
			if tc.chained && readFile(t, marks) != "ran\n" {
				t.Error("original hook did not run")
			}
		})
	}
}

func TestPrePush(t *testing.T) {
	for _, tc := range []struct {
		name      string
		orig      string // "", "ok" or "fail"
		spoolCode int
		wantPush  bool
		wantSpool bool
		missing   string // "nonexistent" or "noexec": SPOOL_BIN is unusable
	}{
		{name: "spool refuses", spoolCode: 1, wantPush: false, wantSpool: true},
		{name: "spool accepts", spoolCode: 0, wantPush: true, wantSpool: true},
		{name: "chained spool accepts", orig: "ok", spoolCode: 0, wantPush: true, wantSpool: true},
		{name: "chained spool refuses", orig: "ok", spoolCode: 1, wantPush: false, wantSpool: true},
		{name: "chained original refuses", orig: "fail", spoolCode: 0, wantPush: false, wantSpool: false},
		{name: "spool missing", missing: "nonexistent", wantPush: true},
		{name: "spool not executable", missing: "noexec", wantPush: true},
		{name: "chained spool missing", orig: "ok", missing: "nonexistent", wantPush: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setupGit(t)
			repo := newRepo(t)
			remote := filepath.Join(t.TempDir(), "remote.git")
			runGit(t, repo, "init", "-q", "--bare", remote)
			runGit(t, repo, "remote", "add", "origin", remote)
			dir := hooksDir(t, repo)
			log := fakeSpool(t, tc.spoolCode)

			origLog := filepath.Join(t.TempDir(), "orig.log")
			if tc.orig != "" {
				code := map[string]int{"ok": 0, "fail": 1}[tc.orig]
				writeScript(t, filepath.Join(dir, "pre-push"),
					fmt.Sprintf("{ echo \"ARGS: $*\"; cat; } >'%s'\nexit %d\n", origLog, code))
			}
			if _, err := Install(dir); err != nil {
				t.Fatal(err)
			}
			isolateTmp(t)
			if tc.missing != "" {
				bin := filepath.Join(t.TempDir(), "spool")
				if tc.missing == "noexec" {
					if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				t.Setenv("SPOOL_BIN", bin)
			}

			out, err := tryGit(repo, "push", "origin", "main")
			if pushed := err == nil; pushed != tc.wantPush {
				t.Fatalf("push succeeded = %v, want %v\n%s", pushed, tc.wantPush, out)
			}
			if skipped := strings.Contains(out, "pre-push hook skipped"); skipped != (tc.missing != "") {
				t.Errorf("skip notice = %v, want %v\n%s", skipped, !skipped, out)
			}
			_, remoteErr := tryGit(remote, "rev-parse", "--verify", "-q", "refs/heads/main")
			if (remoteErr == nil) != tc.wantPush {
				t.Errorf("remote has main = %v, want %v", remoteErr == nil, tc.wantPush)
			}

			sha := runGit(t, repo, "rev-parse", "HEAD")
			line := "refs/heads/main " + sha + " refs/heads/main " + strings.Repeat("0", len(sha))
			want := "ARGS: origin " + remote + "\n" + line + "\n"
			if tc.orig != "" {
				if got := readFile(t, origLog); got != want {
					t.Errorf("original got %q, want %q", got, want)
				}
			}
			assertNoTemps(t)
			if !tc.wantSpool {
				if _, err := os.Stat(log); !os.IsNotExist(err) {
					t.Errorf("spool ran after the original refused")
				}
				return
			}
			want = "ARGS: hook pre-push origin " + remote + "\n" + line + "\n"
			if got := readFile(t, log); got != want {
				t.Errorf("spool got %q, want %q", got, want)
			}
		})
	}
}

// TestPostRewriteChainedStdin covers the other stdin hook via git commit --amend.
func TestPostRewriteChainedStdin(t *testing.T) {
	setupGit(t)
	repo := newRepo(t)
	dir := hooksDir(t, repo)
	log := fakeSpool(t, 0)
	origLog := filepath.Join(t.TempDir(), "orig.log")
	writeScript(t, filepath.Join(dir, "post-rewrite"), fmt.Sprintf("{ echo \"ARGS: $*\"; cat; } >'%s'\n", origLog))
	isolateTmp(t)
	if _, err := Install(dir); err != nil {
		t.Fatal(err)
	}
	old := runGit(t, repo, "rev-parse", "HEAD")
	runGit(t, repo, "commit", "-q", "--amend", "--allow-empty", "-m", "amended")
	amended := runGit(t, repo, "rev-parse", "HEAD")

	stdin := old + " " + amended + "\n"
	if got := readFile(t, origLog); got != "ARGS: amend\n"+stdin {
		t.Errorf("original got %q", got)
	}
	// The amend also fires post-commit, which logs first.
	want := "ARGS: hook post-commit\nARGS: hook post-rewrite amend\n" + stdin
	if got := readFile(t, log); got != want {
		t.Errorf("spool got %q, want %q", got, want)
	}
	assertNoTemps(t)
}

// isolateTmp points mktemp at a fresh directory so assertNoTemps can check
// that the shim's EXIT trap removed its stdin copy.
func isolateTmp(t *testing.T) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
}

func assertNoTemps(t *testing.T) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "tmp.*")); len(left) > 0 {
		t.Errorf("shim left temp files: %v", left)
	}
}

func TestInspect(t *testing.T) {
	const name = "post-commit"
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string)
		state   State
		chained bool
	}{
		{name: "missing", setup: func(*testing.T, string) {}, state: Missing},
		{name: "foreign", setup: func(t *testing.T, dir string) {
			writeScript(t, filepath.Join(dir, name), "echo hi\n")
		}, state: Foreign},
		{name: "foreign mentioning spool", setup: func(t *testing.T, dir string) {
			writeScript(t, filepath.Join(dir, name), "spool hook post-commit\n")
		}, state: Foreign},
		{name: "dangling symlink", setup: func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}, state: Foreign},
		{name: "ours", setup: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), shim(name), 0o755); err != nil {
				t.Fatal(err)
			}
		}, state: Installed},
		{name: "ours older version", setup: func(t *testing.T, dir string) {
			writeScript(t, filepath.Join(dir, name), "# spool-hook-shim v0\nexec spool hook post-commit\n")
		}, state: Installed},
		{name: "ours chained", setup: func(t *testing.T, dir string) {
			writeScript(t, filepath.Join(dir, name+origSuffix), "echo hi\n")
			if err := os.WriteFile(filepath.Join(dir, name), shim(name), 0o755); err != nil {
				t.Fatal(err)
			}
		}, state: Installed, chained: true},
		{name: "missing with stray backup", setup: func(t *testing.T, dir string) {
			writeScript(t, filepath.Join(dir, name+origSuffix), "echo hi\n")
		}, state: Missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			sts, err := Inspect(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := Status{Name: name, State: tc.state, Chained: tc.chained, Path: filepath.Join(dir, name)}
			if got := statusOf(t, sts, name); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if got := statusOf(t, sts, "pre-push"); got.State != Missing {
				t.Errorf("pre-push = %+v", got)
			}
		})
	}
}

// TestInstallRefusesToClobberBackup: a foreign hook plus an existing backup
// (e.g. another tool replaced our shim) must not lose either file.
func TestInstallRefusesToClobberBackup(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, filepath.Join(dir, "pre-push"), "echo new\n")
	writeScript(t, filepath.Join(dir, "pre-push"+origSuffix), "echo old\n")
	// Free to move aside, but must stay where it is when Install refuses.
	writeScript(t, filepath.Join(dir, "post-commit"), "echo mine\n")
	if _, err := Install(dir); !errors.Is(err, ErrBackupExists) {
		t.Fatalf("Install: %v, want ErrBackupExists", err)
	}
	// Refused before anything changed: no shim for the hooks that were free,
	// and a foreign hook earlier in Names is not moved aside.
	sts, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.State == Installed {
			t.Errorf("%s installed by a refused Install", st.Name)
		}
	}
	if got := readFile(t, filepath.Join(dir, "post-commit")); !strings.Contains(got, "echo mine") {
		t.Errorf("post-commit changed: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "pre-push")); !strings.Contains(got, "echo new") {
		t.Errorf("hook changed: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "pre-push"+origSuffix)); got != "#!/bin/sh\necho old\n" {
		t.Errorf("backup changed: %q", got)
	}
}
