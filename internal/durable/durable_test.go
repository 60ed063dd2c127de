package durable

import (
	"io"
	"os"
	"path/filepath"
	"testing"
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
