package durable

import (
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
