package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/spoolhq/spool/internal/fault"
)

// Objects a sync or a claim writes (a blob per changed writer file and two
// trees) go into the object database in process, and those it reads (the
// fetched tip's tree and the writer files that changed) come from it: a
// git process per object costs more, on a busy machine, than the claim's
// push.

// Blob is a file of a tree: its object id, a blob's or, for a file stored
// in parts (see PartSize), a tree's.
type Blob struct {
	Hash  string
	Parts bool
}

// TreeFiles lists the files directly in dir of commit's tree ("" for the
// root) by name: none when commit has no such directory, or is not in the
// repository.
func TreeFiles(ctx context.Context, repo, commit, dir string) (map[string]Blob, error) {
	files := map[string]Blob{}
	err := readCommit(ctx, repo, commit, func(c *object.Commit) error {
		tree, err := c.Tree()
		if err == nil && dir != "" {
			tree, err = tree.Tree(dir)
		}
		if errors.Is(err, object.ErrDirectoryNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range tree.Entries {
			if e.Mode.IsFile() || e.Mode == filemode.Dir {
				files[e.Name] = Blob{Hash: e.Hash.String(), Parts: e.Mode == filemode.Dir}
			}
		}
		return nil
	})
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return map[string]Blob{}, nil
	}
	return files, err
}

// TreeOf is a commit's tree.
func TreeOf(ctx context.Context, repo, commit string) (string, error) {
	var tree string
	err := readCommit(ctx, repo, commit, func(c *object.Commit) error {
		tree = c.TreeHash.String()
		return nil
	})
	return tree, err
}

// ReadBlob is a file's content: a blob's, or a tree of parts'.
func ReadBlob(ctx context.Context, repo, hash string) ([]byte, error) {
	var content []byte
	err := ReadHistory(ctx, repo, func(h *History) (err error) {
		content, err = h.ReadBlob(hash)
		return err
	})
	return content, err
}

// CopyBlob copies the file hash (a blob, or a tree of parts) to w as it
// reads it; a large one comes out of git's own reader (catBlob, catParts),
// or go-git's when git cannot be started.
func CopyBlob(ctx context.Context, repo, hash string, w io.Writer) error {
	cw := &countingWriter{w: w}
	return ReadHistory(ctx, repo, func(h *History) error {
		// ReadHistory reads again once after a pack went missing (a
		// repack under it): a copy that had begun would write its start
		// twice.
		if cw.n > 0 {
			return fmt.Errorf("blob %s: its pack changed after %d bytes were copied", hash, cw.n)
		}
		return h.readFile(hash, func(size int64, parts []Part, rd io.Reader) error {
			if parts != nil {
				return h.copyParts(ctx, repo, parts, cw)
			}
			if size > catBlobSize { // go-git reads smaller ones into memory at once
				if err := catBlob(ctx, repo, hash, size, cw); !errors.Is(err, errNotStarted) {
					return err
				}
			}
			_, err := io.Copy(cw, rd)
			return err
		})
	})
}

// countingWriter counts what it writes.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// catBlobSize is the size above which CopyBlob has git inflate a blob (git
// cat-file, a process of its own, so on another core than what w does with
// it): go-git's inflate took 3.3 s for a writer file of a million events
// (290 MB), git's 1 s; a process costs a few milliseconds.
const catBlobSize = 1 << 20

// errNotStarted is a git that could not be started: nothing was written.
var errNotStarted = errors.New("git not started")

// catBlob copies blob hash, of size bytes, to w out of git cat-file (the
// object as stored: no replace refs, as go-git reads it); a copy of another
// size fails.
func catBlob(ctx context.Context, repo, hash string, size int64, w io.Writer) error {
	return catFile(ctx, repo, []string{"blob", hash}, nil, func(out io.Reader) error {
		n, err := io.Copy(w, out)
		if err == nil && n != size {
			err = fmt.Errorf("blob %s: git cat-file gave %d bytes of %d", hash, n, size)
		}
		return err
	})
}

// catFile runs git cat-file with args (and stdin) and copy on its output.
// git dies with spool (RunTied's parent-death signal) and is killed if
// copy fails, so that it cannot wait on a pipe nobody reads. A git that
// cannot be started is errNotStarted: nothing was copied.
func catFile(ctx context.Context, repo string, args []string, stdin io.Reader, copy func(out io.Reader) error) error {
	args = append([]string{"--no-replace-objects", "cat-file"}, args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Stdin = repo, stdin
	cmd.SysProcAttr = tiedAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%w: %v", errNotStarted, err)
	}
	// git is started and reaped on a thread of its own (the parent-death
	// signal is the forking thread's: see RunTied), the copy runs here;
	// Wait comes after the copy, since it closes the pipe.
	started, copied, waited := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	fault.Go(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		<-copied
		waited <- cmd.Wait()
	})
	if err := <-started; err != nil {
		return fmt.Errorf("%w: %v", errNotStarted, err)
	}
	copyErr := copy(out)
	if copyErr != nil {
		cmd.Process.Kill()
	}
	close(copied)
	waitErr := <-waited
	switch {
	case copyErr != nil:
		return copyErr
	case ctx.Err() != nil:
		return ctx.Err()
	case waitErr != nil:
		return &GitError{Args: args, Stderr: stderr.String(), Err: waitErr}
	}
	return nil
}

