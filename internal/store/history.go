package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
)

// A writer file only grows: what a copy of the sync branch once held, the
// log must still hold. CheckHistory walks every commit of every copy of
// the branch this clone has (its own, each remote's as fetched, spool's
// tracking refs) and holds each version of each writer file committed there
// to the local file of that writer:
//
//   - a version that is a prefix of the local file is fine (almost all of
//     them: decided from the blob's size and id alone, by hashing the local
//     file's prefix of that size, without reading the blob);
//   - a version that breaks the log's rules, or is no file at all (a tree
//     of parts as spool never writes one), is not a log (whoever received
//     it quarantined it) and says nothing, unless a copy's tip holds it
//     where the tip's history had lines: a fresh clone would take it;
//   - a version that lost or changed a line the local file has, or has one
//     the local file lacks, is a problem, unless it rewrote the version
//     before it (its parent commit's): then the rewrite is the culprit and
//     the version it rewrote is what is held to the local file. A copy's
//     tip (unless it is in another copy's history: a remote-tracking ref
//     not fetched since) may not even do that, nor lack a file or lines its
//     own history had: the tip is what a fresh clone would take.
//
// So a fresh clone of a branch whose history was rewritten (a line deleted,
// the rest renumbered and rechained) fails, naming the writer, and so does
// a clone whose copy of the branch lost what it has; a rewrite that the
// next sync undid passes. Versions of files without prev (an older spool's)
// are held by event id rather than bytes: the merge driver renumbered them.
// The first check's cost is the hashing of one prefix of a local file per
// version the history holds (about 2 GB/s a core with SHA instructions);
// the versions found to be prefixes are kept (knownPrefixes), so a later
// check hashes one prefix of each file and the versions new since. A
// shallow history is checked as far as it goes.

// version is one writer file's content as one commit holds it.
type version struct {
	name string // the writer file's name
	blob string
}

type versionState int

const (
	covered versionState = iota + 1 // a prefix of the local file, or an older spool's events all in it
	longer                          // the local file is a prefix of it
	forked                          // it lost or changed a line the local file has
	broken                          // it breaks the log's rules
)

type versionInfo struct {
	state       versionState
	lines       int
	line        int    // forked: the first line that differs
	here, there string // forked: what each has there
	commit      string // a commit that brought it
	parents     []string
}

// historyCheck is one CheckHistory.
type historyCheck struct {
	h        *git.History
	dir      string // the local log's writer files
	own      string // this clone's writer file
	commits  map[string][]string
	added    map[string][]version // by commit: the versions it brought
	versions map[version]*versionInfo
	trees    map[string]map[string]string // by commit, the last few: events/ of its tree
	local    map[string][]byte            // whole local files read, by name
	lost     map[string][]version         // by file: versions with a line the local file lacks (problems)
	known    map[string]*knownPrefixes    // by file: what earlier checks proved (historyCachePath)
	changed  bool                         // known gained a version
	placed   map[placedPart]int           // parts found where they stand in the local file: their lines
}

// knownPrefixes is what earlier checks of this clone proved of one local
// writer file: the blobs that are prefixes of it. They all still are while
// the local file's prefix of Size still hashes to Blob (the longest), so a
// check after the first hashes one prefix and the versions new since.
type knownPrefixes struct {
	Size  int64          `json:"size"`
	Blob  string         `json:"blob"`
	Lines map[string]int `json:"lines"` // blob → its lines
}

func (s *Store) historyCachePath() string {
	return filepath.Join(s.Repo.PrivateDir(), "history-prefixes.json")
}

// CheckHistory reports every line the copies of the sync branch show the
// log lost (see above), each as a problem of the local writer file.
func (s *Store) CheckHistory(ctx context.Context) ([]eventlog.Problem, error) {
	var problems []eventlog.Problem
	err := s.checkHistory(ctx, func(c *historyCheck, refs map[string]string) error {
		var err error
		problems, err = c.problems(refs)
		return err
	})
	return problems, err
}

