package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// A repack that deletes the packs the object database had loaded (git gc
// does, and git fetch runs gc --auto) does not stop in-process reads: the
// object is looked for again in the packs there are now.
func TestReadAfterRepack(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	r.Git(r.Root, "repack", "-a", "-d", "-q")
	first := r.Git(r.Root, "rev-parse", "HEAD")
	if _, err := RevParse(ctx, r.Root, first); err != nil {
		t.Fatal(err)
	}
	r.Commit(r.Root, "b.txt", "b\n", "two")
	r.Git(r.Root, "repack", "-a", "-d", "-q")
	if got, err := RevParse(ctx, r.Root, first); err != nil || got != first {
		t.Errorf("after the repack, RevParse(%s) = %q, %v", first, got, err)
	}
}

// TreeFiles, TreeOf and ReadBlob read in process what git ls-tree,
// rev-parse and cat-file read: the files of a directory, with its
// subdirectories as files in parts (a tree that is not one is no file to
// ReadBlob), none for a directory the commit lacks, and a blob's bytes.
func TestTreeReads(t *testing.T) {
	r := gittest.New(t, map[string]string{"events/a.jsonl": "a\n", "events/b.jsonl": "b\nb\n", "events/sub/c.jsonl": "c\n"})
	ctx := context.Background()
	head := r.Git(r.Root, "rev-parse", "HEAD")
	files, err := TreeFiles(ctx, r.Root, head, "events")
	if err != nil || len(files) != 3 || files["a.jsonl"].Parts || !files["sub"].Parts {
		t.Fatalf("TreeFiles(events) = %v, %v; want a.jsonl, b.jsonl and sub in parts", files, err)
	}
	for name, b := range files {
		if want := r.Git(r.Root, "rev-parse", head+":events/"+name); b.Hash != want {
			t.Errorf("%s: %s, git says %s", name, b.Hash, want)
		}
		got, err := ReadBlob(ctx, r.Root, b.Hash)
		if b.Parts {
			if !errors.Is(err, ErrNotAFile) {
				t.Errorf("ReadBlob(%s), a tree of no parts: %q, %v", name, got, err)
			}
		} else if err != nil || string(got) != r.Git(r.Root, "cat-file", "blob", b.Hash)+"\n" {
			t.Errorf("ReadBlob(%s) = %q, %v", name, got, err)
		}
	}
	if root, err := TreeFiles(ctx, r.Root, head, ""); err != nil || len(root) != 2 || root["README"].Hash == "" {
		t.Errorf("TreeFiles of the root = %v, %v; want README and events", root, err)
	}
	if none, err := TreeFiles(ctx, r.Root, head, "nope"); err != nil || len(none) != 0 {
		t.Errorf("TreeFiles of a missing directory = %v, %v", none, err)
	}
	if tree, err := TreeOf(ctx, r.Root, head); err != nil || tree != r.Git(r.Root, "rev-parse", head+"^{tree}") {
		t.Errorf("TreeOf = %q, %v", tree, err)
	}
}

