// Package durable writes files the way spool writes everything it keeps:
// to a temp file on the same file system, fsynced, renamed into place, and
// the directory fsynced, so a crash leaves the old file or the new one,
// never a torn one, and a rename that was acknowledged survives.
package durable

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// WriteFile replaces path with data (perm for a new file), making its
// directory when needed.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return WriteFileIn(path, data, perm, "")
}

// WriteWorkTreeFile is WriteFile for a file spool keeps in the work tree
// (.spool/config.json, a PRD's front matter): the temp files a writer
// killed before its rename left beside it go first, or git status would
// show them for good. Not for a path a user names: the directory is
// theirs.
func WriteWorkTreeFile(path string, data []byte, perm fs.FileMode) error {
	sweepStale(path, time.Now())
	return WriteFile(path, data, perm)
}

// WriteFileIn is WriteFile with the temp file in tmpDir (on the same file
// system), for writers that sweep their own crash leftovers.
func WriteFileIn(path string, data []byte, perm fs.FileMode, tmpDir string) error {
	b := NewBatch(tmpDir)
	if err := b.WriteFile(path, data, perm); err != nil {
		return err
	}
	return b.Done()
}

// Batch writes several files in order, each whole before it replaces the
// old one, and syncs each directory once when Done: a command that saves
// several projections pays one directory fsync, not one a file.
type Batch struct {
	tmp  string
	dirs map[string]bool
}

// NewBatch writes its temp files in tmpDir ("" for each file's directory).
func NewBatch(tmpDir string) *Batch { return &Batch{tmp: tmpDir, dirs: map[string]bool{}} }

// WriteFile replaces path with data; the rename is durable after Done.
func (b *Batch) WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := renameio.WriteFile(path, data, perm, renameio.WithTempDir(b.tempDir(dir))); err != nil {
		return err
	}
	b.dirs[dir] = true
	return nil
}

// WriteStream replaces path with what write writes, buffered: the file is
// never held whole. When unchanged is given and says, once everything is
// written, that the file would not change, the old one is left in place.
func (b *Batch) WriteStream(path string, perm fs.FileMode, write func(w io.Writer) error, unchanged func() bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	t, err := renameio.NewPendingFile(path, renameio.WithPermissions(perm), renameio.WithExistingPermissions(), renameio.WithTempDir(b.tempDir(dir)))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	bw := bufio.NewWriterSize(t, 256<<10)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if unchanged != nil && unchanged() {
		return nil
	}
	if err := t.CloseAtomicallyReplace(); err != nil {
		return err
	}
	b.dirs[dir] = true
	return nil
}

// staleAfter is how old a temp file beside its target must be for a write
// of that target to take it for a crashed writer's: writing any file spool
// writes there takes milliseconds.
const staleAfter = time.Hour

// sweepStale removes the temp files a writer of path killed before its
// rename left beside it (renameio names them "." + the file's name + a
// number; of a file named as path's and digits, too), once older than
// staleAfter: no live write of such a file takes that long.
func sweepStale(path string, now time.Time) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		digits := strings.TrimPrefix(e.Name(), prefix)
		if len(digits) == len(e.Name()) || digits == "" || strings.Trim(digits, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleAfter {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// tempDir is where a file of dir is written before its rename: the
// batch's, else dir itself. renameio's own default tried os.TempDir()
// first, at every write (two files made and a rename to find out), and
// when it was on the same file system the copy was written there: a
// process killed before the rename left it in /tmp for good.
func (b *Batch) tempDir(dir string) string {
	if b.tmp != "" {
		return b.tmp
	}
	return dir
}

// Done syncs the directories written to, in a fixed order.
func (b *Batch) Done() error {
	dirs := make([]string, 0, len(b.dirs))
	for d := range b.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if err := SyncDir(d); err != nil {
			return err
		}
	}
	clear(b.dirs)
	return nil
}

// CreateNew writes path only if it does not exist yet; created says whether
// it did. The file is written in full before it appears (a link of a
// complete temp file), so a reader never sees it half written.
func CreateNew(path string, data []byte, perm fs.FileMode) (created bool, err error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	t, err := renameio.TempFile(dir, path)
	if err != nil {
		return false, err
	}
	defer t.Cleanup()
	if err := t.Chmod(perm); err != nil {
		return false, err
	}
	if _, err := t.Write(data); err != nil {
		return false, err
	}
	if err := t.Sync(); err != nil {
		return false, err
	}
	if err := os.Link(t.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil // another process made it first
		}
		return false, err
	}
	return true, SyncDir(dir)
}

// SyncDir fsyncs a directory, so the names in it (a rename, a new file)
// survive a crash. A directory that does not exist has nothing to sync.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Inode is a file's inode number (0 where the system has none): with its
// size and modification time, what tells a file replaced from one appended to.
func Inode(fi fs.FileInfo) uint64 {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return sys.Ino
	}
	return 0
}

// WriteCache replaces path with data, for a cache whose loss only costs
// work (it is rebuilt): written aside and renamed into place, so never
// seen torn, but not fsynced, since a crash may keep the old one.
func WriteCache(path string, data []byte) error {
	return WriteCacheIn(path, "", func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteCacheIn is WriteCache of what write writes (buffered), with the
// temp file in tmpDir (on the same file system; "" for path's directory),
// for writers that sweep their own crash leftovers.
func WriteCacheIn(path, tmpDir string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if tmpDir == "" {
		tmpDir = dir
	}
	f, err := createTemp(tmpDir, "."+filepath.Base(path)+".")
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err = write(bw); err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// createTemp is os.CreateTemp (dir/prefix and a random suffix) with mode
// 0644 less the umask, as every other file spool writes: CreateTemp's
// 0600 would keep a teammate's spool in a shared clone from a cache.
func createTemp(dir, prefix string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("durable: no free temp name for %s in %s", prefix, dir)
}