// BlobLines counts the lines of the file hash without reading it whole.
func BlobLines(ctx context.Context, repo, hash string) (int, error) {
	var n int
	err := ReadHistory(ctx, repo, func(h *History) (err error) {
		n, err = h.BlobLines(hash)
		return err
	})
	return n, err
}

// BlobsLines is BlobLines of each of ids, read in one look at the
// repository (the new parts of a file in parts).
func BlobsLines(ctx context.Context, repo string, ids []string) ([]int, error) {
	out := make([]int, len(ids))
	err := ReadHistory(ctx, repo, func(h *History) (err error) {
		for i, id := range ids {
			if out[i], err = h.BlobLines(id); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// readCommit runs f with the commit rev names (as RevParse takes it), the
// object database locked.
func readCommit(ctx context.Context, repo, rev string, f func(c *object.Commit) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := openRepo(repo)
	if err != nil {
		return fmt.Errorf("open %s: %w", repo, err)
	}
	return r.db.read(func(s *filesystem.Storage) error {
		c, err := r.commitAt(s, rev)
		if err != nil {
			return err
		}
		return f(c)
	})
}

// WriteBlob stores content as a blob and returns its id.
func WriteBlob(_ context.Context, repo string, content []byte) (string, error) {
	return writeObject(repo, func(obj plumbing.EncodedObject) error {
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			return err
		}
		if _, err := w.Write(content); err != nil {
			return err
		}
		return w.Close()
	})
}

// WriteBlobFrom stores the size bytes r yields as a blob, streamed into
// the object's file rather than held whole (a writer file of a million
// events is 290 MB), and returns its id. A reader that yields another
// count of bytes stores nothing: go-git's own streaming writer would
// keep the short object under a name no whole one has.
func WriteBlobFrom(_ context.Context, repo string, r io.Reader, size int64) (string, error) {
	rp, err := openRepo(repo)
	if err != nil {
		return "", err
	}
	var id plumbing.Hash
	err = rp.db.read(func(s *filesystem.Storage) error {
		fs := s.Filesystem()
		tmp, err := fs.TempFile(fs.Join("objects", "pack"), "tmp_obj_")
		if err != nil {
			return err
		}
		done := false
		defer func() {
			if !done {
				tmp.Close()
				fs.Remove(tmp.Name())
			}
		}()
		w := objfile.NewWriter(tmp)
		if err := w.WriteHeader(plumbing.BlobObject, size); err != nil {
			return err
		}
		n, err := io.Copy(w, io.LimitReader(r, size+1))
		if err == nil && n != size {
			err = fmt.Errorf("blob: %d bytes, not %d", n, size)
		}
		if err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		id = w.Hash()
		hex := id.String()
		file := fs.Join("objects", hex[:2], hex[2:])
		if _, err := fs.Lstat(file); err == nil { // git has it: content-addressed
			return nil
		}
		if err := fs.MkdirAll(fs.Join("objects", hex[:2]), 0o755); err != nil {
			return err
		}
		if err := fs.Rename(tmp.Name(), file); err != nil {
			return err
		}
		done = true
		return nil
	})
	return id.String(), err
}

// TreeEntry is an entry of a tree: a file or a directory.
type TreeEntry struct {
	Name  string
	Hash  string
	Tree  bool
	Parts bool // a file stored in parts: a tree too
}

// WriteTree stores a tree of entries, sorted by name, and returns its id.
func WriteTree(_ context.Context, repo string, entries []TreeEntry) (string, error) {
	t := &object.Tree{Entries: make([]object.TreeEntry, len(entries))}
	for i, e := range entries {
		mode := filemode.Regular
		if e.Tree || e.Parts {
			mode = filemode.Dir
		}
		t.Entries[i] = object.TreeEntry{Name: e.Name, Mode: mode, Hash: plumbing.NewHash(e.Hash)}
	}
	return writeObject(repo, t.Encode)
}

func writeObject(repo string, encode func(plumbing.EncodedObject) error) (string, error) {
	r, err := openRepo(repo)
	if err != nil {
		return "", err
	}
	var id plumbing.Hash
	err = r.db.read(func(s *filesystem.Storage) error {
		obj := s.NewEncodedObject()
		if err := encode(obj); err != nil {
			return err
		}
		id, err = s.SetEncodedObject(obj)
		return err
	})
	return id.String(), err
}
