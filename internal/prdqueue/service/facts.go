package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

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

// facts reads what the PRD at path (relative to the work tree) says.
func (s *Service) facts(path string) (prdqueue.Facts, error) {
	full := filepath.Join(s.Dir, filepath.FromSlash(path))
	st, err := os.Stat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return prdqueue.Facts{}, fault.New(prdqueue.CodePRDFileMissing, errMissing,
			fmt.Sprintf("PRD file %s does not exist", path), "prd_path", path)
	}
	if err != nil {
		return prdqueue.Facts{}, fault.New(fault.CodeStorage, err, fmt.Sprintf("cannot read %s: %v", path, err), "file", path)
	}
	key := statKey(st)
	if c, ok := s.cache.Files[path]; ok && c.Stat == key {
		return c.Facts, nil
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return prdqueue.Facts{}, fault.New(fault.CodeStorage, err, fmt.Sprintf("cannot read %s: %v", path, err), "file", path)
	}
	f, err := parse(path, data)
	if err != nil {
		return prdqueue.Facts{}, err
	}
	s.cache.Files[path] = cached{Stat: key, Facts: f}
	s.cache.dirty = true
	return f, nil
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
	Size    int64  `json:"size"`
	ModNano int64  `json:"mtime"`
	CtNano  int64  `json:"ctime"`
	Ino     uint64 `json:"ino"`
	Dev     uint64 `json:"dev"`
}

func statKey(st fs.FileInfo) stat {
	k := stat{Size: st.Size(), ModNano: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		k.CtNano = sys.Ctim.Sec*1e9 + sys.Ctim.Nsec
		k.Ino, k.Dev = sys.Ino, uint64(sys.Dev)
	}
	return k
}

type cached struct {
	Stat  stat           `json:"stat"`
	Facts prdqueue.Facts `json:"facts"`
}

// cache is the per-clone cache of PRD files read.
type cache struct {
	Version int               `json:"version"`
	Files   map[string]cached `json:"files"`
	dirty   bool
}

const cacheVersion = 1

func (s *Service) cachePath() string {
	return filepath.Join(s.Store.Repo.PrivateDir(), "prd-cache.json")
}

// loadCache reads the cache; a missing or unreadable one is empty (it is
// only ever a shortcut).
func (s *Service) loadCache() {
	s.cache = cache{Version: cacheVersion, Files: map[string]cached{}}
	b, err := os.ReadFile(s.cachePath())
	if err != nil {
		return
	}
	var c cache
	if json.Unmarshal(b, &c) == nil && c.Version == cacheVersion && c.Files != nil {
		s.cache.Files = c.Files
	}
}

// saveCache writes the cache when it changed; failing to is not an error.
func (s *Service) saveCache() {
	if !s.cache.dirty {
		return
	}
	b, err := json.Marshal(s.cache)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(s.cachePath()), 0o755); err == nil {
		_ = durable.WriteFile(s.cachePath(), b, 0o644)
	}
	s.cache.dirty = false
}
