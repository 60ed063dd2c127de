// Package fleet shares one log among machines through the git remote the
// team already has. The log is committed on a branch of its own
// (sync.branch, "spool-log": events/<writer>.jsonl) with git plumbing, never
// touching the work tree, the index or HEAD; spool sync brings the other
// writers' files from the remote's copy of that branch into the local log,
// commits the local files on the fetched tip and pushes without force.
// Without a remote, sync commits the local branch alone.
package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	CodeSyncBranchForeign = fault.Register(fault.Environment, "sync_branch_not_spool")
)

// eventsDir is where the sync branch keeps the writer files.
const eventsDir = store.SyncBranchDir

// Result is what one sync did.
type Result struct {
	Remote   string `json:"remote"` // "" when there is none: the local branch alone
	Branch   string `json:"branch"`
	Received int    `json:"received"` // events brought into the local log
	Sent     int    `json:"sent"`     // events the remote (or the local branch) did not have
	Commit   string `json:"commit"`   // the branch's tip after the sync
	Pushes   int    `json:"pushes"`   // attempts, retries included
}

// String says what the sync did, in a line.
func (r Result) String() string {
	if r.Remote == "" {
		return fmt.Sprintf("committed %d events on the local branch %s (no remote to share it with)", r.Sent, r.Branch)
	}
	return fmt.Sprintf("synced with %s/%s: received %d events, sent %d", r.Remote, r.Branch, r.Received, r.Sent)
}

// Options are a sync's settings.
type Options struct {
	Remote string // "": none configured, the sync commits the local branch only
	Branch string // the sync branch
	// Attempts bounds the fetch → integrate → push rounds when other
	// machines keep moving the branch.
	Attempts int
}

// OptionsFrom reads sync.*: the remote is remote when given, else
// sync.remote, else merge.remote when git has such a remote. Only a remote
// someone named (remote or sync.remote) must exist.
func OptionsFrom(ctx context.Context, st *store.Store, remote string) (Options, error) {
	set := SettingsFrom(st.Config)
	o := Options{Remote: remote, Branch: set.Branch, Attempts: 10}
	if o.Remote == "" {
		o.Remote = set.Remote
	}
	if o.Remote != "" {
		if !git.RemoteExists(ctx, st.Repo.Root, o.Remote) {
			return o, unknownRemote(o.Remote)
		}
		return o, nil
	}
	// The default remote counts when the repository's own config has it:
	// read in process, so that a clone without one (where every claim
	// asks) pays no git process for the question.
	if r := set.MergeRemote; r != "" && git.RemoteInConfig(st.Repo.Root, r) {
		o.Remote = r
	}
	return o, nil
}

// TrackingRef is spool's copy of the remote's sync branch as last seen.
func TrackingRef(o Options) string { return "refs/spool/sync/" + o.Remote + "/" + o.Branch }

// LocalRef is the local sync branch: the log as this clone last committed it.
func LocalRef(o Options) string { return "refs/heads/" + o.Branch }

