package git

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Objects a sync or a claim writes (a blob per changed writer file and two
// trees) go into the object database in process: three git processes per
// claim cost more, on a busy machine, than the claim's push.

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

// TreeEntry is an entry of a tree: a file or a directory.
type TreeEntry struct {
	Name string
	Hash string
	Tree bool
}

// WriteTree stores a tree of entries, sorted by name, and returns its id.
func WriteTree(_ context.Context, repo string, entries []TreeEntry) (string, error) {
	t := &object.Tree{Entries: make([]object.TreeEntry, len(entries))}
	for i, e := range entries {
		mode := filemode.Regular
		if e.Tree {
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
