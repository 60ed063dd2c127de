package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// A file of the sync branch (a writer file) is one blob while it is small,
// and a tree of parts once it is larger than PartSize: part 000000, 000001,
// ... whose contents, in that order, are the file. A writer file only
// grows, so a sync writes and pushes its last part alone, not the whole
// file again: as one blob, a writer file of a million events (290 MB) cost
// each sync 13 s and 1.2 GB of git's memory, and grew both repositories by
// 50 MB.

// PartSize is the size above which a file is stored in parts, and each
// part's least size but the last one's: a part ends at the first line end
// at or after it, so that the parts of a file that grew are the parts it
// had, its last one grown or followed by others.
var PartSize int64 = 4 << 20

// maxParts bounds the parts a tree may name (4 TB at PartSize; the names
// have six digits): a tree naming more is not read.
const maxParts = 1_000_000

// minTreeEntry is the size of a part's entry in its tree ("100644 000000",
// a NUL and the id), by which a tree too large to be parts is refused
// unread (one with shorter modes than git writes gets as far as partsOf).
const minTreeEntry = len("100644 000000\x00") + 20

// Part is one part of a file stored in parts.
type Part struct {
	Hash string
	Size int64
}

// SizeOf is the size of the file parts make.
func SizeOf(parts []Part) (n int64) {
	for _, p := range parts {
		n += p.Size
	}
	return n
}

// partName is the name of part i in its tree: the names sort in order.
func partName(i int) string { return fmt.Sprintf("%06d", i) }

// ErrNotAFile is an entry of the sync branch that is neither a blob nor a
// tree of parts as spool writes them.
var ErrNotAFile = errors.New("not a file as spool stores one")

// partsOf checks that a tree's entries are the parts of a file (the only
// trees spool writes where a file is expected) and returns their ids. A
// tree from another clone is untrusted: one that names a blob twice, or
// anything but blobs named 000000, 000001, ..., is not a file, so that no
// small tree can stand for a large file made of one blob many times over.
func partsOf(t *object.Tree) ([]plumbing.Hash, error) {
	if len(t.Entries) == 0 || len(t.Entries) > maxParts {
		return nil, fmt.Errorf("tree %s: %w: %d parts", t.Hash, ErrNotAFile, len(t.Entries))
	}
	seen := make(map[plumbing.Hash]bool, len(t.Entries))
	ids := make([]plumbing.Hash, len(t.Entries))
	for i, e := range t.Entries {
		if e.Name != partName(i) || e.Mode != filemode.Regular && e.Mode != filemode.Executable || seen[e.Hash] {
			return nil, fmt.Errorf("tree %s: %w: entry %q", t.Hash, ErrNotAFile, e.Name)
		}
		seen[e.Hash] = true
		ids[i] = e.Hash
	}
	return ids, nil
}