// Sync shares the log through the remote's sync branch: fetch, bring the
// other writers' events in, commit the local files on the fetched tip,
// push without force; a push refused because the branch moved starts the
// round again after a jittered pause. The local branch follows what was
// pushed. Without a remote it commits the local branch alone. The network
// is used without the log's lock held; the lock is held only to bring
// events in and to read the files to commit.
func Sync(ctx context.Context, st *store.Store, o Options) (Result, error) {
	res := Result{Remote: o.Remote, Branch: o.Branch}
	cache := loadCache(st)
	defer cache.save()
	if o.Remote == "" {
		return commitLocal(ctx, st, o, cache)
	}
	dir := st.Repo.Root
	var written int64 // by any attempt: a later one finds the blobs stored
	for attempt := range max(o.Attempts, 1) {
		if err := pause(ctx, attempt); err != nil {
			return res, err
		}
		tip, remote, err := fetch(ctx, st, o)
		if err != nil {
			return res, err
		}
		snaps, received, err := integrate(ctx, st, o, remote, cache)
		res.Received += received
		if err != nil {
			return res, err
		}
		cache.see(TrackingRef(o), tip, remoteLines(remote, cache))
		tree, sent, err := writeTree(ctx, dir, snaps, remote, cache)
		if err != nil {
			return res, err
		}
		parents, err := parentsOf(ctx, st, o, tip)
		if err != nil {
			return res, err
		}
		if tip != "" && len(parents) == 1 {
			if old, err := git.TreeOf(ctx, dir, tip); err == nil && old == tree {
				res.Commit = tip
				return res, follow(ctx, st, o, tip) // the remote has everything
			}
		}
		res.Pushes++
		written = max(written, writtenBy(snaps))
		commit, err := push(ctx, dir, o, tree, parents, written, fmt.Sprintf("spool sync: %d events", sent))
		if errors.Is(err, store.ErrRemoteMoved) {
			continue // someone pushed first: fetch and integrate again
		}
		if err != nil {
			return res, err
		}
		res.Sent, res.Commit = sent, commit
		// The remote took it: record that even when the sync is being
		// cancelled (a watch stopping), or the local branch lags behind.
		return res, accepted(context.WithoutCancel(ctx), st, o, cache, commit, parents, snaps)
	}
	return res, contended(o, res.Pushes)
}

// commitLocal commits the local files on the local sync branch: a clone
// with no remote keeps its log committed all the same.
func commitLocal(ctx context.Context, st *store.Store, o Options, c *cache) (Result, error) {
	res := Result{Branch: o.Branch}
	dir := st.Repo.Root
	tip, _ := git.ReadRef(ctx, st.Repo, LocalRef(o))
	files := map[string]git.Blob{}
	if tip != "" {
		var err error
		if files, err = git.TreeFiles(ctx, dir, tip, eventsDir); err != nil {
			return res, err
		}
	}
	snaps, received, err := integrate(ctx, st, o, files, c)
	res.Received = received
	if err != nil {
		return res, err
	}
	tree, sent, err := writeTree(ctx, dir, snaps, files, c)
	if err != nil {
		return res, err
	}
	res.Commit = tip
	if tip != "" {
		if old, err := git.TreeOf(ctx, dir, tip); err == nil && old == tree {
			return res, nil
		}
	}
	commit, err := git.CommitTree(ctx, dir, tree, tip, fmt.Sprintf("spool: %d events", sent))
	if err != nil {
		return res, err
	}
	if err := withTrackingRef(ctx, st, o, func() error { return git.UpdateRef(ctx, dir, LocalRef(o), commit, tip, "spool sync") }); err != nil {
		return res, err
	}
	res.Sent, res.Commit = sent, commit
	return res, nil
}

// accepted records a push the remote took: TrackingRef and the local
// branch (under the log's lock, which guards them) and the events status
// counts there.
func accepted(ctx context.Context, st *store.Store, o Options, c *cache, commit string, parents []string, snaps []snapshot) error {
	c.see(TrackingRef(o), commit, snapLines(snaps))
	unlock, err := st.Log.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return track(ctx, st, o, commit, parents, snaps)
}

