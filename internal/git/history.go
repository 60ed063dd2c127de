package git

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ConfigValues returns the git configuration values whose names match the
// extended regular expression re (names in git's lower case), the last one
// of each as git would use it; none is an empty map, not an error.
func ConfigValues(ctx context.Context, dir, re string) (map[string]string, error) {
	out, err := Run(ctx, dir, "config", "--null", "--get-regexp", re)
	var gerr *GitError
	if errors.As(err, &gerr) && out == "" && strings.TrimSpace(gerr.Stderr) == "" {
		return map[string]string{}, nil // exit 1: nothing matched
	}
	if err != nil {
		return nil, err
	}
	values := map[string]string{}
	for _, item := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		name, value, _ := strings.Cut(item, "\n")
		values[name] = value
	}
	return values, nil
}

// ErrShallow is a walk that met a commit whose parents this clone does not
// have (a shallow clone).
var ErrShallow = errors.New("the history is shallow")

// History reads commits, trees and blobs in process, for checks that walk
// the history (verify --signatures). Use it inside ReadHistory only.
type History struct {
	ctx     context.Context
	r       *gitRepo
	s       *filesystem.Storage
	shallow map[plumbing.Hash]bool
}

// ReadHistory runs fn with the history of the repository containing dir,
// the object database locked meanwhile.
func ReadHistory(ctx context.Context, dir string, fn func(h *History) error) error {
	r, err := openRepo(dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	return r.db.read(func(s *filesystem.Storage) error {
		h := &History{ctx: ctx, r: r, s: s, shallow: map[plumbing.Hash]bool{}}
		shallow, err := r.refs.Shallow()
		if err != nil {
			return err
		}
		for _, c := range shallow {
			h.shallow[c] = true
		}
		return fn(h)
	})
}

// Resolve returns the commit id rev names (HEAD, a full ref name or a
// commit id); ErrRefNotFound when it names nothing (a repository with no
// commit yet).
func (h *History) Resolve(rev string) (string, error) {
	c, err := h.r.commitAt(h.s, rev)
	if err != nil {
		return "", err
	}
	return c.Hash.String(), nil
}

// Commit is a commit as a signature check needs it.
type Commit struct {
	Hash      string
	Parents   []string
	Committed time.Time
	Signature string // the gpgsig header: an armored signature, "" if unsigned
	Payload   []byte // what the signature covers: the commit without that header
}

// missing explains a commit that is not in this clone: a shallow one's
// parents are not.
func missing(id string, err error) error {
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return fmt.Errorf("%w: commit %s is not in this clone", ErrShallow, id)
	}
	return fmt.Errorf("commit %s: %w", id, err)
}

func (h *History) getCommit(id string) (*object.Commit, error) {
	c, err := object.GetCommit(h.s, plumbing.NewHash(id))
	if err != nil {
		return nil, missing(id, err)
	}
	return c, nil
}

// Commit reads one commit.
func (h *History) Commit(id string) (*Commit, error) {
	obj, err := h.s.EncodedObject(plumbing.CommitObject, plumbing.NewHash(id))
	if err != nil {
		return nil, missing(id, err)
	}
	c, err := object.DecodeCommit(h.s, obj)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", id, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	raw, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	out := &Commit{Hash: id, Committed: c.Committer.When}
	for _, p := range c.ParentHashes {
		out.Parents = append(out.Parents, p.String())
	}
	out.Payload, out.Signature = splitSignature(raw)
	return out, nil
}

// splitSignature takes the gpgsig header (and its continuation lines) out
// of a raw commit, as git does before it verifies one.
func splitSignature(raw []byte) (payload []byte, sig string) {
	headers, body, _ := bytes.Cut(raw, []byte("\n\n"))
	var kept []byte
	var lines []string
	in := false
	for _, line := range strings.SplitAfter(string(headers), "\n") {
		switch {
		case strings.HasPrefix(line, "gpgsig "):
			in = true
			lines = append(lines, strings.TrimSuffix(strings.TrimPrefix(line, "gpgsig "), "\n"))
		case in && strings.HasPrefix(line, " "):
			lines = append(lines, strings.TrimSuffix(line[1:], "\n"))
		default:
			in = false
			kept = append(kept, line...)
		}
	}
	if len(lines) == 0 {
		return raw, ""
	}
	if !bytes.HasSuffix(kept, []byte{'\n'}) {
		kept = append(kept, '\n')
	}
	payload = append(append(kept, '\n'), body...)
	return payload, strings.Join(lines, "\n") + "\n"
}

// Walk calls fn once with every commit reachable from tips (as Resolve
// takes them: an annotated tag is its commit), in no promised order. A
// commit whose parents are missing is ErrShallow.
func (h *History) Walk(tips []string, fn func(c *Commit) error) error {
	seen := map[string]bool{}
	var stack []string
	for _, tip := range tips {
		id, err := h.Resolve(tip)
		if err != nil {
			return err
		}
		stack = append(stack, id)
	}
	for len(stack) > 0 {
		if err := h.ctx.Err(); err != nil {
			return err
		}
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		if h.shallow[plumbing.NewHash(id)] {
			return fmt.Errorf("%w: commit %s's parents are not in this clone", ErrShallow, id)
		}
		c, err := h.Commit(id)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
		for i := len(c.Parents) - 1; i >= 0; i-- {
			stack = append(stack, c.Parents[i])
		}
	}
	return nil
}