// A history that references the empty tree without the repository
// storing it, as a fetch killed after the rest of the objects leaves it
// (git takes the empty tree for present, so the next fetch does not bring
// it): in-process reads go through it as git does, and store it.
func TestEmptyTreeNotStored(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	loose := filepath.Join(r.Root, ".git", "objects", EmptyTree[:2], EmptyTree[2:])
	os.Remove(loose) // git commit may have written it; a fetch need not have
	cmd := exec.Command("git", "mktree")
	cmd.Dir, cmd.Stdin = r.Root, strings.NewReader("040000 tree "+EmptyTree+"\tevents\n")
	root, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := r.Git(r.Root, "commit-tree", strings.TrimSpace(string(root)), "-m", "spool sync: 0 events")
	r.Git(r.Root, "update-ref", "refs/heads/spool-log", commit)
	if _, err := os.Stat(loose); err == nil {
		t.Fatal("git stored the empty tree; the test needs a repository without it")
	}
	err = ReadHistory(ctx, r.Root, func(h *History) error {
		tree, files, err := h.TreeDir(commit, "events")
		if err == nil && (tree != EmptyTree || len(files) != 0) {
			t.Errorf("TreeDir(events) = %s, %v; want the empty tree, no files", tree, files)
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading a history that references the empty tree: %v", err)
	}
	if out, err := exec.Command("git", "-C", r.Root, "fsck", "--no-dangling", "--connectivity-only").CombinedOutput(); err != nil || strings.Contains(string(out), "missing") {
		t.Errorf("git fsck after the read: %v\n%s", err, out)
	}
}

// A blob over the object database's large-object threshold (1 MiB) reads
// back whole and its lines count as bytes.Count does, loose and packed,
// with and without a torn last line; a small one too.
func TestLargeBlobs(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	var sb strings.Builder
	for i := 0; sb.Len() < 3<<20; i++ {
		sb.WriteString(`{"seq":` + strings.Repeat("7", i%40) + "}\n")
	}
	for i, content := range []string{sb.String(), sb.String() + `{"torn`, "one\ntwo\n"} {
		name := fmt.Sprintf("blob%d", i)
		r.Write(r.Root, name, content)
		hash := r.Git(r.Root, "hash-object", "-w", name)
		for _, packed := range []bool{false, true} {
			if packed {
				r.Git(r.Root, "add", name) // reachable from the index: kept by repack
				r.Git(r.Root, "repack", "-a", "-d", "-q")
			}
			got, err := ReadBlob(ctx, r.Root, hash)
			if err != nil || string(got) != content {
				t.Fatalf("ReadBlob of %d bytes (packed %v): %d bytes, %v", len(content), packed, len(got), err)
			}
			n, err := BlobLines(ctx, r.Root, hash)
			if want := strings.Count(content, "\n"); err != nil || n != want {
				t.Fatalf("BlobLines (packed %v) = %d, %v; want %d", packed, n, err, want)
			}
			var copied bytes.Buffer // git's reader for the large ones, go-git's for the small
			if err := CopyBlob(ctx, r.Root, hash, &copied); err != nil || copied.String() != content {
				t.Fatalf("CopyBlob of %d bytes (packed %v): %d bytes, %v", len(content), packed, copied.Len(), err)
			}
		}
	}
}

// A large blob copied to a writer that fails part way: CopyBlob returns
// the writer's error, at once (a git left waiting on a full pipe would
// hang it).
func TestCopyBlobToAWriterThatFails(t *testing.T) {
	r := gittest.New(t, nil)
	r.Write(r.Root, "big", strings.Repeat("0123456789abcdef\n", 8<<20/17)) // 8 MiB: more than a pipe holds
	hash := r.Git(r.Root, "hash-object", "-w", "big")
	full := errors.New("disk full")
	done := make(chan error, 1)
	go func() {
		done <- CopyBlob(context.Background(), r.Root, hash, &failingWriter{after: 64 << 10, err: full})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, full) {
			t.Fatalf("CopyBlob: %v, want the writer's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("CopyBlob still runs 20 s after its writer failed")
	}
}

// A replace ref does not change what CopyBlob copies: the object as
// stored, as go-git reads it (git cat-file would follow the ref).
func TestCopyBlobIgnoresReplaceRefs(t *testing.T) {
	r := gittest.New(t, nil)
	content := strings.Repeat("a line of the writer file\n", 2<<20/26)
	r.Write(r.Root, "big", content)
	hash := r.Git(r.Root, "hash-object", "-w", "big")
	r.Write(r.Root, "other", content+"more\n")
	r.Git(r.Root, "replace", hash, r.Git(r.Root, "hash-object", "-w", "other"))
	var got bytes.Buffer
	if err := CopyBlob(context.Background(), r.Root, hash, &got); err != nil || got.String() != content {
		t.Fatalf("CopyBlob: %d bytes of %d, %v", got.Len(), len(content), err)
	}
}

// A copy that a missing pack interrupts is not read again into the same
// writer (ReadHistory's retry after a repack): its start would be written
// twice. The pack is made to go missing by the writer's error, on go-git's
// reader (no git on PATH).
func TestCopyBlobIsNotRetriedOnceBegun(t *testing.T) {
	r := gittest.New(t, nil)
	content := strings.Repeat("0123456789abcdef\n", 4<<20/17)
	r.Write(r.Root, "big", content)
	hash := r.Git(r.Root, "hash-object", "-w", "big")
	t.Setenv("PATH", "")
	w := &packGoneWriter{after: 64 << 10}
	err := CopyBlob(context.Background(), r.Root, hash, w)
	if err == nil || w.n > int64(len(content)) || !strings.HasPrefix(content, w.b.String()) {
		t.Fatalf("CopyBlob: %v; %d bytes written of %d, a prefix %v", err, w.n, len(content), strings.HasPrefix(content, w.b.String()))
	}
	var whole bytes.Buffer
	if err := CopyBlob(context.Background(), r.Root, hash, &whole); err != nil || whole.String() != content {
		t.Fatalf("CopyBlob again: %d bytes, %v", whole.Len(), err)
	}
}

// packGoneWriter fails once, after some bytes, as a read whose pack went
// missing does.
type packGoneWriter struct {
	b        bytes.Buffer
	n, after int64
	failed   bool
}

func (w *packGoneWriter) Write(p []byte) (int, error) {
	if !w.failed && w.n+int64(len(p)) > w.after {
		w.failed = true
		return 0, fmt.Errorf("read: %w", dotgit.ErrPackfileNotFound)
	}
	w.n += int64(len(p))
	return w.b.Write(p)
}

type failingWriter struct {
	n, after int
	err      error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n > w.after {
		return 0, w.err
	}
	return len(p), nil
}

// WriteBlobFrom stores what WriteBlob stores, as git hash-object would
// name it, streamed; a reader shorter or longer than the size it was
// given fails, and stores nothing.
func TestWriteBlobFromAsWriteBlob(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	for _, content := range []string{"", "a\n", strings.Repeat("{\"x\":1}\n", 100000)} {
		want, err := WriteBlob(ctx, r.Root, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "f"), []byte(content), 0o644)
		if h := r.Git(r.Root, "hash-object", filepath.Join(dir, "f")); h != want {
			t.Fatalf("WriteBlob %s, git hash-object %s", want, h)
		}
		got, err := WriteBlobFrom(ctx, r.Root, strings.NewReader(content), int64(len(content)))
		if err != nil || got != want {
			t.Fatalf("%d bytes: WriteBlobFrom %s, %v; WriteBlob %s", len(content), got, err, want)
		}
		if back := r.Git(r.Root, "cat-file", "-s", got); back != fmt.Sprint(len(content)) {
			t.Fatalf("git reads %s bytes of %d", back, len(content))
		}
	}
	for _, n := range []int64{10, 3} { // short, then long
		if _, err := WriteBlobFrom(ctx, r.Root, strings.NewReader("bytes"), n); err == nil {
			t.Fatalf("5 bytes stored as %d", n)
		}
	}
	r.Git(r.Root, "fsck", "--no-dangling") // a damaged object fails it
	if tmp, _ := filepath.Glob(filepath.Join(r.Root, ".git", "objects", "pack", "tmp_obj_*")); len(tmp) > 0 {
		t.Fatalf("left behind: %v", tmp)
	}
}