// follow moves the local sync branch to commit, the remote's tip, which
// holds everything the local branch did: unless the branch was moved by
// someone else to a commit that is not commit's ancestor, which is left as
// it is with a warning (its files are in the log already). The branch is
// read again under the lock on it: another spool of this clone (a watch
// syncing) may have moved it meanwhile, to commit or past it, which is
// left as it is.
func follow(ctx context.Context, st *store.Store, o Options, commit string) error {
	dir := st.Repo.Root
	if old, _ := git.ReadRef(ctx, st.Repo, LocalRef(o)); old == commit {
		return nil
	}
	return withTrackingRef(ctx, st, o, func() error {
		old, _ := git.ReadRef(ctx, st.Repo, LocalRef(o))
		if old == commit {
			return nil
		}
		if old != "" {
			behind, err := git.IsAncestor(ctx, dir, old, commit)
			if err != nil {
				return err
			}
			if !behind {
				if ahead, err := git.IsAncestor(ctx, dir, commit, old); err != nil || ahead {
					return err // another spool took it further
				}
				return fault.New(CodeSyncBranchForeign, nil, fmt.Sprintf("the local branch %s (%.12s) is not an ancestor of %s/%s (%.12s): spool keeps the log there and would not move it; rename your branch, or set sync.branch",
					o.Branch, old, o.Remote, o.Branch, commit), "branch", o.Branch)
			}
		}
		return git.UpdateRef(ctx, dir, LocalRef(o), commit, old, "spool sync")
	})
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

// fetch reads the remote's tip of o.Branch ("" when it has none), fetches
// it into TrackingRef when spool's copy is behind, and lists its writer
// files.
func fetch(ctx context.Context, st *store.Store, o Options) (string, map[string]git.Blob, error) {
	tip, err := git.RemoteTip(ctx, st.Repo.Root, o.Remote, o.Branch)
	if err != nil {
		return "", nil, unreachable(o, err)
	}
	return fetchTip(ctx, st, o, tip)
}

// fetchTip is fetch of the remote's tip, already read.
func fetchTip(ctx context.Context, st *store.Store, o Options, tip string) (string, map[string]git.Blob, error) {
	dir := st.Repo.Root
	if tip == "" {
		return "", map[string]git.Blob{}, nil // no such branch yet
	}
	if have, err := git.RevParse(ctx, dir, TrackingRef(o)); err != nil || have != tip {
		// The objects first, into no ref: the network is used without the
		// ref's lock held, so a slow remote holds up no one else's claim.
		if err := git.FetchRef(ctx, dir, o.Remote, o.Branch, ""); err != nil {
			return "", nil, unreachable(o, err)
		}
		err := withTrackingRef(ctx, st, o, func() error {
			_, err := git.Run(ctx, dir, "update-ref", "-m", "spool fetch", TrackingRef(o), tip)
			return err
		})
		if err != nil {
			return "", nil, err
		}
	}
	remote, err := git.TreeFiles(ctx, dir, tip, eventsDir)
	return tip, remote, err
}

// withTrackingRef runs fn, which writes TrackingRef or the local sync
// branch, holding the clone's lock on them (.git/spool/sync-ref.lock):
// spool writes them only under it, so a git lock file on either found then
// was left by a git killed while writing it (kill -9 of spool), and git
// would refuse every later update of the ref: it is removed.
func withTrackingRef(ctx context.Context, st *store.Store, o Options, fn func() error) error {
	timeout := SettingsFrom(st.Config).LockTimeout
	unlock, ok, err := st.Mutex(ctx, "sync-ref", timeout)
	if errors.Is(err, context.DeadlineExceeded) {
		// A claim's deadline (Claims.network): another spool's fetch holds it.
		return fmt.Errorf("%w: %s held by another spool command past this claim's deadline", eventlog.ErrLockTimeout, st.MutexPath("sync-ref"))
	}
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s held for more than %s", eventlog.ErrLockTimeout, st.MutexPath("sync-ref"), timeout)
	}
	defer unlock()
	st.Repo.RemoveRefLock(TrackingRef(o))
	st.Repo.RemoveRefLock(LocalRef(o))
	return fn()
}

// parentsOf is what a sync's commit goes on: the remote's tip, and the
// local branch too when the remote's history lacks it (commits made before
// the clone had a remote, or that a push never took), so that the local
// branch can follow the remote's without losing a commit.
func parentsOf(ctx context.Context, st *store.Store, o Options, tip string) ([]string, error) {
	var parents []string
	if tip != "" {
		parents = append(parents, tip)
	}
	local, ok := git.ReadRef(ctx, st.Repo, LocalRef(o))
	if !ok || local == tip {
		return parents, nil
	}
	if tip != "" {
		if in, err := git.IsAncestor(ctx, st.Repo.Root, local, tip); err != nil || in {
			return parents, err
		}
	}
	return append(parents, local), nil
}

