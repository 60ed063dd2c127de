// Package fleet shares one log among machines through the git remote the
// team already has: spool sync commits the writer files to a branch of
// their own (sync.branch) with git plumbing, never touching the work tree,
// the index or HEAD, and brings the other writers' files from it into the
// local log.
package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/internal/durable"
	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/git"
	"github.com/spoolhq/spool/internal/store"
)

// Error codes of spool sync.
var (
	CodeRemoteUnreachable = fault.Register(fault.Environment, "remote_unreachable")
	CodeSyncContended     = fault.Register(fault.Environment, "sync_contended")
	CodeUnknownRemote     = fault.Register(fault.Usage, "unknown_remote")
)

// eventsDir is where the sync branch keeps the writer files.
const eventsDir = "events"

// Result is what one sync did.
type Result struct {
	Remote   string `json:"remote"`
	Branch   string `json:"branch"`
	Mode     string `json:"mode"`
	Received int    `json:"received"` // events brought into the local log
	Sent     int    `json:"sent"`     // events the remote did not have
	Commit   string `json:"commit"`   // the branch's tip after the sync
	Pushes   int    `json:"pushes"`   // attempts, retries included
}

// Options are a sync's settings.
type Options struct {
	Remote string
	Branch string // the sync branch; inline mode uses the current branch
	Mode   string // ModeBranch or ModeInline
	// Attempts bounds the fetch → integrate → push rounds when other
	// machines keep moving the branch.
	Attempts int
}

// OptionsFrom reads sync.* (sync.remote defaults to merge.remote).
func OptionsFrom(st *store.Store, remote string) Options {
	if remote == "" {
		remote = st.Config.String("sync.remote")
	}
	if remote == "" {
		remote = st.Config.String("merge.remote")
	}
	return Options{Remote: remote, Branch: st.Config.String("sync.branch"), Mode: st.Config.String("sync.mode"), Attempts: 10}
}

// TrackingRef is spool's copy of the remote's sync branch as last seen.
func TrackingRef(o Options) string { return "refs/spool/sync/" + o.Remote + "/" + o.Branch }

// Sync shares the log through the remote's sync branch: fetch, bring the
// other writers' events in, commit the local files on the fetched tip,
// push without force; a push refused because the branch moved starts the
// round again after a jittered pause.
func Sync(ctx context.Context, st *store.Store, o Options) (Result, error) {
	res := Result{Remote: o.Remote, Branch: o.Branch, Mode: ModeBranch}
	dir := st.Repo.Root
	if o.Remote == "" || !git.RemoteExists(ctx, dir, o.Remote) {
		return res, unknownRemote(o.Remote)
	}
	if o.Mode == ModeInline {
		return syncInline(ctx, st, o)
	}
	cache := loadCache(st)
	defer cache.save()
	for attempt := range max(o.Attempts, 1) {
		if err := pause(ctx, attempt); err != nil {
			return res, err
		}
		tip, remote, err := fetchLocked(ctx, st, o, eventsDir)
		if err != nil {
			return res, err
		}
		snap, received, err := integrate(ctx, st, remote, cache)
		res.Received += received
		if err != nil {
			return res, err
		}
		cache.see(TrackingRef(o), tip, remoteLines(remote, cache))
		tree, sent, err := writeTree(ctx, dir, snap, remote, cache)
		if err != nil {
			return res, err
		}
		if tip != "" {
			if old, err := git.TreeOf(ctx, dir, tip); err == nil && old == tree {
				res.Commit = tip
				return res, nil // the remote has everything
			}
		}
		res.Pushes++
		commit, err := push(ctx, dir, o, tree, tip, fmt.Sprintf("spool sync: %d events", sent))
		if errors.Is(err, store.ErrRemoteMoved) {
			continue // someone pushed first: fetch and integrate again
		}
		if err != nil {
			return res, err
		}
		res.Sent, res.Commit = sent, commit
		accepted(ctx, st, o, cache, commit, snap)
		return res, nil
	}
	return res, contended(o, res.Pushes)
}

// accepted records a push the remote took: TrackingRef (under the log's
// lock, which guards it) and the events status counts there.
func accepted(ctx context.Context, st *store.Store, o Options, c *cache, commit string, snaps []snapshot) {
	if unlock, err := st.Log.Lock(ctx); err == nil {
		track(ctx, st, o, commit)
		unlock()
	}
	c.see(TrackingRef(o), commit, snapLines(snaps))
}

