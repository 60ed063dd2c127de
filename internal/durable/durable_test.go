package durable

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "f")
	if err := WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	st, _ := os.Stat(path)
	if err != nil || string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Fatalf("%q %v %v", b, st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
}

func TestCreateNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if ok, err := CreateNew(path, []byte("first"), 0o644); !ok || err != nil {
		t.Fatalf("first create: %v %v", ok, err)
	}
	if ok, err := CreateNew(path, []byte("second"), 0o644); ok || err != nil {
		t.Fatalf("second create: %v %v", ok, err)
	}
	b, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(filepath.Dir(path))
	if string(b) != "first" || len(entries) != 1 {
		t.Fatalf("%q, %d entries", b, len(entries))
	}
}

func TestWriteStream(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "f")
	b := NewBatch("")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := b.WriteStream(path, 0o600, write("one"), nil); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(path)
	// Left in place when unchanged says so: same inode, same bytes.
	if err := b.WriteStream(path, 0o600, write("two"), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "one" {
		t.Fatalf("replaced although unchanged: %q", got)
	}
	if err := b.WriteStream(path, 0o644, write("three"), func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if err := b.Done(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	st2, _ := os.Stat(path)
	if string(got) != "three" || os.SameFile(st1, st2) || st2.Mode().Perm() != 0o600 {
		t.Fatalf("%q, replaced %v, mode %v (an existing file keeps its mode)", got, !os.SameFile(st1, st2), st2.Mode())
	}
	// A failed write leaves the old file and no temp file.
	if err := b.WriteStream(path, 0o600, func(w io.Writer) error { return io.ErrShortWrite }, nil); err != io.ErrShortWrite {
		t.Fatalf("error %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if got, _ := os.ReadFile(path); string(got) != "three" || len(entries) != 1 {
		t.Fatalf("%q, %d entries", got, len(entries))
	}
}

// A file is written beside itself before its rename, never in the
// system's temp directory: a process killed between the two left its
// copy there for good (renameio's default when both are one file system).
func TestTempFilesBesideTheFile(t *testing.T) {
	sys := t.TempDir()
	t.Setenv("TMPDIR", sys) // the same file system as dir
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	b := NewBatch("")
	err := b.WriteStream(path, 0o644, func(w io.Writer) error {
		if entries, _ := os.ReadDir(sys); len(entries) > 0 {
			t.Errorf("a temp file in the system's temp directory: %v", entries)
		}
		if beside, _ := filepath.Glob(filepath.Join(dir, ".f*")); len(beside) != 1 {
			t.Errorf("temp files beside the file: %v", beside)
		}
		_, err := io.WriteString(w, "x")
		return err
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(sys); len(entries) > 0 {
		t.Errorf("left in the system's temp directory: %v", entries)
	}
}

// Within follows links only as far as the root: a file or a directory on
// the way that is a link leading outside, or into .git, is ErrOutside; one
// that stays inside resolves to its target; what does not exist yet
// resolves as far as it does.
func TestWithin(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(root, ".git"), filepath.Join(root, "real"), outside} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(root, "real", "p.md"), []byte("x"), 0o600)
	links := map[string]string{
		"out":      outside,
		"out.md":   filepath.Join(outside, "secret"),
		"rel.md":   "../outside/secret",
		"git":      ".git",
		"in":       "real",
		"in.md":    "real/p.md",
		"dangling": "real/nothing/here",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path, want string // want "" for ErrOutside
	}{
		{"real/p.md", "real/p.md"},
		{"in.md", "real/p.md"},
		{"in/p.md", "real/p.md"},
		{"in/new/x.json", "real/new/x.json"},
		{"new/deeper/x.json", "new/deeper/x.json"},
		{"out/secret", ""},
		{"out/new.json", ""},
		{"out.md", ""},
		{"rel.md", ""},
		{"git/config", ""},
		{".git/config", ""},
		{"dangling", ""},
		{"dangling/x", ""},
		{"../outside/secret", ""},
	} {
		got, err := Within(root, filepath.Join(root, filepath.FromSlash(c.path)))
		rroot, _ := filepath.EvalSymlinks(root)
		switch {
		case c.want == "" && !errors.Is(err, ErrOutside):
			t.Errorf("%s: %s, %v; want ErrOutside", c.path, got, err)
		case c.want != "" && (err != nil || got != filepath.Join(rroot, filepath.FromSlash(c.want))):
			t.Errorf("%s: %s, %v; want %s", c.path, got, err, c.want)
		}
	}
}

// A write of a file spool keeps in the work tree removes the temp files
// beside it that a writer killed before its rename left, once they are old
// enough that no live writer owns them; nothing else in the directory. A
// write of a path a user names removes nothing.
func TestWriteSweepsStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	old := time.Now().Add(-2 * staleAfter)
	files := map[string]bool{ // name: swept
		".config.json8174": true, ".config.json1": true,
		".config.json": false, ".config.jsonx1": false, ".config.json.bak": false, "config.json1": false, ".other.json123": false,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(dir, ".config.json99") // a live writer's
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files[".config.json99"] = false
	if err := WriteFile(path, []byte("[]"), 0o644); err != nil { // a file a user names: their directory
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".config.json8174")); err != nil {
		t.Fatalf("WriteFile swept: %v", err)
	}
	if err := WriteWorkTreeFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, swept := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); os.IsNotExist(err) != swept {
			t.Errorf("%s: swept %v, want %v", name, os.IsNotExist(err), swept)
		}
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{}" {
		t.Fatalf("config.json: %q, %v", b, err)
	}
}

// A cache is what its writer wrote, written aside (in tmpDir when given)
// and renamed: nothing is left beside it, and a failed write leaves the
// old file and no temp file.
func TestWriteCacheIn(t *testing.T) {
	t.Parallel()
	dir, tmp := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "c.over")
	if err := WriteCacheIn(path, tmp, func(w io.Writer) error {
		for _, part := range []string{"head\n", "", "body"} {
			if _, err := io.WriteString(w, part); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "head\nbody" {
		t.Fatalf("%q, %v", b, err)
	}
	if err := WriteCache(path, []byte("whole")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "whole" {
		t.Fatalf("%q", b)
	}
	// As every file spool writes (0644 less the umask), not CreateTemp's
	// 0600: a teammate's spool in a shared clone reads it too.
	like := filepath.Join(tmp, "like")
	if err := os.WriteFile(like, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(like)
	os.Remove(like)
	if fi, err := os.Stat(path); err != nil || fi.Mode() != want.Mode() {
		t.Fatalf("mode %v, want %v (%v)", fi.Mode(), want.Mode(), err)
	}
	if err := WriteCacheIn(path, filepath.Join(tmp, "missing"), func(io.Writer) error { return nil }); err == nil {
		t.Fatal("a temp directory that is not there: no error")
	}
	if err := WriteCacheIn(path, tmp, func(w io.Writer) error { io.WriteString(w, "half"); return errors.New("stopped") }); err == nil {
		t.Fatal("a writer's error: no error")
	}
	for _, d := range []string{dir, tmp} {
		if entries, _ := os.ReadDir(d); len(entries) != map[string]int{dir: 1, tmp: 0}[d] {
			t.Fatalf("%s holds %v", d, entries)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "whole" {
		t.Fatalf("after a failed write: %q", b)
	}
}