// checkHistory judges the history of the sync branch's copies and calls fn
// (not at all when the clone has none).
func (s *Store) checkHistory(ctx context.Context, fn func(c *historyCheck, refs map[string]string) error) error {
	refs, err := git.BranchCopies(ctx, s.Repo.CommonDir, SettingsFrom(s.Config).SyncBranch)
	if err != nil || len(refs) == 0 {
		return err
	}
	writer, err := s.Log.WriterID()
	if err != nil {
		return err
	}
	return git.ReadHistory(ctx, s.Repo.Root, func(h *git.History) error {
		c := &historyCheck{h: h, dir: s.Log.Dir(), own: writer + eventlog.Ext, commits: map[string][]string{}, added: map[string][]version{},
			versions: map[version]*versionInfo{}, trees: map[string]map[string]string{}, local: map[string][]byte{}, lost: map[string][]version{},
			known: map[string]*knownPrefixes{}, placed: map[placedPart]int{}}
		if b, err := os.ReadFile(s.historyCachePath()); err == nil {
			json.Unmarshal(b, &c.known) // a damaged cache costs one full check
		}
		if err := c.walk(ctx, refs); err != nil {
			return err
		}
		if err := c.classify(); err != nil {
			return err
		}
		if c.changed {
			b, err := json.Marshal(c.known)
			if err != nil {
				return err
			}
			if err := durable.WriteCache(s.historyCachePath(), b); err != nil {
				return err
			}
		}
		return fn(c, refs)
	})
}