// contended is the error of a sync whose every push another machine beat.
func contended(o Options, pushes int) error {
	return fault.New(CodeSyncContended, nil, fmt.Sprintf("%s/%s kept moving: %d pushes refused; try again", o.Remote, o.Branch, pushes),
		"remote", o.Remote, "branch", o.Branch, "pushes", pushes)
}

// pause waits before attempt (none before the first): jittered, growing,
// so machines that collided do not collide again.
func pause(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(rand.Int64N(int64(25*time.Millisecond) << min(attempt, 6)))):
		return nil
	}
}

// fetchLocked is fetch under the log's lock.
func fetchLocked(ctx context.Context, st *store.Store, o Options, files string) (string, map[string]git.Blob, error) {
	unlock, err := st.Log.Lock(ctx)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	return fetch(ctx, st, o, files)
}

// fetch reads the remote's tip of o.Branch ("" when it has none), fetches
// it into TrackingRef when spool's copy is behind, and lists the writer
// files in its directory files (eventsDir; inline mode: inlineEventsDir).
// The caller holds the log's lock: it guards TrackingRef.
func fetch(ctx context.Context, st *store.Store, o Options, files string) (string, map[string]git.Blob, error) {
	dir := st.Repo.Root
	tip, err := git.RemoteTip(ctx, dir, o.Remote, o.Branch)
	if err != nil {
		return "", nil, unreachable(o, err)
	}
	if tip == "" {
		return "", map[string]git.Blob{}, nil // no such branch yet
	}
	if have, err := git.RevParse(ctx, dir, TrackingRef(o)); err != nil || have != tip {
		clearRefLock(st, o)
		if err := git.FetchRef(ctx, dir, o.Remote, o.Branch, TrackingRef(o)); err != nil {
			return "", nil, unreachable(o, err)
		}
	}
	remote, err := git.TreeFiles(ctx, dir, tip, files)
	return tip, remote, err
}

// push commits tree on parent (the tip it was built from) and pushes it
// without force; a push refused because the branch moved since is
// store.ErrRemoteMoved.
func push(ctx context.Context, dir string, o Options, tree, parent, msg string) (string, error) {
	commit, err := git.CommitTree(ctx, dir, tree, parent, msg)
	if err != nil {
		return "", err
	}
	if err := git.PushCommit(ctx, dir, o.Remote, commit, o.Branch); err != nil {
		return "", pushFailed(o, err)
	}
	return commit, nil
}

// pushFailed is what a failed push means: the branch moved since it was
// fetched (store.ErrRemoteMoved), or the remote could not be reached.
func pushFailed(o Options, err error) error {
	var perr *git.PushError
	if errors.As(err, &perr) && perr.Rejected {
		return fault.New(CodeSyncContended, store.ErrRemoteMoved, fmt.Sprintf("%s/%s moved while spool pushed; try again", o.Remote, o.Branch),
			"remote", o.Remote, "branch", o.Branch)
	}
	return unreachable(o, err)
}

// track points TrackingRef at commit, the remote's tip after a push.
// The caller holds the log's lock. Best effort: a stale TrackingRef costs
// the next sync a fetch, nothing else.
func track(ctx context.Context, st *store.Store, o Options, commit string) {
	clearRefLock(st, o)
	git.Run(ctx, st.Repo.Root, "update-ref", "-m", "spool sync", TrackingRef(o), commit)
}

// clearRefLock removes the lock file of TrackingRef that a git process
// killed while writing the ref (kill -9 of spool, or a cancelled command)
// left behind; git would refuse every later fetch into the ref. Only spool
// writes the ref, and only under the log's lock, which the caller holds,
// so a lock file there is stale.
func clearRefLock(st *store.Store, o Options) {
	st.Repo.RemoveRefLock(TrackingRef(o))
}

func unknownRemote(remote string) error {
	return fault.New(CodeUnknownRemote, nil, fmt.Sprintf("no git remote %q: set sync.remote (or merge.remote), or pass --remote", remote), "remote", remote)
}

