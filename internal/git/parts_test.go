package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spoolhq/spool/internal/git/gittest"
)

// lines is n lines of varied length, one of them longer than most parts.
func lines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "line %05d %s\n", i, strings.Repeat("x", i*7%53))
		if i == n/2 {
			fmt.Fprintf(&b, "long %s\n", strings.Repeat("y", 300))
		}
	}
	return b.Bytes()
}

// readAll reads the file id every way spool reads one.
func readAll(t *testing.T, repo, id string) (viaRead, viaCopy []byte, lines int, size int64) {
	t.Helper()
	ctx := context.Background()
	viaRead, err := ReadBlob(ctx, repo, id)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := CopyBlob(ctx, repo, id, &buf); err != nil {
		t.Fatal(err)
	}
	if lines, err = BlobLines(ctx, repo, id); err != nil {
		t.Fatal(err)
	}
	err = ReadHistory(ctx, repo, func(h *History) (err error) {
		size, err = h.BlobSize(id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return viaRead, buf.Bytes(), lines, size
}

// A file up to the part size is one blob; a larger one a tree of parts,
// each ending a line and no smaller than the part size but the last, that
// git itself reads as a tree of blobs; every read gives the file back,
// through go-git and through git cat-file --batch (past catBlobSize).
func TestWriteFileInParts(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		content  []byte
		partSize int64
	}{
		{"empty", nil, 64},
		{"one line", []byte("a\n"), 64},
		{"exactly the part size", bytes.Repeat([]byte("abcdefg\n"), 8), 64},
		{"a byte more", append(bytes.Repeat([]byte("abcdefg\n"), 8), "x\n"...), 64},
		{"many parts", lines(300), 256},
		{"a torn last line", append(lines(100), "torn"...), 256},
		{"lines longer than a part", lines(40), 16},
		{"past catBlobSize, in parts", lines(30000), 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, written, err := writeFileFrom(ctx, r.Root, bytes.NewReader(tc.content), int64(len(tc.content)), nil, tc.partSize)
			if err != nil || written != int64(len(tc.content)) {
				t.Fatal(written, err)
			}
			if inParts := int64(len(tc.content)) > tc.partSize; b.Parts != inParts {
				t.Fatalf("in parts: %v, want %v", b.Parts, inParts)
			}
			viaRead, viaCopy, n, size := readAll(t, r.Root, b.Hash)
			if !bytes.Equal(viaRead, tc.content) || !bytes.Equal(viaCopy, tc.content) {
				t.Fatalf("read back %d and %d bytes, want %d", len(viaRead), len(viaCopy), len(tc.content))
			}
			if n != bytes.Count(tc.content, []byte{'\n'}) || size != int64(len(tc.content)) {
				t.Errorf("%d lines, %d bytes; want %d, %d", n, size, bytes.Count(tc.content, []byte{'\n'}), len(tc.content))
			}
			if !b.Parts {
				return
			}
			kind := r.Git(r.Root, "cat-file", "-t", b.Hash)
			parts, err := FileParts(ctx, r.Root, b.Hash)
			if err != nil || kind != "tree" {
				t.Fatalf("%s, %v", kind, err)
			}
			var joined []byte
			for i, p := range parts {
				part := []byte(r.Git(r.Root, "cat-file", "blob", p.Hash) + "\n")
				if last := i == len(parts)-1; !last && (int64(len(part)) < tc.partSize || part[len(part)-1] != '\n') {
					t.Errorf("part %d: %d bytes, ending %q", i, len(part), part[len(part)-1])
				}
				joined = append(joined, part...)
			}
			if n := len(tc.content); !bytes.Equal(joined[:n], tc.content) { // git's output gains a newline
				t.Errorf("git's parts join to %d bytes", len(joined))
			}
		})
	}
	r.Git(r.Root, "fsck", "--strict", "--no-dangling")
}

// A file that grew, written with the parts of what it was, is the tree it
// would be written from nothing (the parts end where they would), and
// shares all of the older version's parts but the last.
func TestWriteFileReusesParts(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	all := lines(500)
	const partSize = 512
	write := func(content []byte, reuse []Part) (Blob, []Part, int64) {
		b, written, err := writeFileFrom(ctx, r.Root, bytes.NewReader(content), int64(len(content)), reuse, partSize)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := FileParts(ctx, r.Root, b.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return b, parts, written
	}
	cut := bytes.IndexByte(all[len(all)/3:], '\n') + len(all)/3 + 1
	_, before, _ := write(all[:cut], nil)
	grown, after, written := write(all, before)
	fresh, _, _ := write(all, nil)
	if grown != fresh {
		t.Fatalf("with the old parts %v, from nothing %v", grown, fresh)
	}
	if last := before[len(before)-1]; written != int64(len(all)-cut)+last.Size {
		t.Errorf("wrote %d bytes, want the last part of before (%d) and what was added (%d)", written, last.Size, len(all)-cut)
	}
	for i := range len(before) - 1 {
		if after[i] != before[i] {
			t.Errorf("part %d changed: %v, was %v", i, after[i], before[i])
		}
	}
	// Another layout of the same bytes (a part a line, as another clone
	// might push it) is not kept: the file is cut as from nothing.
	var oneLine []Part
	for _, line := range bytes.SplitAfter(all[:cut], []byte{'\n'}) {
		if len(line) > 0 {
			h, err := WriteBlob(ctx, r.Root, line)
			if err != nil {
				t.Fatal(err)
			}
			oneLine = append(oneLine, Part{Hash: h, Size: int64(len(line))})
		}
	}
	if b, _, _ := write(all, oneLine); b != fresh {
		t.Errorf("with one-line parts %v, from nothing %v", b, fresh)
	}
	// Parts of another file are taken only as far as they fit.
	if _, _, err := writeFileFrom(ctx, r.Root, bytes.NewReader(all[:600]), 600, after, partSize); err != nil {
		t.Fatal(err)
	}
}

// A tree where a file is expected is a file only as spool writes one:
// blobs named 000000, 000001, ..., each once. Anything else (another
// clone's, untrusted) is ErrNotAFile to every read, which writes nothing:
// no small tree stands for a large file of one blob many times over.
func TestNotAFile(t *testing.T) {
	r := gittest.New(t, nil)
	ctx := context.Background()
	blob := func(s string) string {
		h, err := WriteBlob(ctx, r.Root, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := blob("a\n"), blob("b\n")
	sub, err := WriteTree(ctx, r.Root, []TreeEntry{{Name: "000000", Hash: a}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		entries []TreeEntry
	}{
		{"empty", nil},
		{"no first part", []TreeEntry{{Name: "000001", Hash: a}}},
		{"a gap", []TreeEntry{{Name: "000000", Hash: a}, {Name: "000002", Hash: b}}},
		{"a blob twice", []TreeEntry{{Name: "000000", Hash: a}, {Name: "000001", Hash: a}}},
		{"a tree", []TreeEntry{{Name: "000000", Hash: a}, {Name: "000001", Hash: sub, Tree: true}}},
		{"a file's mode naming a tree", []TreeEntry{{Name: "000000", Hash: a}, {Name: "000001", Hash: sub}}},
		{"another name", []TreeEntry{{Name: "0", Hash: a}}},
		{"a writer file", []TreeEntry{{Name: "w.jsonl", Hash: a}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, err := WriteTree(ctx, r.Root, tc.entries)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := CopyBlob(ctx, r.Root, tree, &buf); !errors.Is(err, ErrNotAFile) || buf.Len() > 0 {
				t.Errorf("CopyBlob: %v, %d bytes", err, buf.Len())
			}
			if got, err := ReadBlob(ctx, r.Root, tree); !errors.Is(err, ErrNotAFile) {
				t.Errorf("ReadBlob: %q, %v", got, err)
			}
			if _, err := BlobLines(ctx, r.Root, tree); !errors.Is(err, ErrNotAFile) {
				t.Errorf("BlobLines: %v", err)
			}
		})
	}
	commit := r.Git(r.Root, "rev-parse", "HEAD")
	if _, err := ReadBlob(ctx, r.Root, commit); !errors.Is(err, ErrNotAFile) {
		t.Errorf("a commit read as a file: %v", err)
	}
}

// Any tree read as a file is either its parts, joined in order, or not a
// file: never anything else.
func FuzzReadParts(f *testing.F) {
	f.Add([]byte{0, 1, 2})
	f.Add([]byte{0, 0})
	f.Add([]byte{2, 1, 0, 3})
	f.Add([]byte{0x40, 0x81})
	r := gittest.New(f, nil)
	ctx := context.Background()
	var blobs []string
	var contents []string
	for i := range 4 {
		c := fmt.Sprintf("part %d\n", i)
		h, err := WriteBlob(ctx, r.Root, []byte(c))
		if err != nil {
			f.Fatal(err)
		}
		blobs, contents = append(blobs, h), append(contents, c)
	}
	f.Fuzz(func(t *testing.T, spec []byte) {
		if len(spec) > 64 {
			return
		}
		// Each byte: the blob (its low 2 bits), and a name off by one (bit
		// 6); the names are otherwise in order.
		var entries []TreeEntry
		names := map[string]bool{}
		var want []byte
		valid := len(spec) > 0
		used := map[int]bool{}
		for i, x := range spec {
			k := int(x & 3)
			name := partName(i)
			if x&0x40 != 0 {
				name = partName(i + 1)
				valid = false
			}
			if names[name] {
				return // a tree names each entry once
			}
			names[name] = true
			if used[k] {
				valid = false
			}
			used[k] = true
			entries = append(entries, TreeEntry{Name: name, Hash: blobs[k]})
			want = append(want, contents[k]...)
		}
		slices.SortFunc(entries, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
		tree, err := WriteTree(ctx, r.Root, entries)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadBlob(ctx, r.Root, tree)
		switch {
		case valid && (err != nil || !bytes.Equal(got, want)):
			t.Fatalf("parts %v: %q, %v; want %q", entries, got, err, want)
		case !valid && !errors.Is(err, ErrNotAFile):
			t.Fatalf("parts %v: %q, %v; want ErrNotAFile", entries, got, err)
		}
	})
}