// readFile runs f with the content of the file id names, a blob or a tree
// of parts, as a reader of size bytes; parts is nil for a blob.
func (h *History) readFile(id string, f func(size int64, parts []Part, rd io.Reader) error) error {
	obj, err := h.s.EncodedObject(plumbing.AnyObject, plumbing.NewHash(id))
	if err != nil {
		return fmt.Errorf("blob %s: %w", id, err)
	}
	switch obj.Type() {
	case plumbing.BlobObject:
		rd, err := obj.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		if err := f(obj.Size(), nil, rd); err != nil {
			return fmt.Errorf("blob %s: %w", id, err)
		}
		return nil
	case plumbing.TreeObject:
		parts, err := h.parts(obj)
		if err != nil {
			return err
		}
		pr := &partsReader{h: h, parts: parts}
		defer pr.close()
		if err := f(SizeOf(parts), parts, pr); err != nil {
			return fmt.Errorf("parts %s: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("object %s: %w: a %s", id, ErrNotAFile, obj.Type())
}

// parts lists the parts of a tree object, with their sizes.
// Each part must be a blob: a tree names its entries' objects by id alone,
// and an entry of a file's mode may name a tree or a commit.
func (h *History) parts(obj plumbing.EncodedObject) ([]Part, error) {
	if obj.Size() > int64(maxParts*minTreeEntry) {
		return nil, fmt.Errorf("tree %s: %w: %d bytes", obj.Hash(), ErrNotAFile, obj.Size())
	}
	t, err := object.DecodeTree(h.s, obj)
	if err != nil {
		return nil, err
	}
	ids, err := partsOf(t)
	if err != nil {
		return nil, err
	}
	parts := make([]Part, len(ids))
	for i, id := range ids {
		part, err := h.s.EncodedObject(plumbing.AnyObject, id) // a large one is not read: its header only
		if err != nil {
			return nil, fmt.Errorf("part %s of %s: %w", id, obj.Hash(), err)
		}
		if part.Type() != plumbing.BlobObject {
			return nil, fmt.Errorf("tree %s: %w: part %s is a %s", obj.Hash(), ErrNotAFile, id, part.Type())
		}
		parts[i] = Part{Hash: id.String(), Size: part.Size()}
	}
	return parts, nil
}

// Parts lists the parts of the file id names: nil for a blob.
func (h *History) Parts(id string) ([]Part, error) {
	obj, err := h.s.EncodedObject(plumbing.AnyObject, plumbing.NewHash(id))
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", id, err)
	}
	if obj.Type() != plumbing.TreeObject {
		return nil, nil
	}
	return h.parts(obj)
}

// partsReader reads parts one after the other, each opened when reached.
type partsReader struct {
	h     *History
	parts []Part
	cur   io.ReadCloser
	next  int
}

func (r *partsReader) Read(p []byte) (int, error) {
	for {
		if r.cur == nil {
			if r.next == len(r.parts) {
				return 0, io.EOF
			}
			b, err := object.GetBlob(r.h.s, plumbing.NewHash(r.parts[r.next].Hash))
			if err != nil {
				return 0, fmt.Errorf("part %s: %w", r.parts[r.next].Hash, err)
			}
			if r.cur, err = b.Reader(); err != nil {
				return 0, err
			}
			r.next++
		}
		n, err := r.cur.Read(p)
		if err == io.EOF {
			r.cur.Close()
			r.cur, err = nil, nil
			if n == 0 {
				continue
			}
		}
		return n, err
	}
}

func (r *partsReader) close() {
	if r.cur != nil {
		r.cur.Close()
	}
}

// CopyParts copies parts of a file stored in parts to w, in order.
func CopyParts(ctx context.Context, repo string, parts []Part, w io.Writer) error {
	cw := &countingWriter{w: w}
	return ReadHistory(ctx, repo, func(h *History) error {
		if cw.n > 0 { // read again after a repack: see CopyBlob
			return fmt.Errorf("parts: their pack changed after %d bytes were copied", cw.n)
		}
		return h.copyParts(ctx, repo, parts, cw)
	})
}

// copyParts copies parts to w: out of git cat-file --batch past
// catBlobSize (catParts), else, or when git cannot be started, go-git's.
func (h *History) copyParts(ctx context.Context, repo string, parts []Part, w io.Writer) error {
	if size := SizeOf(parts); size > catBlobSize {
		if err := catParts(ctx, repo, parts, size, w); !errors.Is(err, errNotStarted) {
			return err
		}
	}
	pr := &partsReader{h: h, parts: parts}
	defer pr.close()
	_, err := io.Copy(w, pr)
	return err
}

// catParts copies parts, of size bytes in all, to w out of one git
// cat-file --batch: git inflates on another core than w works on, as
// catBlob does for one large blob.
func catParts(ctx context.Context, repo string, parts []Part, size int64, w io.Writer) error {
	var ids bytes.Buffer
	for _, p := range parts {
		ids.WriteString(p.Hash + "\n")
	}
	return catFile(ctx, repo, []string{"--batch"}, &ids, func(out io.Reader) error {
		n, err := copyBatch(out, parts, w)
		if err == nil && n != size {
			err = fmt.Errorf("parts: git cat-file gave %d bytes of %d", n, size)
		}
		return err
	})
}

// copyBatch copies the contents git cat-file --batch writes for parts
// ("<id> blob <size>\n<content>\n" each) to w.
func copyBatch(out io.Reader, parts []Part, w io.Writer) (int64, error) {
	var total int64
	br := bufio.NewReaderSize(out, 64<<10)
	for _, p := range parts {
		header, err := br.ReadString('\n')
		if err != nil {
			return total, fmt.Errorf("part %s: %w", p.Hash, err)
		}
		if want := p.Hash + " blob " + strconv.FormatInt(p.Size, 10) + "\n"; header != want {
			return total, fmt.Errorf("part %s: git cat-file said %q", p.Hash, header)
		}
		n, err := io.Copy(w, io.LimitReader(br, p.Size))
		total += n
		if err == nil && n != p.Size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return total, err
		}
		if nl, err := br.ReadByte(); err != nil || nl != '\n' {
			return total, fmt.Errorf("part %s: no newline after its content", p.Hash)
		}
	}
	return total, nil
}

// WriteFileFrom stores the size bytes of r as the sync branch keeps a
// file: one blob up to PartSize, else a tree of parts. The parts of reuse
// (a version of this file whose content r begins with) are taken as they
// are but the last, which may have grown: only the rest of r is read and
// stored, its size is written.
func WriteFileFrom(ctx context.Context, repo string, r io.ReaderAt, size int64, reuse []Part) (b Blob, written int64, err error) {
	return writeFileFrom(ctx, repo, r, size, reuse, PartSize)
}

func writeFileFrom(ctx context.Context, repo string, r io.ReaderAt, size int64, reuse []Part, partSize int64) (Blob, int64, error) {
	if size <= partSize {
		h, err := WriteBlobFrom(ctx, repo, io.NewSectionReader(r, 0, size), size)
		return Blob{Hash: h}, size, err
	}
	var entries []TreeEntry
	var at, reused int64
	var last [1]byte
	for _, p := range reuse[:max(len(reuse)-1, 0)] {
		// Only parts as this function cuts them: another clone's layout
		// (a file cut in thousands of one-line parts) is not kept.
		if p.Size < partSize || at+p.Size > size {
			break
		}
		if _, err := r.ReadAt(last[:], at+p.Size-1); err != nil || last[0] != '\n' {
			break
		}
		entries = append(entries, TreeEntry{Name: partName(len(entries)), Hash: p.Hash})
		at += p.Size
	}
	reused = at
	for at < size {
		if len(entries) == maxParts {
			return Blob{}, 0, fmt.Errorf("a file of %d bytes takes more than %d parts of %d", size, maxParts, partSize)
		}
		end, err := partEnd(r, at, size, partSize)
		if err != nil {
			return Blob{}, 0, err
		}
		h, err := WriteBlobFrom(ctx, repo, io.NewSectionReader(r, at, end-at), end-at)
		if err != nil {
			return Blob{}, 0, err
		}
		entries = append(entries, TreeEntry{Name: partName(len(entries)), Hash: h})
		at = end
	}
	h, err := WriteTree(ctx, repo, entries)
	return Blob{Hash: h, Parts: true}, size - reused, err
}

// partEnd is where the part that starts at from ends: after the first
// newline at or after from+partSize-1, or at size.
func partEnd(r io.ReaderAt, from, size, partSize int64) (int64, error) {
	at := from + partSize - 1
	buf := make([]byte, 64<<10)
	for at < size {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-at)], at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return at + int64(i) + 1, nil
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if n == 0 {
			break
		}
		at += int64(n)
	}
	return size, nil
}

// FileParts lists the parts of the file id names: nil for a blob.
func FileParts(ctx context.Context, repo, id string) ([]Part, error) {
	var parts []Part
	err := ReadHistory(ctx, repo, func(h *History) (err error) {
		parts, err = h.Parts(id)
		return err
	})
	return parts, err
}

// IsParts says whether id names a file stored in parts; an error when it
// names nothing in the repository.
func IsParts(ctx context.Context, repo, id string) (bool, error) {
	var parts bool
	err := ReadHistory(ctx, repo, func(h *History) error {
		obj, err := h.s.EncodedObject(plumbing.AnyObject, plumbing.NewHash(id))
		parts = err == nil && obj.Type() == plumbing.TreeObject
		return err
	})
	return parts, err
}