func unreachable(o Options, err error) error {
	var perr *git.PushError
	if errors.As(err, &perr) && perr.Unreachable {
		return fault.New(CodeRemoteUnreachable, err, fmt.Sprintf("cannot reach %s (%s); the local log is unchanged and keeps every event", o.Remote, firstLine(perr.Message)),
			"remote", o.Remote)
	}
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// snapshot is a writer file's content as it is pushed: whole batches only.
type snapshot struct {
	dir     string
	name    string
	content []byte
	hash    string // the blob's id when known (unchanged since the cache)
	lines   int
}

// integrate brings the remote's writer files into the local log under the
// log's lock, then reads every local file as it will be pushed. A file the
// remote has more of is taken from the remote when the local one is a
// prefix of it, and unioned by event id otherwise (as the merge driver
// does); a file that only grows here is left alone.
func integrate(ctx context.Context, st *store.Store, remote map[string]git.Blob, c *cache) ([]snapshot, int, error) {
	unlock, err := st.Log.Lock(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	return integrateLocked(ctx, st, remote, c)
}

// integrateLocked is integrate for a caller holding the log's lock.
func integrateLocked(ctx context.Context, st *store.Store, remote map[string]git.Blob, c *cache) ([]snapshot, int, error) {
	dir := st.Log.Dir()
	received := 0
	for _, name := range slices.Sorted(maps.Keys(remote)) {
		blob := remote[name]
		path := filepath.Join(dir, name)
		if !validFile(name) || c.known(path, blob) {
			continue
		}
		theirs, err := git.ReadBlob(ctx, st.Repo.Root, blob.Hash)
		if err != nil {
			return nil, received, err
		}
		c.lines[blob.Hash] = bytes.Count(theirs, []byte{'\n'})
		theirs = whole(theirs)
		ours, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, received, err
		}
		merged := ours
		switch {
		case bytes.HasPrefix(ours, theirs):
			// nothing new there
		case bytes.HasPrefix(theirs, ours):
			merged = theirs
		default:
			if merged, err = eventlog.Union(ours, theirs); err != nil {
				return nil, received, fmt.Errorf("%s: %w", name, err)
			}
		}
		if !bytes.Equal(merged, ours) {
			// The temp file goes where projections keep theirs: ignored by
			// git, and a killed sync's is swept under the lock we hold.
			tmp := filepath.Join(store.StateDir(st.Repo), ".tmp")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, received, err
			}
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				return nil, received, err
			}
			if err := durable.WriteFileIn(path, merged, 0o644, tmp); err != nil {
				return nil, received, err
			}
			received += bytes.Count(merged, []byte{'\n'}) - bytes.Count(ours, []byte{'\n'})
		}
		if bytes.Equal(merged, theirs) {
			c.remember(path, blob.Hash, c.lines[blob.Hash])
		}
	}
	files, err := st.Log.Files()
	if err != nil {
		return nil, received, err
	}
	snaps := make([]snapshot, 0, len(files))
	for _, path := range files {
		s := snapshot{dir: dir, name: filepath.Base(path)}
		if b, ok := c.unchanged(path); ok {
			s.hash, s.lines = b.Hash, b.Lines
			snaps = append(snaps, s)
			continue
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return nil, received, err
		}
		s.content = whole(content)
		s.lines = bytes.Count(s.content, []byte{'\n'})
		snaps = append(snaps, s)
	}
	return snaps, received, nil
}

