package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/prd"
	"github.com/spoolhq/spool/internal/prdqueue"
)

// Reading PRD files: the edge between the queue and the work tree. A
// per-clone cache (.git/spool/prd-cache.json) keeps what each file said
// with its stat, so that a sync with nothing changed reads no file.

// errMissing marks a PRD file that does not exist.
var errMissing = errors.New("PRD file missing")

// facts reads what the PRD at path (relative to the work tree) says. known
// is what the queue has recorded for it: when the file's stat and the
// digest of known are what the cache holds, the file is not read.
func (s *Service) facts(path string, known *prdqueue.Facts) (prdqueue.Facts, error) {
	full, st, err := s.statPRD(path)
	if err != nil {
		return prdqueue.Facts{}, err
	}
	key := statKey(st)
	if c, ok := s.cache.files[path]; ok && c.stat == key && known != nil && c.digest == digest(*known) {
		return *known, nil
	}
	data, err := readPRD(full, path)
	if err != nil {
		return prdqueue.Facts{}, err
	}
	f, err := parse(path, data)
	if err != nil {
		return prdqueue.Facts{}, err
	}
	s.cache.files[path] = cached{stat: key, digest: digest(f)}
	s.cache.dirty = true
	return f, nil
}

// statPRD finds the PRD at path (relative to the work tree): the file it
// names once links are resolved, which must be a regular file inside the
// work tree. A missing file is prd_file_missing; one a link (the file's
// own or a directory's on the way) leads outside is prd_file_outside. The
// path comes from the log and the links from whatever was committed:
// spool prd approve writes into what this returns, so it never leaves the
// work tree.
func (s *Service) statPRD(path string) (string, fs.FileInfo, error) {
	storage := func(err error) (string, fs.FileInfo, error) {
		return "", nil, fault.New(fault.CodeStorage, err, fmt.Sprintf("cannot read %s: %v", path, err), "file", path)
	}
	clean, err := prdqueue.CheckPath(path)
	if err != nil {
		return "", nil, err
	}
	full, err := durable.Within(s.Dir, filepath.Join(s.Dir, filepath.FromSlash(clean)))
	if errors.Is(err, durable.ErrOutside) {
		return "", nil, fault.New(prdqueue.CodePRDFileOutside, err,
			fmt.Sprintf("PRD file %s: %v; spool reads and writes PRDs only inside the work tree, never through a symbolic link out of it", path, err),
			"prd_path", path)
	}
	if err != nil {
		return storage(err)
	}
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) {
		return "", nil, fault.New(prdqueue.CodePRDFileMissing, errMissing,
			fmt.Sprintf("PRD file %s does not exist", path), "prd_path", path)
	}
	st, err := os.Stat(full)
	if err != nil {
		return storage(err)
	}
	if !st.Mode().IsRegular() {
		return storage(errors.New("not a regular file"))
	}
	return full, st, nil
}

func readPRD(full, path string) ([]byte, error) {
	data, err := os.ReadFile(full)
	if err != nil {
		return nil, fault.New(fault.CodeStorage, err, fmt.Sprintf("cannot read %s: %v", path, err), "file", path)
	}
	return data, nil
}

// digest names facts in the cache: equal facts, equal digests.
func digest(f prdqueue.Facts) string {
	h := sha256.New()
	for _, v := range append([]string{f.PRDGate, f.BeadsGate, f.Hash}, f.OpenQuestions...) {
		fmt.Fprintf(h, "%d:%s", len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// parse reads a PRD's bytes; bad front matter is invalid_front_matter.
func parse(path string, data []byte) (prdqueue.Facts, error) {
	doc, err := prd.Parse(data)
	if err != nil {
		var fm *prd.FrontMatterError
		line := 0
		if errors.As(err, &fm) {
			line = fm.Line
		}
		return prdqueue.Facts{}, fault.New(prdqueue.CodeInvalidFrontMatter, err,
			fmt.Sprintf("%s: front matter: %v", path, err), "file", path, "line", line)
	}
	return prdqueue.Facts{PRDGate: doc.PRDGate, BeadsGate: doc.BeadsGate, OpenQuestions: doc.OpenQuestions, Hash: doc.ContentHash}, nil
}

// stat is what says a file did not change: size, times and identity.
type stat struct {
	size, mod, ctime int64
	ino, dev         uint64
}

func statKey(st fs.FileInfo) stat {
	k := stat{size: st.Size(), mod: st.ModTime().UnixNano()}
	k.ctime, k.ino, k.dev = sysStat(st)
	return k
}

type cached struct {
	stat   stat
	digest string // of the facts the file gave
}

// cache is the per-clone cache of PRD files read: one line a file,
// "size mtime ctime ino dev digest path", so that loading it costs little.
type cache struct {
	files map[string]cached
	dirty bool
}

const cacheHeader = "spool-prd-cache-1\n"

func (s *Service) cachePath() string { return filepath.Join(s.Store.Repo.PrivateDir(), "prd-cache") }

// loadCache reads the cache; a missing or damaged one is empty (it is only
// ever a shortcut).
func (s *Service) loadCache() {
	s.cache = cache{files: map[string]cached{}}
	b, err := os.ReadFile(s.cachePath())
	if err != nil || !bytes.HasPrefix(b, []byte(cacheHeader)) {
		return
	}
	for _, line := range strings.Split(string(b[len(cacheHeader):]), "\n") {
		f := strings.SplitN(line, " ", 7)
		if len(f) != 7 {
			continue
		}
		var c cached
		var err1, err2, err3, err4, err5 error
		c.stat.size, err1 = strconv.ParseInt(f[0], 10, 64)
		c.stat.mod, err2 = strconv.ParseInt(f[1], 10, 64)
		c.stat.ctime, err3 = strconv.ParseInt(f[2], 10, 64)
		c.stat.ino, err4 = strconv.ParseUint(f[3], 10, 64)
		c.stat.dev, err5 = strconv.ParseUint(f[4], 10, 64)
		if errors.Join(err1, err2, err3, err4, err5) == nil {
			c.digest = f[5]
			s.cache.files[f[6]] = c
		}
	}
}

// saveCache writes the cache when it changed; failing to is not an error.
func (s *Service) saveCache() {
	if !s.cache.dirty {
		return
	}
	var b strings.Builder
	b.WriteString(cacheHeader)
	for path, c := range s.cache.files {
		if strings.ContainsAny(path, "\n") {
			continue
		}
		fmt.Fprintf(&b, "%d %d %d %d %d %s %s\n", c.stat.size, c.stat.mod, c.stat.ctime, c.stat.ino, c.stat.dev, c.digest, path)
	}
	if err := os.MkdirAll(filepath.Dir(s.cachePath()), 0o755); err == nil {
		_ = durable.WriteFile(s.cachePath(), []byte(b.String()), 0o644)
	}
	s.cache.dirty = false
}