// push commits tree on parents (the tip it was built from first) and
// pushes it without force; a push refused because the branch moved since
// is store.ErrRemoteMoved. The refspecs of also land with it or not at
// all. A push of more than two parts' worth of bytes
// written (a log's first sync, or one far behind) has git look for no
// deltas: parts of one file have none worth it, and at a million events
// the search took 30 s of a 40 s push; a sync's usual new last part is
// sent as a delta of the one the remote has.
func push(ctx context.Context, dir string, o Options, tree string, parents []string, written int64, msg string, also ...string) (string, error) {
	commit, err := git.CommitTreeOn(ctx, dir, tree, msg, parents...)
	if err != nil {
		return "", err
	}
	if err := git.PushCommit(ctx, dir, o.Remote, commit, o.Branch, written <= 2*git.PartSize, also...); err != nil {
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

// track points TrackingRef and the local branch at commit, the remote's
// tip after a push built on parents, and records that the log holds its
// files. The caller holds the log's lock. When the local branch was one of
// the parents (the common case) both refs move in one git transaction;
// otherwise the local branch follows as follow says.
func track(ctx context.Context, st *store.Store, o Options, commit string, parents []string, snaps []snapshot) error {
	blobs := make(map[string]string, len(snaps))
	for _, s := range snaps {
		blobs[s.name] = s.hash
	}
	st.MarkReceived(TrackingRef(o), commit, blobs)
	updates := []git.RefUpdate{{Ref: TrackingRef(o), New: commit}}
	old, ok := git.ReadRef(ctx, st.Repo, LocalRef(o))
	done := false
	err := withTrackingRef(ctx, st, o, func() error {
		if !ok || slices.Contains(parents, old) {
			updates = append(updates, git.RefUpdate{Ref: LocalRef(o), New: commit, Old: cmp.Or(old, git.ZeroID)})
			if done = git.UpdateRefs(ctx, st.Repo.Root, "spool sync", updates) == nil; done {
				return nil
			}
		}
		// A stale TrackingRef costs the next sync a fetch, nothing else.
		git.UpdateRefs(ctx, st.Repo.Root, "spool sync", updates[:1])
		return nil
	})
	if err != nil || done {
		return err
	}
	return follow(ctx, st, o, commit)
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
	dir  string
	name string
	file bool // stored from the file's whole batches (storeFile)
	// Or, for a claim's own file, the file's first base bytes and then extra,
	// the claim's lines, as the file will be once they are written.
	base    int64
	extra   []byte
	hash    string // the blob's id when known (unchanged since the cache)
	parts   bool   // hash is a tree of parts (git.PartSize)
	written int64  // the bytes this sync stored of it
	lines   int
	kept    bool // the remote's copy, kept rather than the local file (keepRemote)
	forked  bool // and neither is a prefix of the other
}

// integrate brings the remote's writer files into the local log under the
// log's lock (eventlog's Receive: checked, appended or unioned, a bad one
// quarantined), then reads every local file as it will be pushed, or, where
// the remote's copy must stay, names that copy instead (see keepRemote).
func integrate(ctx context.Context, st *store.Store, o Options, remote map[string]git.Blob, c *cache) ([]snapshot, int, error) {
	sess, err := st.Log.Begin(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer sess.Close()
	return integrateIn(ctx, st, sess, o, remote, c)
}

// integrateIn is integrate for a caller holding the session.
func integrateIn(ctx context.Context, st *store.Store, sess *eventlog.Session, o Options, remote map[string]git.Blob, c *cache) ([]snapshot, int, error) {
	dir := st.Log.Dir()
	received := 0
	keep := map[string]eventlog.Received{} // the remote's copy stays on the branch
	var had map[string]git.Blob            // the local branch's files, read once if needed
	for _, name := range slices.Sorted(maps.Keys(remote)) {
		blob := remote[name]
		path := filepath.Join(dir, name)
		if !validFile(name) || c.known(path, blob) {
			continue
		}
		// Streamed: a copy that extends the local file adds only its new
		// lines, never read whole (eventlog's ReceiveFrom).
		var was *store.Version
		if e, ok := c.grownFrom(path); ok && blob.Parts {
			if lines, ok := c.lines[e.Hash]; ok {
				was = &store.Version{Blob: e.Hash, Size: e.Size, Lines: lines}
			}
		}
		res, lc, unreadable, err := store.ReceiveCopy(ctx, sess, st.Repo.Root, name, path, blob.Hash, was, o.Remote+"/"+o.Branch)
		if err != nil {
			return nil, received, err
		}
		c.lines[blob.Hash] = lc.Lines
		received += res.Added
		if res.Same {
			c.remember(path, blob.Hash, lc.Lines)
		} else if res.Held {
			c.rememberPrefix(path, blob.Hash, int64(lc.Bytes), lc.Lines)
		}
		if res.Quarantined != "" {
			var theirs []byte // an unreadable copy holds nothing
			if !unreadable {
				if theirs, err = git.ReadBlob(ctx, st.Repo.Root, blob.Hash); err != nil {
					return nil, received, err
				}
			}
			own := name == sess.Writer()+eventlog.Ext
			if had == nil && res.Forked && own {
				// What this clone last pushed, or took whole from the remote:
				// the branch as it last knew it good.
				had = map[string]git.Blob{}
				if local, ok := git.ReadRef(ctx, st.Repo, LocalRef(o)); ok {
					if had, err = git.TreeFiles(ctx, st.Repo.Root, local, eventsDir); err != nil {
						return nil, received, err
					}
				}
			}
			ok, err := keepRemote(ctx, st, res, own, path, theirs, had[name])
			if err != nil {
				return nil, received, err
			}
			if ok {
				keep[name] = res
			}
		}
	}
	files, err := st.Log.Files()
	if err != nil {
		return nil, received, err
	}
	snaps := make([]snapshot, 0, len(files))
	for _, path := range files {
		s := snapshot{dir: dir, name: filepath.Base(path)}
		if k, ok := keep[s.name]; ok {
			s.hash, s.parts, s.lines, s.kept, s.forked = remote[s.name].Hash, remote[s.name].Parts, c.lines[remote[s.name].Hash], true, k.Forked
			snaps = append(snaps, s)
			continue
		}
		if b, ok := c.unchanged(path); ok {
			s.hash, s.lines = b.Hash, b.Lines
			if s.parts, err = git.IsParts(ctx, st.Repo.Root, b.Hash); err == nil {
				snaps = append(snaps, s)
				continue
			}
			s.hash, s.lines = "", 0 // not in git (a cache from before a reclone): stored again
		}
		s.file = true // stored by storeBlobs, streamed from the file (a claim replaces its own)
		snaps = append(snaps, s)
	}
	return snaps, received, nil
}

// storeFile stores the whole batches of the writer file at path as the
// branch keeps a file (git.WriteFileFrom), streamed from the file (a writer
// file of a million events is 290 MB: read whole, and held again by the
// blob's writer, it took 590 MiB), and returns it and the bytes written:
// the parts of the version the file last was are kept, but the last.
func storeFile(ctx context.Context, repo, path string, c *cache) (git.Blob, int64, error) {
	size, err := eventlog.WholeLength(path)
	if err != nil {
		return git.Blob{}, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return git.Blob{}, 0, err
	}
	defer f.Close()
	b, written, err := storeContent(ctx, repo, path, f, size, c)
	if err != nil {
		return git.Blob{}, 0, err
	}
	if fileSize(path) == size {
		c.remember(path, b.Hash, c.lines[b.Hash])
	}
	return b, written, nil
}

// storeContent stores the size bytes of r, the content of the writer file
// at path (as it is, or will be once a claim's lines are written), and
// counts its lines. The version the cache says the file was, and has only
// grown from, is r's prefix: its parts are kept but the last, and its
// lines are not counted again.
func storeContent(ctx context.Context, repo, path string, r io.ReaderAt, size int64, c *cache) (git.Blob, int64, error) {
	var reuse []git.Part
	var from int64 // r's lines are those of its prefix of from, and the rest's
	lines := 0
	if e, ok := c.grownFrom(path); ok && e.Size <= size {
		if n, ok := c.lines[e.Hash]; ok {
			from, lines = e.Size, n
		}
		if parts, err := git.FileParts(ctx, repo, e.Hash); err == nil && git.SizeOf(parts) == e.Size {
			reuse = parts
		}
	}
	b, written, err := git.WriteFileFrom(ctx, repo, r, size, reuse)
	if err != nil {
		return b, 0, err
	}
	lc := &eventlog.LineCounter{W: io.Discard}
	if _, err := io.Copy(lc, io.NewSectionReader(r, from, size-from)); err != nil {
		return b, 0, err
	}
	c.lines[b.Hash] = lines + lc.Lines
	return b, written, nil
}

// storeClaimed stores s, a claim's own file with its lines (base, extra),
// read from the file as far as the stored parts do not have it already.
func storeClaimed(ctx context.Context, repo string, s *snapshot, c *cache) error {
	path := filepath.Join(s.dir, s.name)
	var f io.ReaderAt = bytes.NewReader(nil)
	if s.base > 0 {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		f = file
	}
	size := s.base + int64(len(s.extra))
	b, written, err := storeContent(ctx, repo, path, appended{f, s.base, s.extra}, size, c)
	if err != nil {
		return err
	}
	s.hash, s.parts, s.written, s.lines = b.Hash, b.Parts, written, c.lines[b.Hash]
	if fileSize(path) == size {
		c.remember(path, b.Hash, s.lines)
	}
	return nil
}

// appended reads as r's first base bytes followed by extra.
type appended struct {
	r     io.ReaderAt
	base  int64
	extra []byte
}

func (a appended) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < a.base {
		k := int(min(int64(len(p)), a.base-off))
		m, err := a.r.ReadAt(p[:k], off)
		n += m
		if m < k { // the file is shorter than it was
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		off, p = off+int64(m), p[m:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if i := off - a.base; i < int64(len(a.extra)) {
		m := copy(p, a.extra[i:])
		n, p = n+m, p[m:]
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// writtenBy is the bytes stored for snaps.
func writtenBy(snaps []snapshot) (n int64) {
	for _, s := range snaps {
		n += s.written
	}
	return n
}

// keepRemote decides, for a copy of a writer file that Receive refused,
// whether the branch keeps that copy rather than the local file: a writer
// file on the branch only grows, so a sync never pushes a file that lacks
// a line the remote's copy has, unless the file is this clone's own and
// the copy lost or changed a line the branch had before (had: the file as
// this clone last pushed it, or took it whole, on its local branch) that
// the local file still has: then the sync puts the history back. A writer
// is the one authority on its file: another clone that holds the original
// keeps it in its log, and verify there says the branch lost a line, but
// it does not push it back, or a clone that took the rewrite first would
// push that back in turn. And two machines writing as one writer (a copied
// clone) do not take turns overwriting each other: the copy that reached
// the remote first stays, and the other's own events wait in its local
// file (spool doctor --repair gives that clone a new writer id). A copy of
// this clone's own file that breaks the log's rules is no machine's (a
// line appended by hand, a tree of parts spool never writes): the sync
// puts the file back, or one bad line pushed by anyone would stop this
// clone's events, and its claims, from reaching the remote.
func keepRemote(ctx context.Context, st *store.Store, res eventlog.Received, own bool, path string, theirs []byte, had git.Blob) (bool, error) {
	if own && res.Broken {
		return false, nil
	}
	if !res.Forked || !own || had.Hash == "" {
		return true, nil // the local file is a prefix of the copy, or not this clone's to restore, or nothing says the copy lost a line
	}
	before, err := git.ReadBlob(ctx, st.Repo.Root, had.Hash)
	if err != nil {
		return true, err
	}
	before = eventlog.Whole(before)
	if bytes.HasPrefix(eventlog.Whole(theirs), before) {
		return true, nil // the remote lost nothing: another machine appended as this writer
	}
	local, err := os.ReadFile(path)
	if err != nil {
		return true, err
	}
	return !bytes.HasPrefix(local, before), nil
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
		files = append(files, git.TreeEntry{Name: s.name, Hash: s.hash, Parts: s.parts})
	}
	// Files the remote has and this clone does not (never integrated: an
	// invalid name) stay on the branch.
	local := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		local[s.name] = true
	}
	for name, r := range remote {
		if !local[name] {
			files = append(files, git.TreeEntry{Name: name, Hash: r.Hash, Parts: r.Parts})
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
		if s.hash == "" && s.file {
			b, written, err := storeFile(ctx, repo, filepath.Join(s.dir, s.name), c)
			if err != nil {
				return 0, err
			}
			s.hash, s.parts, s.lines, s.written = b.Hash, b.Parts, c.lines[b.Hash], written
		} else if s.hash == "" {
			if err := storeClaimed(ctx, repo, s, c); err != nil {
				return 0, err
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
	Seen  map[string]seen   `json:"seen,omitempty"`  // by tracking ref: what spool status compares with
	Parts map[string]int    `json:"parts,omitempty"` // lines of the parts of files in parts, by blob id
	lines map[string]int    // events in a blob, by id, from the cache and the blobs read
	dirty bool              // Files, Seen or Parts changed since it was loaded
}

type cached struct {
	Hash  string `json:"hash"`
	Size  int64  `json:"size"`
	Lines int    `json:"lines"`
	Inode uint64 `json:"inode"`
	MTime int64  `json:"mtime"`
	Tail  string `json:"tail,omitempty"` // store.TailSum of the file before Size
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
	// The blobs the log was brought in from: their lines, and a file
	// taken whole from one is that blob for as long as it is unchanged.
	for name, f := range st.ReceivedFiles() {
		c.lines[f.Blob] = f.Lines
		if _, ok := c.unchanged(filepath.Join(store.EventsDir(st.Repo), name)); !ok && f.Size > 0 {
			c.Files[name] = cached{Hash: f.Blob, Size: f.Size, Lines: f.Lines, Inode: f.Inode, MTime: f.MTime, Tail: f.Tail}
		}
	}
	return c
}

// save writes the cache when it changed: a sync with nothing new writes
// nothing.
func (c *cache) save() {
	if !c.dirty {
		return
	}
	if b, err := json.Marshal(c); err == nil && durable.WriteCache(c.path, b) == nil { // a lost cache costs a read, nothing else
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
	e, ok := c.grownFrom(path)
	return ok && e.Hash == b.Hash
}

// grownFrom is the cached blob the file at path was equal to, when it has
// only grown since: its prefix of the blob's size is still the blob (the
// same inode, and the bytes before that size as they were: a rewrite by
// rename may give the file its old inode back).
func (c *cache) grownFrom(path string) (cached, bool) {
	e, ok := c.Files[filepath.Base(path)]
	return e, ok && store.GrownFrom(path, e.Inode, e.Size, e.Tail)
}

// expect records that the writer file of s, about to be appended to, will
// be s's blob: the next claim knows the remote's copy of it without
// reading it (known checks the inode and size, not the time, and an
// append keeps the inode).
func (c *cache) expect(s snapshot) {
	path := filepath.Join(s.dir, s.name)
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if ino, _, _, ok := identity(path); ok {
		size := s.base + int64(len(s.extra))
		tail := store.TailSum(appended{f, s.base, s.extra}, size)
		c.Files[s.name] = cached{Hash: s.hash, Size: size, Lines: s.lines, Inode: ino, Tail: tail}
		c.lines[s.hash], c.dirty = s.lines, true
	}
}

// rememberPrefix records that the file at path begins with the blob hash,
// of size bytes and lines events: known, and grownFrom, know it, unchanged
// does not.
func (c *cache) rememberPrefix(path, hash string, size int64, lines int) {
	if e, ok := c.grownFrom(path); ok && e.Size >= size {
		return // it knows more of the file already (a retried sync's own copy)
	}
	if ino, _, _, ok := identity(path); ok {
		e := cached{Hash: hash, Size: size, Lines: lines, Inode: ino, Tail: store.FileTailSum(path, size)}
		c.Files[filepath.Base(path)], c.lines[hash], c.dirty = e, lines, true
	}
}

// remember records that the file at path is, as it is now, the blob hash
// with lines events.
func (c *cache) remember(path, hash string, lines int) {
	if ino, size, mtime, ok := identity(path); ok {
		e := cached{Hash: hash, Size: size, Lines: lines, Inode: ino, MTime: mtime, Tail: store.FileTailSum(path, size)}
		c.dirty = c.dirty || c.Files[filepath.Base(path)] != e
		c.Files[filepath.Base(path)], c.lines[hash] = e, lines
	}
}