// BlobsAt returns the ids of the blobs at paths in commit, "" for a path
// with none. Paths in one directory share one read of its tree: every read
// of an object opens its pack again, and a check that walks the history
// asks this of every commit.
func (h *History) BlobsAt(commit string, paths ...string) ([]string, error) {
	c, err := h.getCommit(commit)
	if err != nil {
		return nil, err
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", commit, err)
	}
	dirs := map[string]*object.Tree{} // nil: no such directory
	ids := make([]string, len(paths))
	for i, p := range paths {
		dir, name := path.Split(p)
		tree, ok := root, dir == ""
		if !ok {
			if tree, ok = dirs[dir]; !ok {
				if tree, err = subtree(h.s, root, strings.TrimSuffix(dir, "/")); err != nil {
					return nil, fmt.Errorf("%s in %s: %w", p, commit, err)
				}
				dirs[dir] = tree
			}
		}
		if tree == nil {
			continue
		}
		entry, err := tree.FindEntry(name)
		switch {
		case errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound):
		case err != nil:
			return nil, fmt.Errorf("%s in %s: %w", p, commit, err)
		case entry.Mode.IsFile():
			ids[i] = entry.Hash.String()
		}
	}
	return ids, nil
}

// subtree is the tree at dir in root, nil when root has no entry there.
func subtree(s *filesystem.Storage, root *object.Tree, dir string) (*object.Tree, error) {
	entry, err := root.FindEntry(dir)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return object.GetTree(s, entry.Hash)
}

// ReadBlob returns a file's content: a blob's, or a tree of parts'.
func (h *History) ReadBlob(id string) ([]byte, error) {
	out := []byte(nil)
	err := h.readFile(id, func(size int64, _ []Part, rd io.Reader) error {
		out = make([]byte, size) // one allocation, not ReadAll's doublings
		_, err := io.ReadFull(rd, out)
		return err
	})
	return out, err
}

// BlobLines counts the lines of file id (its newlines) as it streams.
func (h *History) BlobLines(id string) (int, error) {
	n := 0
	err := h.readFile(id, func(_ int64, _ []Part, rd io.Reader) error {
		buf := make([]byte, 256<<10)
		for {
			k, err := rd.Read(buf)
			n += bytes.Count(buf[:k], []byte{'\n'})
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return n, err
}

// FilesUnder returns the files directly in dir at commit, by name.
func (h *History) FilesUnder(commit, dir string) (map[string][]byte, error) {
	c, err := h.getCommit(commit)
	if err != nil {
		return nil, err
	}
	root, err := c.Tree()
	if err != nil {
		return nil, err
	}
	tree, err := root.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", dir, commit, err)
	}
	files := map[string][]byte{}
	for _, e := range tree.Entries {
		if !e.Mode.IsFile() {
			continue
		}
		b, err := h.ReadBlob(e.Hash.String())
		if err != nil {
			return nil, err
		}
		files[e.Name] = b
	}
	return files, nil
}

// MergeBases returns the best common ancestors of two commits.
func (h *History) MergeBases(a, b string) ([]string, error) {
	ca, err := h.getCommit(a)
	if err != nil {
		return nil, err
	}
	cb, err := h.getCommit(b)
	if err != nil {
		return nil, err
	}
	bases, err := ca.MergeBase(cb)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(bases))
	for i, c := range bases {
		out[i] = c.Hash.String()
	}
	return out, nil
}

// Shallow says whether commit's parents are missing from this clone.
func (h *History) Shallow(commit string) bool { return h.shallow[plumbing.NewHash(commit)] }

// TreeDir is the tree of dir at commit ("" for the root): the ids of its
// files by name (a file stored in parts is its tree's), with the tree's
// own id ("" and no files when there is no such directory). Reading a tree
// reads no blob.
func (h *History) TreeDir(commit, dir string) (string, map[string]string, error) {
	c, err := h.getCommit(commit)
	if err != nil {
		return "", nil, err
	}
	tree, err := c.Tree()
	if err != nil {
		return "", nil, fmt.Errorf("tree of %s: %w", commit, err)
	}
	if dir != "" {
		if tree, err = subtree(h.s, tree, dir); err != nil || tree == nil {
			return "", map[string]string{}, err
		}
	}
	files := make(map[string]string, len(tree.Entries))
	for _, e := range tree.Entries {
		if e.Mode.IsFile() || e.Mode == filemode.Dir {
			files[e.Name] = e.Hash.String()
		}
	}
	return tree.Hash.String(), files, nil
}

// BlobSize is a file's size, read from its header (a file in parts: its
// parts'): no blob is inflated.
func (h *History) BlobSize(id string) (int64, error) {
	parts, err := h.Parts(id)
	if err != nil {
		return 0, err
	}
	if parts == nil {
		n, err := h.s.EncodedObjectSize(plumbing.NewHash(id))
		if err != nil {
			return 0, fmt.Errorf("blob %s: %w", id, err)
		}
		return n, nil
	}
	return SizeOf(parts), nil
}

// Parents are a commit's parents.
func (h *History) Parents(commit string) ([]string, error) {
	c, err := h.getCommit(commit)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		out[i] = p.String()
	}
	return out, nil
}

// NewBlobHasher hashes a blob of size bytes as git names it: write the
// content, and the sum in hex is its id.
func NewBlobHasher(size int64) hash.Hash {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}

// BlobID is the id git gives a blob of this content.
func BlobID(content []byte) string {
	return plumbing.ComputeHash(plumbing.BlobObject, content).String()
}
