package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/projections"
)

var t0 = time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)

// isolateGit keeps the user's git configuration out of the tests and gives
// commits an identity.
func isolateGit(t testing.TB) {
	t.Helper()
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   os.DevNull,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
		"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
		"GIT_CEILING_DIRECTORIES": os.TempDir(),
	} {
		t.Setenv(k, v)
	}
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := git.Run(context.Background(), dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

// initSpool does in dir what spool init does: .spool/config.json.
func initSpool(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".spool", "config.json"), "{}\n")
}

// writeFile writes content at path, making its directory.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newRepo(t *testing.T) string {
	t.Helper()
	isolateGit(t)
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	initSpool(t, dir)
	return dir
}

func open(t *testing.T, dir string) (*Store, *[]string) {
	t.Helper()
	var warns []string
	s, err := Open(context.Background(), dir, func(m string) { warns = append(warns, m) })
	if err != nil {
		t.Fatal(err)
	}
	return s, &warns
}

// write appends drafts through the one write path.
func write(t testing.TB, s *Store, drafts ...eventlog.Draft) []eventlog.Event {
	t.Helper()
	evs, _, err := s.Write(context.Background(), t0, "ada", nil, func(*projections.View) ([]eventlog.Draft, error) {
		return drafts, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func writeN(t testing.TB, s *Store, typ string, n int) {
	t.Helper()
	for i := range n {
		write(t, s, eventlog.Draft{Type: typ, Subject: fmt.Sprint(i), Data: map[string]int{"i": i}})
	}
}

// snapshotEvents returns every writer file's bytes, to prove nothing was appended.
func snapshotEvents(t *testing.T, s *Store) map[string]string {
	t.Helper()
	files, err := s.Log.Files()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

func mustBeUnchanged(t *testing.T, s *Store, before map[string]string) {
	t.Helper()
	after := snapshotEvents(t, s)
	if len(after) != len(before) {
		t.Fatalf("writer files: %d before, %d after", len(before), len(after))
	}
	for f, b := range before {
		if after[f] != b {
			t.Fatalf("%s changed", f)
		}
	}
}

// writeMustFail runs the write path expecting err to match want; decide
// must not even run when the log cannot be read.
func writeMustFail(t *testing.T, s *Store, want error) error {
	t.Helper()
	before := snapshotEvents(t, s)
	_, _, err := s.Write(context.Background(), t0, "ada", nil, func(*projections.View) ([]eventlog.Draft, error) {
		return []eventlog.Draft{{Type: "test.refused"}}, nil
	})
	if !errors.Is(err, want) {
		t.Fatalf("Write: err = %v, want %v", err, want)
	}
	mustBeUnchanged(t, s, before)
	return err
}

func ownFile(t *testing.T, s *Store) string {
	t.Helper()
	w, err := s.Log.WriterID()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(EventsDir(s.Repo), w+eventlog.Ext)
}

func replaceLine(t *testing.T, path string, n int, line string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte{'\n'})
	lines[n-1] = []byte(line)
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWriteAndRead(t *testing.T) {
	dir := newRepo(t)
	s, _ := open(t, dir)
	writeN(t, s, "test.done", 3)
	v, err := s.Read(context.Background(), "stats")
	if err != nil {
		t.Fatal(err)
	}
	if st := v.Get("stats").(*projections.Stats); st.Events != 3 || st.ByType["test.done"] != 3 {
		t.Fatalf("stats = %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "spool", "state", "stats.json")); err != nil {
		t.Fatal(err)
	}
	// A domain error appends nothing.
	before := snapshotEvents(t, s)
	refused := errors.New("refused by a rule")
	_, _, err = s.Write(context.Background(), t0, "ada", nil, func(*projections.View) ([]eventlog.Draft, error) {
		return nil, refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("err = %v", err)
	}
	mustBeUnchanged(t, s, before)
}

func TestWriteCorruptMiddleLine(t *testing.T) {
	for _, upToDate := range []bool{true, false} {
		t.Run(fmt.Sprint("projections up to date ", upToDate), func(t *testing.T) {
			dir := newRepo(t)
			s, _ := open(t, dir)
			writeN(t, s, "test.done", 4)
			if !upToDate {
				os.RemoveAll(StateDir(s.Repo))
			}
			path := ownFile(t, s)
			for _, bad := range []string{"{garbage\n", strings.Repeat("x", 300) + "\n", "\n"} {
				b, _ := os.ReadFile(path)
				replaceLine(t, path, 2, bad)
				err := writeMustFail(t, s, eventlog.ErrCorrupt)
				var le *eventlog.LineError
				if !errors.As(err, &le) || le.Path != path || le.Line != 2 {
					t.Fatalf("err = %v, want a *LineError at %s:2", err, path)
				}
				if _, err := s.Read(context.Background()); !errors.Is(err, eventlog.ErrCorrupt) {
					t.Fatalf("Read: err = %v, want ErrCorrupt", err)
				}
				os.WriteFile(path, b, 0o644)
			}
		})
	}
}

func TestWriteCorruptLineOfSameLength(t *testing.T) {
	// An edit that keeps the file's size under an up-to-date checkpoint.
	dir := newRepo(t)
	s, _ := open(t, dir)
	writeN(t, s, "test.done", 4)
	path := ownFile(t, s)
	b, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(b, []byte{'\n'})
	replaceLine(t, path, 2, strings.Repeat("#", len(lines[1])-1)+"\n")
	writeMustFail(t, s, eventlog.ErrCorrupt)
}

func TestWriteNewerEnvelope(t *testing.T) {
	newer := func(t *testing.T, s *Store) string {
		// A valid event of this writer whose envelope claims version 2.
		b, _ := os.ReadFile(ownFile(t, s))
		last := bytes.SplitAfter(b, []byte{'\n'})[0]
		return strings.Replace(string(last), `"v":1`, `"v":2`, 1)
	}
	t.Run("own file, last line", func(t *testing.T) {
		s, _ := open(t, newRepo(t))
		writeN(t, s, "test.done", 2)
		replaceLine(t, ownFile(t, s), 2, newer(t, s))
		err := writeMustFail(t, s, eventlog.ErrNewerVersion)
		if !strings.Contains(err.Error(), "upgrade spool") || errors.Is(err, eventlog.ErrCorrupt) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("merged from another clone", func(t *testing.T) {
		s, _ := open(t, newRepo(t))
		writeN(t, s, "test.done", 2)
		other := filepath.Join(EventsDir(s.Repo), "0000newer"+eventlog.Ext)
		line := strings.ReplaceAll(newer(t, s), `"writer":"`+strings.TrimSuffix(filepath.Base(ownFile(t, s)), eventlog.Ext)+`"`, `"writer":"0000newer"`)
		os.WriteFile(other, []byte(line), 0o644)
		err := writeMustFail(t, s, eventlog.ErrNewerVersion)
		var le *eventlog.LineError
		if !errors.As(err, &le) || le.Path != other || le.Line != 1 {
			t.Fatalf("err = %v, want the newer file's line 1", err)
		}
	})
}

func TestWriteLockTimeout(t *testing.T) {
	dir := newRepo(t)
	os.WriteFile(filepath.Join(dir, ".spool", "config.json"), []byte(`{"lock.timeout":"100ms"}`), 0o644)
	s, _ := open(t, dir)
	writeN(t, s, "test.done", 1)
	held := flock.New(s.Log.LockPath())
	if ok, err := held.TryLock(); !ok || err != nil {
		t.Fatal("cannot take the lock", err)
	}
	defer held.Unlock()
	writeMustFail(t, s, eventlog.ErrLockTimeout)
	// Reading up-to-date projections needs no lock.
	if _, err := s.Read(context.Background()); err != nil {
		t.Fatalf("Read under a held lock: %v", err)
	}
}

func TestOpenNotInitialized(t *testing.T) {
	isolateGit(t)
	dir := t.TempDir()
	runGit(t, dir, "init", "-q")
	_, err := Open(context.Background(), dir, nil)
	if !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("err = %v, want ErrNotInitialized", err)
	}
	f, ok := fault.As(err)
	if !ok || f.Code != "not_initialized" || f.Kind != fault.Environment || !strings.Contains(f.Message, "spool init") {
		t.Fatalf("fault = %+v", f)
	}
}

func TestOpenOutsideGit(t *testing.T) {
	isolateGit(t)
	dir := t.TempDir()
	_, err := Open(context.Background(), dir, nil)
	if !errors.Is(err, git.ErrNotGitRepo) {
		t.Fatalf("err = %v, want git.ErrNotGitRepo", err)
	}
	// A bare repository has no work tree for .spool/.
	runGit(t, dir, "init", "-q", "--bare")
	if _, err := Open(context.Background(), dir, nil); !errors.Is(err, git.ErrNotGitRepo) {
		t.Fatalf("bare: err = %v, want git.ErrNotGitRepo", err)
	}
}

func TestWorktreesShareOneLog(t *testing.T) {
	dir := newRepo(t)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "init")
	main, _ := open(t, dir)
	writeN(t, main, "test.main", 2)

	wt := filepath.Join(t.TempDir(), "linked")
	runGit(t, dir, "worktree", "add", "-q", wt)
	sub := filepath.Join(wt, ".spool")
	linked, _ := open(t, sub)
	if linked.Log.Dir() != main.Log.Dir() || linked.Log.LockPath() != main.Log.LockPath() {
		t.Fatalf("linked worktree: log %s lock %s; primary: log %s lock %s",
			linked.Log.Dir(), linked.Log.LockPath(), main.Log.Dir(), main.Log.LockPath())
	}
	evs := write(t, linked, eventlog.Draft{Type: "test.linked"})
	if evs[0].Seq != 3 {
		t.Fatalf("linked worktree appended seq %d, want 3 (one writer per clone)", evs[0].Seq)
	}
	if files, _ := main.Log.Files(); len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if _, err := os.Stat(filepath.Join(wt, ".spool", "events")); err == nil {
		t.Fatal("the linked worktree got a log in its work tree")
	}
}

func TestOpenInsideGitDir(t *testing.T) {
	dir := newRepo(t)
	if _, err := Open(context.Background(), filepath.Join(dir, ".git"), nil); !errors.Is(err, git.ErrNotGitRepo) {
		t.Fatalf("err = %v, want git.ErrNotGitRepo", err)
	}
}

// A fresh clone's first read brings in the events of the sync branch and
// saves its projections, so that the next read applies only what is new.
func TestFreshCloneReadSaves(t *testing.T) {
	dir := newRepo(t)
	s, _ := open(t, dir)
	writeN(t, s, "test.tick", 5)
	commitLog(t, dir, "refs/remotes/origin/spool-log")
	os.RemoveAll(filepath.Join(dir, ".git", "spool"))
	s, _ = open(t, dir)
	v, err := s.Read(context.Background(), "stats")
	if err != nil {
		t.Fatal(err)
	}
	if st := v.Get("stats").(*projections.Stats); st.Events != 5 {
		t.Fatalf("the fresh clone reads %d events, want the 5 of origin/spool-log", st.Events)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "spool", "state", "stats.snap")); err != nil {
		t.Fatalf("the first read of a fresh clone saved nothing: %v", err)
	}
}

// The first command of a fresh clone of a large log, a read or a write,
// folds the whole log once for every projection, under OnLargeFold, and
// saves every snapshot (prime); below primeSize it folds only what it
// reads, as before. So does the first command after an upgrade, whose
// snapshots are of an older format (upgraded).
func TestFreshCloneOfALargeLogPrimes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int64
		write    bool
		upgraded bool
		folds    int
	}{
		{"read", 1, false, false, 1},
		{"write", 1, true, false, 1},
		{"read of a small log", 1 << 40, false, false, 0},
		{"read after an upgrade", 1, false, true, 1},
		{"write after an upgrade", 1, true, true, 1},
		{"read of a small log after an upgrade", 1 << 40, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(was int64) { primeSize = was }(primeSize)
			primeSize = tc.size
			dir := newRepo(t)
			s, _ := open(t, dir)
			writeN(t, s, "test.tick", 5)
			if tc.upgraded {
				olderFormat(t, StateDir(s.Repo))
			} else {
				os.RemoveAll(StateDir(s.Repo))
			}
			folds := 0
			s, err := Open(context.Background(), dir, nil, OnLargeFold(func() func() {
				folds++
				return func() {}
			}))
			if err != nil {
				t.Fatal(err)
			}
			if tc.write {
				write(t, s, eventlog.Draft{Type: "test.tick", Subject: "x"})
			} else if _, err := s.Read(context.Background(), "stats"); err != nil {
				t.Fatal(err)
			}
			if folds != tc.folds {
				t.Fatalf("%d folds under OnLargeFold, want %d", folds, tc.folds)
			}
			if tc.folds == 0 {
				return
			}
			for _, spec := range Specs {
				if _, err := os.Stat(filepath.Join(StateDir(s.Repo), spec.Name+".snap")); err != nil {
					t.Errorf("%s was not saved: %v", spec.Name, err)
				}
			}
			v, err := s.Read(context.Background(), "stats")
			if err != nil {
				t.Fatal(err)
			}
			want := 5
			if tc.write {
				want = 6
			}
			if st := v.Get("stats").(*projections.Stats); st.Events != want {
				t.Fatalf("stats after priming: %d events, want %d", st.Events, want)
			}
		})
	}
}

// olderFormat makes every snapshot in dir one an older spool wrote.
func olderFormat(t *testing.T, dir string) {
	t.Helper()
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	if len(snaps) != len(Specs) {
		t.Fatalf("%d snapshots, want %d", len(snaps), len(Specs))
	}
	for _, p := range snaps {
		b, _ := os.ReadFile(p)
		head, body, _ := bytes.Cut(b, []byte{'\n'})
		older := regexp.MustCompile(`"format":\d+`).ReplaceAll(head, []byte(`"format":1`))
		if bytes.Equal(older, head) {
			t.Fatalf("%s: no format in %s", p, head)
		}
		if err := os.WriteFile(p, append(append(older, '\n'), body...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// With SPOOL_CHECK_DECIDE a decision that answers differently the second
// time (it keeps state between calls) fails and appends nothing; one that
// answers the same appends once and returns its result.
func TestCheckDecideRunsEveryDecisionTwice(t *testing.T) {
	t.Setenv("SPOOL_CHECK_DECIDE", "1")
	dir := newRepo(t)
	s, _ := open(t, dir)
	ctx := context.Background()
	before := snapshotEvents(t, s)
	calls := 0
	_, err := Write(ctx, s, Local, t0, "ada", nil, func(*projections.View) ([]eventlog.Draft, int, error) {
		calls++
		return []eventlog.Draft{{Type: "x.counted", Subject: "c", Data: map[string]int{"n": calls}}}, calls, nil
	})
	if err == nil || !strings.Contains(err.Error(), "not repeatable") || calls != 2 {
		t.Fatalf("a decision that counts its calls: err %v after %d calls", err, calls)
	}
	mustBeUnchanged(t, s, before)
	_, err = Write(ctx, s, Local, t0, "ada", nil, func(*projections.View) ([]eventlog.Draft, int, error) {
		calls++
		return nil, calls, nil
	})
	if err == nil || !strings.Contains(err.Error(), "returned") {
		t.Fatalf("a decision whose result differs: %v", err)
	}
	w, err := Write(ctx, s, Local, t0, "ada", nil, func(*projections.View) ([]eventlog.Draft, string, error) {
		return []eventlog.Draft{{Type: "x.same", Subject: "c"}}, "ok", nil
	})
	if err != nil || w.Result != "ok" || len(w.Events) != 1 {
		t.Fatalf("a repeatable decision: %+v, %v", w, err)
	}
}

// A receive records the lines of the blobs it read (received.json), one
// per writer file, for spool status to compare with the remote, and the
// identity of the file when it is the blob: a fresh clone's blob streamed
// into place, and then the blob of a file the clone has (its own
// writer's), compared with it as it streams.
func TestReceiveCountsTheBlobsLines(t *testing.T) {
	dir := newRepo(t)
	s, _ := open(t, dir)
	writeN(t, s, "test.tick", 5)
	commitLog(t, dir, "refs/remotes/origin/spool-log")
	blobs := func() map[string]int { // the remote's blobs and their lines
		out := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(runGit(t, dir, "ls-tree", "-r", "refs/remotes/origin/spool-log")), "\n") {
			id := strings.Fields(line)[2]
			out[id] = strings.Count(runGit(t, dir, "cat-file", "-p", id), "\n")
		}
		return out
	}
	os.RemoveAll(filepath.Join(dir, ".git", "spool"))
	for _, step := range []string{"the fresh clone's receive", "the next receive"} {
		s, _ = open(t, dir)
		if _, err := s.Read(context.Background(), "stats"); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for name, f := range s.ReceivedFiles() {
			got[f.Blob] = f.Lines
			fi, err := os.Stat(filepath.Join(EventsDir(s.Repo), name))
			if err != nil || fi.Size() != f.Size || fi.ModTime().UnixNano() != f.MTime || durable.Inode(fi) != f.Inode {
				t.Errorf("after %s: %s recorded as %+v", step, name, f)
			}
		}
		if want := blobs(); !maps.Equal(got, want) {
			t.Fatalf("after %s: %v, want %v", step, got, want)
		}
		writeN(t, s, "test.tick", 2) // this clone's own writer file
		commitLog(t, dir, "refs/remotes/origin/spool-log")
	}
}