// RepairTaken replaces this clone's copy of another writer's file when it
// took a rewritten history (a fresh clone of a branch whose file was
// rewritten: it has nothing else) and a copy of the branch now holds that
// writer's file whole again, every line the history had included (the
// writer's sync put it back): the local copy is kept in
// <private>/repair/<time>/, and the events it had that the branch's lacks
// were the rewrite's. Its own file, this clone never replaces.
func (s *Store) RepairTaken(ctx context.Context, now time.Time) ([]eventlog.FileRepair, error) {
	sess, err := s.Log.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var out []eventlog.FileRepair
	err = s.checkHistory(ctx, func(c *historyCheck, refs map[string]string) error {
		if _, err := c.problems(refs); err != nil {
			return err
		}
		takes, err := c.restorable(refs)
		if err != nil {
			return err
		}
		backups := filepath.Join(s.Repo.PrivateDir(), "repair", fmt.Sprint(now.UnixNano()))
		for _, name := range slices.Sorted(maps.Keys(takes)) {
			t := takes[name]
			path := filepath.Join(s.Log.Dir(), name)
			old, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rep := eventlog.FileRepair{Path: path, Backup: filepath.Join(backups, name), Left: []string{}}
			if err := os.MkdirAll(backups, 0o755); err != nil {
				return err
			}
			if err := durable.WriteFile(rep.Backup, old, 0o644); err != nil {
				return err
			}
			if err := durable.WriteFile(path, t.content, 0o644); err != nil {
				return err
			}
			rep.Fixed = []string{fmt.Sprintf("this clone had taken this writer's file rewritten (commit %.12s had line %d, which it lacked): "+
				"now %s's copy, which holds every line the history had", t.lost.commit, t.lost.line, t.ref)}
			out = append(out, rep)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	return out, sess.Reload()
}

// taken is a writer file a copy of the branch holds whole again.
type taken struct {
	content []byte
	ref     string
	lost    *versionInfo // a version the local file lost, for the message
}

// restorable finds, for each writer file (not this clone's own) whose
// local copy lacks lines a version of the history had, a copy's tip that
// holds that file keeping the rules and every such version.
func (c *historyCheck) restorable(refs map[string]string) (map[string]taken, error) {
	out := map[string]taken{}
	for name, lost := range c.lost {
		if name == c.own {
			continue
		}
		for _, ref := range slices.Sorted(maps.Keys(refs)) {
			tip := refs[ref]
			files, err := c.files(tip)
			if err != nil {
				return nil, err
			}
			blob, ok := files[name]
			if !ok {
				continue
			}
			content, ok, err := c.read(blob)
			if err != nil {
				return nil, err
			}
			if !ok || len(eventlog.CheckCopy(name, content)) > 0 {
				continue
			}
			whole := true
			for _, v := range lost {
				b, ok, err := c.read(v.blob)
				if err != nil {
					return nil, err
				}
				whole = whole && (!ok || covers(content, b))
			}
			if whole {
				out[name] = taken{content: content, ref: shortRef(ref), lost: c.versions[lost[0]]}
				break
			}
		}
	}
	return out, nil
}

// files is events/ of commit's tree, writer files only.
func (c *historyCheck) files(commit string) (map[string]string, error) {
	if f, ok := c.trees[commit]; ok {
		return f, nil
	}
	_, all, err := c.h.TreeDir(commit, SyncBranchDir)
	if err != nil {
		return nil, err
	}
	f := map[string]string{}
	for name, blob := range all {
		if isWriterFile(name) {
			f[name] = blob
		}
	}
	if len(c.trees) > 4096 {
		clear(c.trees) // a walk needs a commit's tree for itself and its children
	}
	c.trees[commit] = f
	return f, nil
}

// walk reads every commit reachable from refs and the versions each brings:
// those none of its parents has.
func (c *historyCheck) walk(ctx context.Context, refs map[string]string) error {
	stack := slices.Sorted(maps.Values(refs))
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, seen := c.commits[id]; seen {
			continue
		}
		var parents []string
		if !c.h.Shallow(id) { // checked as far as the history goes
			var err error
			if parents, err = c.h.Parents(id); err != nil {
				return err
			}
		}
		c.commits[id] = parents
		files, err := c.files(id)
		if err != nil {
			return err
		}
		before := make([]map[string]string, len(parents))
		for i, p := range parents {
			if before[i], err = c.files(p); err != nil {
				return err
			}
		}
		for _, name := range slices.Sorted(maps.Keys(files)) {
			v := version{name, files[name]}
			var had []string
			carried := false
			for _, b := range before {
				carried = carried || b[name] == v.blob
				had = append(had, b[name])
			}
			if carried {
				continue
			}
			c.added[id] = append(c.added[id], v)
			if _, ok := c.versions[v]; !ok {
				c.versions[v] = &versionInfo{commit: id, parents: had}
			}
		}
		stack = append(stack, parents...)
	}
	return nil
}

// classify judges every version against the local file of its writer.
func (c *historyCheck) classify() error {
	byName := map[string][]version{}
	for v := range c.versions {
		byName[v.name] = append(byName[v.name], v)
	}
	for name, vs := range byName {
		if err := c.classifyFile(name, vs); err != nil {
			return err
		}
	}
	return nil
}

// classifyFile judges the versions of one writer file. Those whose size
// ends a line of the local file are first compared by id with the local
// file's prefix of that size, hashed in one pass over it; the others are
// read.
func (c *historyCheck) classifyFile(name string, vs []version) error {
	path := filepath.Join(c.dir, name)
	whole, err := eventlog.WholeLength(path)
	if errors.Is(err, fs.ErrNotExist) {
		whole, err = 0, nil
	}
	if err != nil {
		return err
	}
	type candidate struct {
		v    version
		size int64
	}
	var cands []candidate
	var rest []version
	f, err := os.Open(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if f != nil {
		defer f.Close()
	}
	known, err := c.stillKnown(name, f, whole)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if n, ok := known.Lines[v.blob]; ok {
			c.versions[v].state, c.versions[v].lines = covered, n
			continue
		}
		parts, err := c.h.Parts(v.blob)
		if errors.Is(err, git.ErrNotAFile) {
			c.versions[v].state = broken
			continue
		}
		if err != nil {
			return err
		}
		if parts != nil {
			if ok, lines, err := c.holdsParts(name, f, whole, parts); err != nil {
				return err
			} else if ok {
				c.cover(known, v, git.SizeOf(parts), lines)
			} else {
				rest = append(rest, v)
			}
			continue
		}
		size, err := c.h.BlobSize(v.blob)
		if err != nil {
			return err
		}
		var last [1]byte
		if f != nil && size > 0 && size <= whole {
			if _, err := f.ReadAt(last[:], size-1); err != nil {
				return err
			}
		}
		if last[0] == '\n' {
			cands = append(cands, candidate{v, size})
		} else {
			rest = append(rest, v)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].size < cands[j].size })
	if len(cands) > 0 {
		sizes := make([]int64, len(cands))
		for i, k := range cands {
			sizes[i] = k.size
		}
		ids, lines, err := prefixIDs(io.NewSectionReader(f, 0, whole), sizes)
		if err != nil {
			return err
		}
		for i, k := range cands {
			if ids[i] == k.v.blob {
				c.cover(known, k.v, k.size, lines[i])
			} else {
				rest = append(rest, k.v)
			}
		}
	}
	for _, v := range rest {
		content, ok, err := c.read(v.blob)
		if err != nil {
			return err
		}
		if !ok {
			c.versions[v].state = broken
			continue
		}
		local, err := c.localFile(name)
		if err != nil {
			return err
		}
		judge(c.versions[v], name, content, local)
	}
	return nil
}

// cover records that version v, of size bytes and lines lines, is a prefix
// of the local file.
func (c *historyCheck) cover(known *knownPrefixes, v version, size int64, lines int) {
	*c.versions[v] = versionInfo{state: covered, lines: lines, commit: c.versions[v].commit, parents: c.versions[v].parents}
	known.Lines[v.blob] = lines
	if size >= known.Size {
		known.Size, known.Blob = size, v.blob
	}
	c.changed = true
}

// holdsParts says whether the local file f (whole: its whole batches'
// length) holds the parts of a version stored in parts where they stand,
// and counts their lines. A part found at its place is not hashed again:
// the versions of a file in parts share all their parts but the last.
func (c *historyCheck) holdsParts(name string, f *os.File, whole int64, parts []git.Part) (bool, int, error) {
	if f == nil || git.SizeOf(parts) > whole {
		return false, 0, nil
	}
	lines := 0
	var at int64
	for _, p := range parts {
		key := placedPart{name: name, hash: p.Hash, at: at}
		n, ok := c.placed[key]
		if !ok {
			ids, ls, err := prefixIDs(io.NewSectionReader(f, at, p.Size), []int64{p.Size})
			if err != nil {
				return false, 0, err
			}
			if ids[0] != p.Hash {
				return false, 0, nil
			}
			n = ls[0]
			c.placed[key] = n
		}
		lines += n
		at += p.Size
	}
	return true, lines, nil
}

// placedPart is a part of a writer file where it stands in the file.
type placedPart struct {
	name, hash string
	at         int64
}

// stillKnown is what earlier checks proved of the local file name, when its
// prefix they were proved against is unchanged; otherwise nothing.
func (c *historyCheck) stillKnown(name string, f *os.File, whole int64) (*knownPrefixes, error) {
	k := c.known[name]
	if k != nil && f != nil && k.Size <= whole && k.Lines != nil {
		parts, err := c.h.Parts(k.Blob)
		if err != nil {
			parts = nil // gone from git, or not a file: proved again below
		}
		var same bool
		if parts != nil {
			same, _, err = c.holdsParts(name, f, whole, parts)
		} else {
			var ids []string
			ids, _, err = prefixIDs(io.NewSectionReader(f, 0, whole), []int64{k.Size})
			same = err == nil && ids[0] == k.Blob
		}
		if err != nil {
			return nil, err
		}
		if same {
			return k, nil
		}
	}
	if k != nil {
		c.changed = true
	}
	k = &knownPrefixes{Lines: map[string]int{}}
	c.known[name] = k
	return k, nil
}

// prefixIDs hashes r's prefix of each size (ascending) as git would name a
// blob of it, and counts its lines. Each prefix is hashed on its own (git
// names a blob by a hash that starts with its size), which is the cost of
// the check: the hashers share each chunk read, on every core.
func prefixIDs(r io.Reader, sizes []int64) ([]string, []int, error) {
	ids, lines := make([]string, len(sizes)), make([]int, len(sizes))
	hashers := make([]interface {
		io.Writer
		Sum([]byte) []byte
	}, len(sizes))
	for i, n := range sizes {
		hashers[i] = git.NewBlobHasher(n)
	}
	cores := runtime.GOMAXPROCS(0)
	buf := make([]byte, 1<<20)
	var pos int64
	newlines, first := 0, 0
	for first < len(sizes) {
		k, err := io.ReadFull(r, buf)
		chunk := buf[:k]
		var wg sync.WaitGroup
		for w := range min(cores, len(sizes)-first) {
			wg.Add(1)
			fault.Go(func() {
				defer wg.Done()
				for i := first + w; i < len(sizes); i += cores {
					hashers[i].Write(chunk[:min(int64(len(chunk)), sizes[i]-pos)])
				}
			})
		}
		wg.Wait()
		for first < len(sizes) && sizes[first] <= pos+int64(k) {
			lines[first] = newlines + bytes.Count(chunk[:sizes[first]-pos], []byte{'\n'})
			ids[first] = hex.EncodeToString(hashers[first].Sum(nil))
			first++
		}
		newlines += bytes.Count(chunk, []byte{'\n'})
		pos += int64(k)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return ids, lines, nil
}

// read is a version's whole batches; ok is false when it is no file at
// all (a tree of parts as spool never writes one), which, like a version
// that breaks the log's rules, says nothing.
func (c *historyCheck) read(blob string) (content []byte, ok bool, err error) {
	b, err := c.h.ReadBlob(blob)
	if errors.Is(err, git.ErrNotAFile) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return eventlog.Whole(b), true, nil
}

// localFile is the local writer file, whole batches only.
func (c *historyCheck) localFile(name string) ([]byte, error) {
	if b, ok := c.local[name]; ok {
		return b, nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	b = eventlog.Whole(b)
	c.local[name] = b
	return b, nil
}

// judge sets what a version read whole is to the local file.
func judge(info *versionInfo, name string, v, local []byte) {
	info.lines = bytes.Count(v, []byte{'\n'})
	switch {
	case len(eventlog.CheckCopy(name, v)) > 0:
		info.state = broken
	case covers(local, v):
		info.state = covered
	case bytes.HasPrefix(v, local):
		info.state = longer
	default:
		info.state = forked
		info.line, info.here, info.there = eventlog.FirstDifference(local, v)
	}
}

// covers says whether a holds every event of b: b is a prefix of a, or b
// is an older spool's (no prev: the merge driver renumbered such files),
// and each of its events is in a.
func covers(a, b []byte) bool {
	if bytes.HasPrefix(a, b) {
		return true
	}
	if eventlog.Chained(b) {
		return false
	}
	have := ids(a)
	for id := range ids(b) {
		if !have[id] {
			return false
		}
	}
	return true
}

func ids(b []byte) map[string]bool {
	out := map[string]bool{}
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		if e, err := eventlog.Decode(line); err == nil {
			out[e.ID] = true
		}
	}
	return out
}

// rewrote says whether v, forked from the local file, itself rewrote a
// version its commit's parents had: lost or changed a line of a version
// that keeps the log's rules.
func (c *historyCheck) rewrote(v version) (bool, error) {
	info := c.versions[v]
	content, ok, err := c.read(v.blob)
	if err != nil || !ok {
		return false, err
	}
	for _, p := range info.parents {
		if p == "" {
			continue
		}
		before, ok, err := c.read(p)
		if err != nil {
			return false, err
		}
		if ok && len(eventlog.CheckCopy(v.name, before)) == 0 && !covers(content, before) {
			return true, nil
		}
	}
	return false, nil
}

// problems turns the judged versions into the problems of the log: the
// tips', then the history's.
func (c *historyCheck) problems(refs map[string]string) ([]eventlog.Problem, error) {
	var out []eventlog.Problem
	add := func(name string, line int, format string, args ...any) {
		out = append(out, eventlog.Problem{Path: filepath.Join(c.dir, name), Line: line, Message: fmt.Sprintf(format, args...)})
	}
	byTip := map[string][]string{} // refs by the commit they name
	for ref, tip := range refs {
		byTip[tip] = append(byTip[tip], shortRef(ref))
	}
	atTip := map[version]bool{}
	for _, tip := range slices.Sorted(maps.Keys(byTip)) {
		if c.behind(tip, byTip) {
			continue // an older copy (a remote-tracking ref not fetched since): its history is checked
		}
		slices.Sort(byTip[tip])
		where := fmt.Sprintf("%s (commit %.12s)", strings.Join(byTip[tip], ", "), tip)
		files, err := c.files(tip)
		if err != nil {
			return nil, err
		}
		most := c.longest(tip)
		for _, name := range slices.Sorted(maps.Keys(most)) {
			m := most[name]
			blob, ok := files[name]
			if !ok {
				add(name, 0, "%s has no file for this writer, which commit %.12s had (%d lines): it was removed (the next spool sync puts it back)", where, m.commit, m.lines)
				continue
			}
			v := version{name, blob}
			atTip[v] = true
			switch info := c.versions[v]; info.state {
			case forked:
				what := "a rewritten history (this log's is kept, and the writer's next spool sync puts it back), " +
					"or two machines writing as this writer (a copied clone: one of them must take a new writer id, spool doctor --repair there)"
				if name == c.own {
					what = "this clone's own file: if this clone's files were copied to another machine, both write as this writer, " +
						"and spool doctor --repair gives this clone a new writer id; else the history was rewritten, and spool sync puts it back"
				}
				add(name, info.line, "%s holds a copy that lost or changed line %d (this log has %s there, the copy %s): %s",
					where, info.line, info.here, info.there, what)
			case broken:
				if m.lines > 0 { // a fresh clone would take it, and quarantine it: no events
					add(name, 0, "%s holds, in place of this file, a copy that breaks the log's rules (or is not a file as spool writes one), and commit %.12s had %d lines: "+
						"the writer's next spool sync puts the file back", where, m.commit, m.lines)
				}
			case covered, longer:
				if info.lines < m.lines {
					add(name, 0, "%s has %d lines of this file, and commit %.12s had %d: lines were removed (the next spool sync puts them back)",
						where, info.lines, m.commit, m.lines)
				}
			}
		}
	}
	var lost []version
	for v, info := range c.versions {
		if info.state == forked && !atTip[v] {
			lost = append(lost, v)
		}
	}
	sort.Slice(lost, func(i, j int) bool {
		a, b := lost[i], lost[j]
		return a.name < b.name || a.name == b.name && c.versions[a].commit < c.versions[b].commit
	})
	for _, v := range lost {
		rewrite, err := c.rewrote(v)
		if err != nil {
			return nil, err
		}
		if rewrite {
			continue // the version it rewrote is held to the log instead
		}
		c.lost[v.name] = append(c.lost[v.name], v)
		info := c.versions[v]
		add(v.name, info.line, "commit %.12s of the sync branch had %s at line %d, and this log has %s there: the log lost or changed a line that was shared "+
			"(a history rewritten before this clone took it: the writer's next spool sync restores the branch, and spool doctor lists what this clone quarantined)", info.commit, info.there, info.line, info.here)
	}
	return out, nil
}

// behind says whether tip is in the history of another of the tips.
func (c *historyCheck) behind(tip string, tips map[string][]string) bool {
	seen := map[string]bool{}
	var stack []string
	for t := range tips {
		if t != tip {
			stack = append(stack, t)
		}
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == tip {
			return true
		}
		if !seen[id] {
			seen[id] = true
			stack = append(stack, c.commits[id]...)
		}
	}
	return false
}

// most is the longest version of a file a commit's history holds that is
// a prefix of the local file or holds it.
type most struct {
	lines  int
	commit string
}

// longest is, per writer file, the longest version in tip's history that
// the local file holds or is a prefix of (not those that lost a line).
func (c *historyCheck) longest(tip string) map[string]most {
	out := map[string]most{}
	seen := map[string]bool{}
	stack := []string{tip}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, v := range c.added[id] {
			info := c.versions[v]
			if info.state != covered && info.state != longer {
				if _, ok := out[v.name]; !ok && info.state == forked {
					out[v.name] = most{commit: id} // the file was there, even if this version is not the log's
				}
				continue
			}
			if m, ok := out[v.name]; !ok || info.lines > m.lines {
				out[v.name] = most{lines: info.lines, commit: id}
			}
		}
		stack = append(stack, c.commits[id]...)
	}
	return out
}

// shortRef is how a ref is named in messages.
func shortRef(ref string) string {
	for _, p := range []string{"refs/heads/", "refs/remotes/"} {
		if s, ok := strings.CutPrefix(ref, p); ok {
			return s
		}
	}
	return ref
}