// writeTree stores the snapshots as the sync branch's tree and counts the
// events the remote did not have.
func writeTree(ctx context.Context, repo string, snaps []snapshot, remote map[string]git.Blob, c *cache) (string, int, error) {
	sent, err := storeBlobs(ctx, repo, snaps, remote, c)
	if err != nil {
		return "", 0, err
	}
	var files []git.TreeEntry
	for _, s := range snaps {
		files = append(files, git.TreeEntry{Name: s.name, Hash: s.hash})
	}
	// Files the remote has and this clone does not (never integrated: an
	// invalid name) stay on the branch.
	local := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		local[s.name] = true
	}
	for name, r := range remote {
		if !local[name] {
			files = append(files, git.TreeEntry{Name: name, Hash: r.Hash})
		}
	}
	slices.SortFunc(files, func(a, b git.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	events, err := git.WriteTree(ctx, repo, files)
	if err != nil {
		return "", 0, err
	}
	root, err := git.WriteTree(ctx, repo, []git.TreeEntry{{Name: eventsDir, Hash: events, Tree: true}})
	return root, sent, err
}

// storeBlobs stores the snapshots git does not have yet as blobs, and
// counts the events the remote did not have.
func storeBlobs(ctx context.Context, repo string, snaps []snapshot, remote map[string]git.Blob, c *cache) (int, error) {
	sent := 0
	for i := range snaps {
		s := &snaps[i]
		if s.hash == "" {
			h, err := git.WriteBlob(ctx, repo, s.content)
			if err != nil {
				return 0, err
			}
			s.hash = h
			if path := filepath.Join(s.dir, s.name); fileSize(path) == int64(len(s.content)) {
				c.remember(path, h, s.lines)
			}
		}
		if r, ok := remote[s.name]; !ok || r.Hash != s.hash {
			sent += s.lines - c.lines[r.Hash] // the lines the remote's version had, when it was read
		}
	}
	return max(sent, 0), nil
}

func fileSize(path string) int64 {
	_, size, _, _ := identity(path)
	return size
}

// whole cuts a writer file to whole batches: a torn last line, or the
// lines of an append that never finished (More on the last line), are not
// shared; the writer repairs them on its next append.
func whole(b []byte) []byte {
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	for len(b) > 0 {
		i := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
		e, err := eventlog.Decode(b[i:])
		if err != nil || !e.More {
			return b
		}
		b = b[:i]
	}
	return b
}

// validFile is a writer file's name, as the log names them.
func validFile(name string) bool {
	w, ok := strings.CutSuffix(name, eventlog.Ext)
	return ok && eventlog.ValidWriter(w)
}

// cache remembers, per writer file, the blob it was last equal to and the
// file's identity then (inode, size, modification time): a file unchanged
// since is neither read nor hashed again, so a sync with nothing new costs
// a stat per file.
type cache struct {
	path  string
	Files map[string]cached `json:"files"`
	Seen  map[string]seen   `json:"seen,omitempty"` // by tracking ref: what spool status compares with
	lines map[string]int    // events in a blob, by id, from the cache and the blobs read
	dirty bool              // Files changed since it was loaded
}

type cached struct {
	Hash  string `json:"hash"`
	Size  int64  `json:"size"`
	Lines int    `json:"lines"`
	Inode uint64 `json:"inode"`
	MTime int64  `json:"mtime"`
}

func loadCache(st *store.Store) *cache {
	c := &cache{path: filepath.Join(st.Repo.PrivateDir(), "sync-cache.json"), Files: map[string]cached{}, lines: map[string]int{}}
	if b, err := os.ReadFile(c.path); err == nil {
		json.Unmarshal(b, c)
		if c.Files == nil {
			c.Files = map[string]cached{}
		}
	}
	for _, e := range c.Files {
		c.lines[e.Hash] = e.Lines
	}
	return c
}

// save writes the cache when it changed: a sync with nothing new writes
// nothing.
func (c *cache) save() {
	if !c.dirty {
		return
	}
	if b, err := json.Marshal(c); err == nil && durable.WriteFile(c.path, b, 0o644) == nil { // a lost cache costs a read, nothing else
		c.dirty = false
	}
}

func identity(path string) (inode uint64, size, mtime int64, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, 0, false
	}
	return durable.Inode(fi), fi.Size(), fi.ModTime().UnixNano(), true
}

// unchanged is the cached blob of a file that has not changed since.
func (c *cache) unchanged(path string) (cached, bool) {
	e, ok := c.Files[filepath.Base(path)]
	ino, size, mtime, exists := identity(path)
	return e, ok && exists && e.Inode == ino && e.Size == size && e.MTime == mtime
}

// known says whether the local file holds the blob already: it was equal
// to it, and has only grown since (an appended file keeps its inode).
func (c *cache) known(path string, b git.Blob) bool {
	e, ok := c.Files[filepath.Base(path)]
	ino, size, _, exists := identity(path)
	return ok && exists && e.Hash == b.Hash && e.Inode == ino && size >= e.Size
}

// expect records that the writer file of s, about to be appended to, will
// be s's blob: the next claim knows the remote's copy of it without
// reading it (known checks the inode and size, not the time, and an
// append keeps the inode).
func (c *cache) expect(s snapshot) {
	path := filepath.Join(s.dir, s.name)
	if ino, _, _, ok := identity(path); ok {
		c.Files[s.name] = cached{Hash: s.hash, Size: int64(len(s.content)), Lines: s.lines, Inode: ino}
		c.lines[s.hash], c.dirty = s.lines, true
	}
}

// remember records that the file at path is, as it is now, the blob hash
// with lines events.
func (c *cache) remember(path, hash string, lines int) {
	if ino, size, mtime, ok := identity(path); ok {
		e := cached{Hash: hash, Size: size, Lines: lines, Inode: ino, MTime: mtime}
		c.dirty = c.dirty || c.Files[filepath.Base(path)] != e
		c.Files[filepath.Base(path)], c.lines[hash] = e, lines
	}
}
